"""AReaL (github.com/inclusionAI/AReaL): asynchronous RL (decoupled PPO / GRPO), SFT, DPO and reward-model
training. Read from its source at the pinned commit (trainer-profiles.md).

Names come from `utils/stats_tracker.py`: `stat(x=..., denominator=...)` exports `<scope>/x/avg|min|max`,
`denominator(...)` and `scalar(...)` export `<scope>/x`, `record_timing(k)` exports `timeperf/k`. The PPO actor's
scope is `ppo_actor` (`ppo_actor/update/...` for the loss function's statistics), the rollout workflows' is `rollout`
(`eval-rollout` when evaluating). `StatsLogger.commit` (utils/stats_logger.py) sends them as-is to W&B / SwanLab /
TensorBoard and prints them as a table after `Epoch e/E Step s/S Train step g/G done.`.
"""

import re
from typing import Any

from triage_agent.runs import values
from triage_agent.runs.console.dialect import Dialect, Line, Sink
from triage_agent.runs.trainers.profile import Profile, Source

_FILES = (
    "areal/trainer/ppo/actor.py",
    "areal/trainer/ppo/critic.py",
    "areal/engine/fsdp_engine.py",
    "areal/utils/stats_tracker.py",
    "areal/trainer/rl_trainer.py",
    "areal/workflow/rlvr.py",
    "areal/workflow/multi_turn.py",
    "areal/infra/workflow_executor.py",
    "areal/trainer/sft/lm_engine.py",
    "areal/trainer/dpo/dpo_engine.py",
    "areal/trainer/rw/rw_engine.py",
    "areal/models/tree_attn/tree.py",
)

PROFILE = Profile(
    name="areal",
    title="AReaL",
    source=Source("inclusionAI/AReaL", "4aef98d8d818af55b43621aaadba047ae10f4e77", "1.0.4", _FILES),
    names={
        # data["rewards"] per sequence, after the overlong penalty, before reward scaling (ppo/actor.py)
        "ppo_actor/task_reward/avg": "reward",
        # the workflow's own reward (workflow/rlvr.py, multi_turn.py), before any penalty
        "rollout/reward": "task_score",
        "ppo_actor/update/entropy/avg": "entropy",
        # KL between the current and the proximal policy, the update's KL (ppo_actor_loss_fn)
        "ppo_actor/update/approx_kl/avg": "update_kl",
        "ppo_actor/update/grad_norm": "grad_norm", "sft/grad_norm": "grad_norm", "dpo/grad_norm": "grad_norm",
        "rw/grad_norm": "grad_norm",
        "ppo_actor/update/actor_loss/avg": "loss", "sft/loss/avg": "loss", "dpo/loss/avg": "loss",
        "rw/loss/avg": "loss",
        # seqlen == the padded maximum: no EOS within the length cap
        "ppo_actor/no_eos_ratios/avg": "clipped_share",
        "ppo_actor/update/clip_ratio/avg": "ratio_clip_share",
        "ppo_actor/update/lr": "lr", "sft/lr": "lr", "dpo/lr": "lr", "rw/lr": "lr",
        # decoupled PPO: pi_proximal / pi_behave, the trainer vs the rollout engine's (possibly stale) log-probs,
        # an IS ratio
        "ppo_actor/update/behave_imp_weight/avg": "is_ratio",
        "eval-rollout/reward": "validation",
        "dpo-eval/reward_accuracy/avg": "validation", "rw-eval/correct_ratio/avg": "validation",
        "sft-eval/loss/avg": "eval_loss", "dpo-eval/loss/avg": "eval_loss", "rw-eval/loss/avg": "eval_loss",
        "dpo/reward_accuracy/avg": "pref_accuracy", "dpo/reward_margin/avg": "pref_margin",
        "dpo/chosen_reward/avg": "pref_chosen", "dpo/rejected_reward/avg": "pref_rejected",
        "rw/correct_ratio/avg": "rm_accuracy", "rw/pos_score/avg": "rm_chosen", "rw/neg_score/avg": "rm_rejected",
        # joint distillation: mean log pi - log pi_teacher (reverse KL) when the RL loss is kept
        "ppo_actor/update/rkl_loss/avg": "teacher_kl",
        "rollout/num_turns": "num_turns",
        # v_theta - v_behave: policy versions between the trained policy and the one that generated the tokens
        "ppo_actor/update/version_stats/sample_staleness_theta_avg": "staleness",
    },
    raw={
        "*/*/min": "min of the batch; the mean (avg) is the series",
        "*/*/max": "max of the batch; the mean (avg) is the series",
        "*/*/*/min": "min of the batch; the mean (avg) is the series",
        "*/*/*/max": "max of the batch; the mean (avg) is the series",
        "**/n_seqs": "counter", "**/n_tokens": "counter", "**/n_valid_tokens": "counter", "**/n_pairs": "counter",
        "**/*_n_seqs": "counter", "**/*_tokens": "counter", "ppo_actor/agent": "counter",
        "ppo_actor/correct_seq_len/avg": "prompt + response length of correct samples",
        "ppo_actor/incorrect_seq_len/avg": "prompt + response length of incorrect samples",
        "ppo_actor/seq_len/avg": "prompt + response tokens (generated tokens are seq_len - prompt_len)",
        "ppo_actor/prompt_len/avg": "prompt length",
        "ppo_actor/advantages/avg": "mean advantage",
        # -kl_ctl * kl_estimator(old_logp, ref_logp) per token (compute_advantages): a scaled, negated KL
        "ppo_actor/kl_rewards/avg": "the KL penalty reward (-kl_ctl x the reference-KL estimate), not the KL itself",
        "ppo_actor/final_reward/avg": "per-token KL-penalised reward, averaged over tokens",
        "ppo_actor/*/avg": "per-agent statistics (log_agent_stats_keys)",
        "ppo_actor/mask_no_eos_with_zero": "config echo", "ppo_actor/eps_clip": "config echo",
        "ppo_actor/c_clip": "config echo", "ppo_actor/use_dual_clip": "config echo",
        "ppo_actor/rs_upper": "config echo", "ppo_actor/rs_lower": "config echo",
        "ppo_actor/update/update_successful": "optimizer step flag",
        "ppo_actor/update/rs_filtered_fraction": "share of tokens rejection sampling removed",
        "ppo_actor/update/importance_weight/avg": "pi / pi_proximal, the update's ratio",
        # the same mismatch as a KL; not is_ratio here since every *approx_kl* name is held to update_kl
        "ppo_actor/update/behave_approx_kl/avg": "KL(proximal || behaviour policy): the rollout mismatch as a KL",
        "ppo_actor/update/dual_clip_ratio/avg": "share of tokens clipped by the dual clip",
        "ppo_actor/update/new_logp/avg": "mean log-prob", "ppo_actor/update/old_logp/avg": "mean log-prob",
        "ppo_actor/update/clipped_*/avg": "log-probs of clipped tokens",
        "ppo_actor/update/vocab_*/avg": "logit range", "ppo_actor/update/sapo_*/avg": "SAPO gates",
        "ppo_actor/update/compute_logp/**": "proximal log-prob approximation diagnostics",
        "ppo_actor/update/version_stats/*": "version staleness (min / max / proximal); theta_avg is the series",
        "**/tree_token_ratio": "tree-attention packing ratio",
        "ppo_critic/**": "the value model's statistics (PPO)",
        "rollout/accepted": "accepted-rollout counter", "rollout/rejected": "rejected-rollout counter",
        "eval-rollout/num_turns": "held-out turn count",
        "timeperf/**": "wall-clock timings",
        "sft/ppl/avg": "perplexity", "sft-eval/ppl/avg": "held-out perplexity",
        "sft/vocab_*/avg": "logit range", "sft-eval/vocab_*/avg": "logit range",
        "sft/update_successful": "optimizer step flag", "dpo/update_successful": "optimizer step flag",
        "rw/update_successful": "optimizer step flag",
        "dpo-eval/*/avg": "held-out pair statistics", "rw-eval/*/avg": "held-out pair statistics",
    },
    banners=("(AReaL)", "StatsLogger", "RLTrainer"),
    # its loggers' own names (utils/logging.py prints `<time> <name> INFO:`) and its package path
    detect=(r"StatsLogger INFO", r"\bAReaL\b", r"\bareal\.(?:utils|trainer|engine|api)\b"),
    files=("merged.log",),
    config_keys=("total_train_epochs", "total_train_n_seqs", "ppo_n_minibatches", "recompute_logprob",
                 "use_decoupled_loss", "prox_logp_method", "max_head_offpolicyness", "log_agent_stats_keys"),
    plan_keys=("total_train_steps",),
    # utils/stats_logger.py: f"Epoch {e}/{E} Step {s}/{S} Train step {g}/{total_train_steps} done."
    plan_lines=(r"Train step \d+/(?P<total>\d+) done",),
    paradigm_names={
        "ppo_actor/**": "policy_gradient", "ppo_critic/**": "policy_gradient",
        # the GRPO actor's scope in the 2025 releases (a real log at inclusionAI/AReaL 9dcd3de, batch E)
        "grpo_actor/**": "policy_gradient",
        "sft/**": "sft", "sft-eval/**": "sft",
        "dpo/**": "preference", "dpo-eval/**": "preference",
        "rw/**": "reward_model", "rw-eval/**": "reward_model",
    },
    agentic_names=("rollout/num_turns",),
)


# -- console ----------------------------------------------------------------------------------------------------
# utils/stats_logger.py prints each step's stats with tabulate's fancy_grid after its `Train step g/G done.` line:
# rows of several `│ name │ value │` pairs, `╘` closing the table
_DONE = re.compile(r"Train step (?P<step>\d+)/\d+ done\.")
_CELL_SPLIT = "│"


class StatsTables(Dialect):
    """The stats table after each `Train step g/G done.`: one row per table, stepped by g."""

    order = 46
    name = "areal tables"
    trainer = "areal"
    markers = (b"Train step ",)
    supersedes = ("generic lines",)
    sniff = rb"StatsLogger INFO: Epoch \d+/\d+ Step \d+/\d+ Train step \d+/\d+ done"
    examples = ("20251123-17:23:03.392 StatsLogger INFO: Epoch 1/1 Step 1/50 Train step 1/50 done.",)

    def __init__(self) -> None:
        self.row: dict[str, Any] | None = None
        self.step = 0
        self.start = 0

    @property
    def open(self) -> bool:
        return self.row is not None

    def read(self, line: Line, sink: Sink) -> bool:
        text = line.text.strip()
        if self.row is not None:
            if text.startswith("╘"):
                self._emit(sink)
            elif text.startswith(_CELL_SPLIT):
                self._cells(text)
            elif not text.startswith(("╒", "├", "╞")) and "StatsLogger" not in text:
                self._emit(sink)  # the table ended without its bottom line: what it held is the step's
                return False
            return True
        if "Train step " in text and (m := _DONE.search(text)):
            self.row, self.step, self.start = {}, int(m.group("step")), line.lineno
            return True
        return False

    def _cells(self, text: str) -> None:
        cells = [c.strip() for c in text.strip(_CELL_SPLIT).split(_CELL_SPLIT)]
        for key, raw in zip(cells[::2], cells[1::2]):
            v = values.parse(raw)
            if key and v is not None and self.row is not None:
                self.row[key] = v

    def _emit(self, sink: Sink) -> None:
        row, self.row = self.row or {}, None
        if row:
            row["step"] = self.step
            sink.add_row(row, self.start, self.name)

    def flush(self, sink: Sink) -> None:
        self._emit(sink)
