"""Tinker (thinking-machines-lab/tinker-cookbook): training loops on the Tinker service, RL (`rl/train.py`, sync,
async and streaming), supervised (`supervised/train.py`), DPO (`preference/train_dpo.py`) and distillation
(on-policy, off-policy, SDFT), read at the pinned commit (tag v0.5.5).

Each loop hands one flat dict per step to ml_log, which writes `metrics.jsonl` (with `step`) in log_path, prints a
Rich table titled `Step N`, and forwards to W&B / Neptune / Trackio. RL trajectory metrics are prefixed
`env/all/` (and `env/<tag>/` per logging tag); an environment's own per-step metrics (`format`, `correct`, ...)
are averaged into the same prefix, over the transitions that carry them. Evaluators prefix their name
(`test/...` by default). Loss and optimizer metrics that the Tinker service returns (`optim_result.metrics`,
off-policy distillation's `train/*`) are named by the service, not by this code.
"""

import re
from typing import Any

from triage_agent.runs import values
from triage_agent.runs.console.crashes import crash_info
from triage_agent.runs.console.dialect import Dialect, Line, Sink
from triage_agent.runs.trainers.profile import Profile, Source

_T = "tinker_cookbook/"
_FILES = tuple(_T + f for f in (
    "distillation/sdft.py", "distillation/train_off_policy.py", "distillation/train_on_policy.py",
    "preference/comparison_policy_evaluator.py", "preference/train_dpo.py", "rl/message_env.py", "rl/metric_util.py",
    "rl/metrics.py", "rl/preference_envs.py", "rl/problem_env.py", "rl/rollout_runner.py", "rl/rollouts.py",
    "rl/train.py", "rl/types.py", "supervised/nll_evaluator.py", "supervised/train.py", "utils/trace.py",
))

PROFILE = Profile(
    name="tinker",
    title="Tinker (tinker-cookbook)",
    source=Source("thinking-machines-lab/tinker-cookbook", "9dfcc3a2cf44432d621a01005073dc6d76a1e87a", "0.5.5",
                  _FILES),
    names={
        # the batch mean of each trajectory's total reward (rl/metric_util.py _compute_trajectory_metrics)
        "env/all/reward/total": "reward",
        # problem envs (rl/problem_env.py): share of answers graded correct; `format` is the format check
        "env/all/correct": "pass_rate",
        # sampled tokens per turn: the mean completion length (per turn of a multi-turn episode)
        "env/all/ac_tokens_per_turn": "length",
        "env/all/turns_per_episode": "num_turns",
        # recipes/rlvr/env.py: "correct_eos: did the response complete with a stop token (not truncated)?"; one
        # minus it is the share cut at max_tokens
        "env/all/format_eos": "eos_share",
        # rl/metrics.py compute_kl_sample_train: -mean logp of the sampled tokens, the sampler's entropy estimate
        "optim/entropy": "entropy",
        # sampler vs trainer log-probs of the same tokens: v1 mean difference, v2 half mean squared difference (KLs)
        "optim/kl_sample_train_v1": "is_ratio", "optim/kl_sample_train_v2": "is_ratio",
        # compute_post_kl: the KL between the policy before and after the update
        "kl_pre_post_v1": "update_kl", "kl_pre_post_v2": "update_kl",
        # incorporate_kl_penalty: mean logp difference to the KL reference (base) model
        "kl_policy_base": "kl",
        "optim/lr": "lr", "learning_rate": "lr",
        # supervised: mean NLL of the batch (the cross-entropy loss); DPO: its loss
        "train_mean_nll": "loss", "dpo_loss": "loss",
        "accuracy": "pref_accuracy", "margin": "pref_margin",  # preference/train_dpo.py
        "chosen_reward": "pref_chosen", "rejected_reward": "pref_rejected",
        # on-policy distillation: mean logp difference of the student to the teacher on sampled tokens; SDFT its
        # reverse KL
        "teacher_kl": "teacher_kl", "sdft/reverse_kl_mean": "teacher_kl",
        # held-out: the RL test-set evaluator's reward and correct share, a comparison evaluator's win rate
        "test/env/all/reward/total": "validation", "test/env/all/correct": "validation", "win_rate": "validation",
        "test/nll": "eval_loss",  # supervised NLLEvaluator (default name "test")
    },
    raw={
        "env/all/ob_tokens_per_turn": "observation (prompt) tokens per turn, not generated tokens",
        "env/all/total_*": "counters of the batch (episodes, turns, tokens)",
        "env/all/by_group/*": "shares of groups with mixed, all-good and all-bad rewards; all_good + all_bad is "
                              "the share of groups whose rewards tie",
        "env/all/format": "share of responses in the required format (a reward part)",
        "env/all/stop/*": "one-hot stop reason averaged over the transitions that carry it (1.0 whenever present)",
        "env/all/max_tokens_reached": "a flag averaged over the transitions that carry it (1.0 whenever present), "
                                      "not the share truncated",
        "env/all/parse_error": "a flag averaged over the transitions that carry it",
        "env/all/parse_error_masked": "a flag averaged over the transitions that carry it",
        "env/all/context_overflow": "a flag averaged over the transitions that carry it",
        "env/all/zero_reward_on_limit": "a flag averaged over the trajectories that carry it",
        "env/all/num_truncations_max_turn_tokens": "turns truncated at the per-turn token cap (per trajectory)",
        "env/all/win_minus_loss": "preference env: pairwise wins minus losses (a reward part)",
        "env/**": "an environment's or a logging tag's own metric (env/<tag>/ is a subset of env/all/)",
        "test/**": "evaluator metrics: the held-out copies of the env/ metrics, rollout errors, NLL evaluators",
        "rollout_errors/*": "rollout failures by type (counters)",
        "progress/batch": "the batch index (the step)",
        "progress/done_frac": "the fraction of the planned batches done",
        "progress": "supervised / DPO: the fraction of the planned steps done",
        "training_client/step": "the trainer's step (async RL)",
        "sampling_client/*": "training step of the sampler weights (max/min/mean over groups; async staleness "
                             "is the current step minus it)",
        "time/**": "wall-clock timings",
        "batch_time": "DPO: seconds per step",
        "epoch": "epoch counter",
        "step": "the step (off-policy distillation)",
        "state_path": "a checkpoint path",
        "num_sequences": "a counter", "num_tokens": "a counter", "num_loss_tokens": "a counter",
        "num_pairs": "a counter", "batch_size": "a counter",
        "train_mean_bpb": "bits per byte of the training batch",
        "teacher_kl/*": "the teacher KL per dataset; teacher_kl is the series",
        "train/*": "off-policy distillation: the Tinker service's loss metrics",
        "sdft/*": "SDFT statistics: advantages, log-probs, entropies, counters",
        "stderr": "standard error of win_rate",
    },
    banners=("Will train on ", "Logging to: ", "metrics.jsonl"),
    # its log lines are Python logging's `<module>:<line> [LEVEL]` with the cookbook's and the SDK's module names
    detect=(r"^tinker_cookbook\.[\w.]+:\d+ \[(?:INFO|WARNING|ERROR)\]", r"^tinker\.lib\.[\w.]+:\d+ \[(?:INFO|ERROR)\]"),
    files=("metrics.jsonl", "checkpoints.jsonl", "timing_gantt.html", "trace_events.jsonl"),
    config_keys=("renderer_name", "kl_discount_factor", "compute_post_kl", "num_substeps",
                 "remove_constant_reward_groups", "stream_minibatch_config", "max_steps_off_policy",
                 "rolling_save_every", "span_chart_every", "num_groups_to_log"),
    # progress/done_frac and progress are fractions of the plan
    plan_keys=("progress/done_frac", "progress", "max_steps", "num_epochs"),
    plan_lines=(r"Will train on (?P<total>\d+) batches",),  # rl/train.py, distillation (train_on_policy, sdft)
    paradigm_names={
        "kl_policy_base": "policy_gradient", "kl_pre_post_v1": "policy_gradient",
        "env/*/reward/total": "policy_gradient", "env/all/by_group/frac_mixed": "policy_gradient",
        "dpo_loss": "preference", "chosen_reward": "preference", "rejected_reward": "preference",
        "train_mean_nll": "sft",
        "teacher_kl": "distillation", "sdft/*": "distillation",
    },
    # rl/metrics.py: shares of groups whose rewards are all good or all bad (the rest are `frac_mixed`)
    zero_std_parts=("env/all/by_group/frac_all_bad", "env/all/by_group/frac_all_good"),
    agentic_names=("env/all/turns_per_episode", "env/all/total_turns", "env/all/stop/max_turns",
                   "env/all/stop/max_tool_calls", "env/all/stop/tool_stopped"),
)


# -- console ----------------------------------------------------------------------------------------------------
# utils/ml_log.py prints each step's metrics as a Rich table (title `Step N`, columns Metric and Value, names cut with
# `…` past the column's width); the SDK's retry handler logs a request it will not retry as an ERROR line, and the
# loop dies on it (tinker/lib/retry_handler.py: "Request failed with non-retryable error: <Exc>: <message>")
_ROW = re.compile(r"^│\s*(?P<k>[^│]+?)\s*│\s*(?P<v>[^│]+?)\s*│\s*$")
_FATAL = re.compile(r"Request failed with non-retryable error: (?P<exc>[A-Za-z_][\w.]*): (?P<msg>.*)")


class MetricTables(Dialect):
    """The `Step N` tables: one row per table, stepped by its `progress/batch` (by order where it is missing). They
    replace what the generic reader makes of the log (an environment's printed `Step 0:` blocks are no steps)."""

    order = 45
    name = "tinker tables"
    trainer = "tinker"
    # the header row `┃ Metric ┃ Value ┃`, plain or coloured (Rich's SGR code ends in `m`, glued to the word)
    markers = (b"\xe2\x94\x83 Metric", b"mMetric ", b"non-retryable error: ")
    supersedes = ("generic lines",)
    sniff = rb"\xe2\x94\x83[^\n]{0,40}Metric[^\n]{0,40}\xe2\x94\x83"
    examples = ("┃ Metric                         ┃ Value       ┃",
                "tinker.lib.retry_handler:222 [ERROR] Request failed with non-retryable error: BadRequestError: "
                "Error code: 400 - {'detail': 'Prompt length plus max_tokens exceeds the context window'}")

    def __init__(self) -> None:
        self.row: dict[str, Any] | None = None
        self.start = 0
        self.tables = 0

    @property
    def open(self) -> bool:
        return self.row is not None

    def read(self, line: Line, sink: Sink) -> bool:
        text = line.text.strip()
        if self.row is not None:
            if text.startswith("└"):
                self._emit(sink)
            elif (m := _ROW.match(text)) and not m.group("k").endswith("…"):
                v = values.parse(m.group("v"))
                if v is not None:
                    self.row[m.group("k")] = v
            return True
        if text.startswith("┃ Metric"):
            self.row, self.start = {}, line.lineno
            return True
        if "non-retryable error: " in text and (m := _FATAL.search(text)):
            sink.error(crash_info(m.group("exc").rsplit(".", 1)[-1], m.group("msg")[:300], line.lineno,
                                  fatal="a request the Tinker SDK will not retry"))
            return True
        return False

    def _emit(self, sink: Sink) -> None:
        row, self.row = self.row or {}, None
        if not row:
            return
        batch = row.get("progress/batch")
        known = isinstance(batch, (int, float))
        row["step"] = int(batch) if isinstance(batch, (int, float)) else self.tables
        self.tables += 1
        sink.add_row(row, self.start, self.name, known_step=known)

    def flush(self, sink: Sink) -> None:
        pass  # a table cut off before its bottom line is not a row
