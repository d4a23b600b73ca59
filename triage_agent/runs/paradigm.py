"""What kind of training a run is (post-training-findings.md, "Paradigm"), told from raw metric names,
config keys and values, and the trainer that wrote its logs, before any metric name is mapped onto a
canonical series: a preference run's `rewards/chosen|rejected|margins|accuracies` must never become
reward components.

Evidence is weighed in this order: an explicit config value (ms-swift `rlhf_type`, LLaMA-Factory
`stage`, a trainer or config class named in a config), then metric names, then config keys that only
one kind of trainer has, then the trainer's name. The first that decides wins, and what decided is kept
as evidence for the report.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from triage_agent.runs.model import ConfigValue

# explicit config values: ms-swift `rlhf_type` (swift/llm/argument/rlhf_args.py), LLaMA-Factory `stage`
# (hparams/finetuning_args.py), verl `algorithm.adv_estimator`
_VALUE_KEYS = {"rlhf_type", "stage", "adv_estimator", "trainer_type", "algorithm"}
_BY_VALUE: dict[str, str] = {
    **dict.fromkeys(("dpo", "ipo", "simpo", "orpo", "kto", "cpo", "bco", "rpo", "apo", "sppo", "nca"), "preference"),
    **dict.fromkeys(("grpo", "ppo", "rloo", "dapo", "gspo", "reinforce", "reinforce_plus_plus", "remax", "gae",
                     "opo", "gkd"), "policy_gradient"),
    **dict.fromkeys(("sft", "pt", "pretrain"), "sft"),
    **dict.fromkeys(("rm", "reward", "reward_model"), "reward_model"),
}
# a trainer or config class named anywhere in a config value (`_target_`, W&B's config, a saved args dump)
_CLASS = re.compile(r"\b(?P<name>(?:Online)?(?:DPO|IPO|ORPO|KTO|CPO|BCO|SimPO|Nash)(?:Trainer|Config)|"
                    r"(?:GRPO|PPO|RLOO|ReMax)(?:Trainer|Config)|SFT(?:Trainer|Config)|Reward(?:Trainer|Config))\b")

# metric names (after a `train/` prefix is stripped) that only one paradigm logs
_PREFERENCE_METRICS = ("rewards/chosen", "rewards/rejected", "rewards/margins", "rewards/accuracies",
                       "logps/chosen", "logps/rejected", "log_odds_ratio", "log_odds_chosen")
_POLICY_METRICS = ("reward", "reward_std", "frac_reward_zero_std", "critic/score/mean", "critic/rewards/mean",
                   "actor/pg_loss", "actor/ppo_kl", "completions/mean_length", "completion_length",
                   "objective/scores", "response_length/mean", "act_loss", "policy_loss", "env/reward_mean",
                   "mean_gen_tokens_per_sample", "baseline_reward/pct_0")
_SFT_METRICS = ("mean_token_accuracy", "num_tokens")  # TRL SFTTrainer, and no reward or preference metric
_LOSS_ONLY = {"loss", "grad_norm", "learning_rate", "lr", "epoch", "step", "num_tokens", "mean_token_accuracy",
              "entropy", "total_flos", "num_input_tokens_seen"}
# config keys only one kind of trainer has
_PREFERENCE_KEYS = ("pref_beta", "pref_loss", "pref_ftx", "rpo_alpha", "simpo_gamma", "kto_chosen_weight",
                    "desirable_weight", "undesirable_weight")
_POLICY_KEYS = ("num_generations", "reward_funcs", "reward_weights", "rollout.n", "ppo_mini_batch_size",
                "kl_ctl", "init_kl_coef", "use_kl_loss")
_SFT_KEYS = ("dataset_text_field", "packing", "completion_only_loss", "assistant_only_loss")
# run-format.md's config keys of the two research layouts (a config alone, before any round or table is written)
_SELECTOR_KEYS = ("boundary_rollouts", "rollouts_per_question", "easy_threshold", "unsolvable_threshold",
                  "boundary_band")
_SOLVER_KEYS = ("calibrate_every_steps", "candidate_score_threshold")
# trainers that only do policy-gradient RL when they log per-step metrics
_RL_TRAINERS = ("verl", "openrlhf", "nemo-rl")
_PREFIXES = ("train/", "training/", "train_")


def _strip(key: str) -> str:
    for p in _PREFIXES:
        if key.startswith(p) and key != p:
            return key[len(p):]
    return key


def detect(metric_keys: Iterable[str], configs: Sequence[ConfigValue], trainer: str | None,
           kind: str = "generic") -> tuple[str, list[str]]:
    """(paradigm, evidence): one of runs.model.PARADIGMS and what decided it."""
    if kind == "selector-generator":
        return "selector_generator", ["selector/generator rounds or a filter table"]
    if kind == "solver-calibration":
        return "solver_calibration", ["solver-calibration tables (eval history, solver scores, calibrations)"]
    for cv in configs:
        if cv.leaf in _VALUE_KEYS and isinstance(cv.value, str) and cv.value.strip().lower() in _BY_VALUE:
            return _BY_VALUE[cv.value.strip().lower()], [f"{cv.file}:{cv.key} = {cv.value}"]
    for cv in configs:
        if isinstance(cv.value, str) and len(cv.value) < 512 and (m := _CLASS.search(cv.value)):
            return _class_paradigm(m.group("name")), [f"{cv.file}:{cv.key} names {m.group('name')}"]
    layouts: tuple[tuple[tuple[str, ...], str], ...] = ((_SELECTOR_KEYS, "selector_generator"),
                                                        (_SOLVER_KEYS, "solver_calibration"))
    for keys, paradigm in layouts:
        for cv in configs:
            if cv.leaf in keys:
                return paradigm, [f"config key {cv.file}:{cv.key}"]
    names = {_strip(k) for k in metric_keys}
    pref = [n for n in _PREFERENCE_METRICS if n in names]
    if pref:
        return "preference", [f"metric {', '.join(pref[:4])}"]
    policy = [n for n in _POLICY_METRICS if n in names] + sorted(
        n for n in names if re.match(r"^(?:rewards|reward_extra)/[^/]+/mean$", n))
    if policy:
        return "policy_gradient", [f"metric {', '.join(policy[:4])}"]
    only: tuple[tuple[tuple[str, ...], str], ...] = ((_PREFERENCE_KEYS, "preference"), (_POLICY_KEYS, "policy_gradient"),
                                                     (_SFT_KEYS, "sft"))
    for keys, paradigm in only:
        for cv in configs:
            if any(cv.name == k or cv.name.endswith("." + k) for k in keys):
                return paradigm, [f"config key {cv.file}:{cv.key}"]
    sft = [n for n in _SFT_METRICS if n in names]
    if sft:
        return "sft", [f"metric {', '.join(sft)}"]
    if trainer in _RL_TRAINERS:
        return "policy_gradient", [f"{trainer} output (a policy-gradient RL trainer)"]
    if "loss" in names and names <= _LOSS_ONLY | {n for n in names if n.startswith(("eval_", "epoch"))}:
        return "sft", ["only loss, gradient norm and learning rate are logged: no reward or preference metric"]
    return "unknown", []


def _class_paradigm(name: str) -> str:
    if name.startswith(("GRPO", "PPO", "RLOO", "ReMax")):
        return "policy_gradient"
    if name.startswith("SFT"):
        return "sft"
    if name.startswith("Reward"):
        return "reward_model"
    return "preference"
