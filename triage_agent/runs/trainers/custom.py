"""Training loops no trainer wrote (a researcher's own script): the names such loops print, as seen in the real
corpus (issue 22's custom GRPO runs) and NeMo-RL-like consoles. Consulted after every trainer's profile."""

from triage_agent.runs.trainers.profile import Profile

PROFILE = Profile(
    name="custom",
    title="a custom training loop",
    source=None,
    names={
        "reward": "reward", "mean_reward": "reward", "reward_mean": "reward", "avg_reward": "reward",
        "average_reward": "reward", "rewards": "reward",
        "reward_std": "reward_std", "group_reward_std": "reward_std",
        "entropy": "entropy", "kl": "kl", "kl_divergence": "kl", "kl_div": "kl", "kl_penalty": "kl",
        "grad_norm": "grad_norm", "loss": "loss", "policy_loss": "loss",
        "gen_len": "length", "completion_len": "length", "mean_completion_length": "length",
        "mean_generation_length": "length", "response_len": "length", "response_length": "length",
        "truncation_rate": "clipped_share",
        "learning_rate": "lr", "lr": "lr",
    },
    # a loop's own plan: "233 total steps", "total steps: 233", "Total training steps = 233"
    plan_lines=(r"\b(?P<total>\d[\d,]*) total steps\b", r"\b(?P<total>\d[\d,]*) total training steps\b",
                r"[Tt]otal steps\s*[:=]\s*(?P<total>\d[\d,]*)",
                r"[Tt]otal training steps\s*[:=]\s*(?P<total>\d[\d,]*)"),
    # its own words that training ended ("Training completed", "fine-tuning is finished"), one line a spelling: the
    # literal a scan searches for is then "raining complete", not "complete" (in much prose) nor "Training" (in
    # every redraw of verl's "Training Progress" bar)
    done_lines=tuple(rf"{what} {is_}{word}\b" for what in ("[Tt]raining", "[Ff]ine-tuning") for is_ in ("", "is ")
                     for word in ("completed?", "finished")),
)

# The gold signal of a solver-calibration run's eval_history: a pass rate a check other than the solver gave, by
# meaning rather than one spelling. The CalibForge seed's symptom is "reward up, human spot-check pass rate flat"
# (shared/seeds/003_da881eecb61719ed.txt, intro and 3.4); run-format.md lists human_pass_rate beside
# gold_pass_rate. First present wins: an exact check before a human one, a rate before a score.
GOLD_NAMES = ("gold_pass_rate", "human_pass_rate", "spot_check_pass_rate", "manual_pass_rate", "human_eval")
