"""slime (github.com/THUDM/slime): Megatron + SGLang RL (GRPO / GSPO / PPO / REINFORCE++, on-policy distillation,
SFT). Read from its source at the pinned commit (trainer-profiles.md).

Every log goes through `observability/logging_utils.log` (W&B and TensorBoard) with its own step key: the train
step's loss dict as `train/<key>` (`train/critic-<key>` for the value model, backends/megatron_utils/model.py),
the rollout samples' statistics as `rollout/...` and `perf/...` (observability/rollout_metrics.py), the Megatron-side
rollout batch as `rollout/<field>` (observability/train_metric_utils.py), eval as `eval/<dataset>...`. The same
dicts are printed by `logger.info` (`rollout 3: {...}`, `perf 3: {...}`, `eval 3: {...}`).

Meaning (loss.py policy_loss_function): `train/kl_loss` is the KL to the reference model, `train/ppo_kl` the KL of
the update (old vs current policy), `train/train_rollout_logprob_abs_diff` the rollout-engine vs trainer log-prob
mismatch. `rollout/rewards` are the group-normalised rewards GRPO trains on (mean ~0); `rollout/raw_reward` is the
reward function's score, the batch reward.
"""

import re
from typing import Any

from triage_agent.runs.console.dialect import Dialect, Line, Sink
from triage_agent.runs.console.limits import MAX_ROW_KEYS as MAX_KEYS
from triage_agent.runs.console.transformers import parse_dict_line
from triage_agent.runs.trainers.profile import Profile, Source

_FILES = (
    "slime/backends/megatron_utils/loss.py",
    "slime/backends/megatron_utils/model.py",
    "slime/observability/rollout_metrics.py",
    "slime/observability/train_metric_utils.py",
    "slime/observability/metric_utils.py",
    "slime/rollout/filter_hub/base_types.py",
)

PROFILE = Profile(
    name="slime",
    title="slime",
    source=Source("THUDM/slime", "624b824a898ab0ec1fcb4d373004c7f3852bf515", "0.3.1", _FILES),
    names={
        # mean of sample.get_reward_value (ray/rollout._post_process_rewards); a custom post-process may shape it
        "rollout/raw_reward": "reward",
        "train/entropy_loss": "entropy",  # sum_of_sample_mean(entropy) itself; entropy_coef is applied outside
        "rollout/entropy": "entropy",  # the old policy's mean token entropy (--use-rollout-entropy)
        "train/kl_loss": "kl",  # compute_approx_kl(log_probs, ref_log_probs), logged with --use-kl-loss
        "rollout/kl": "kl",  # the reference KL of the reward penalty (compute_advantages_and_returns, kl_coef)
        "train/ppo_kl": "update_kl",
        "train/grad_norm": "grad_norm",
        "train/loss": "loss", "train/pg_loss": "loss",
        "rollout/response_len/mean": "length", "rollout/response_lengths": "length",
        "multi_turn/wo_obs_response_length/response_length_mean": "length",
        # sample.status == TRUNCATED (the length cap), per rollout and on the Megatron side
        "rollout/truncated_ratio": "clipped_share", "rollout/truncated": "clipped_share",
        "multi_turn/raw_response_length/response_length_clip_ratio": "clipped_share",
        "train/pg_clipfrac": "ratio_clip_share",
        "train/lr-pg_0": "lr", "train/lr-pg_*": "lr",
        # mean |log_probs - rollout_log_probs| (a log-prob difference); tis is the mean IS ratio
        # exp(old - rollout), tis_abs its mean |ratio - 1|
        "train/train_rollout_logprob_abs_diff": "is_ratio", "train/tis": "is_ratio", "train/tis_abs": "is_ratio",
        # pass@k per eval data set (log_eval_rollout_data, --log-passrate); the plain `eval/<dataset>` mean reward
        # is kept raw below: a glob for it would also take eval/step and eval/<dataset>-truncated_ratio
        "eval/*-pass@1": "validation", "eval/*-pass@*": "validation",
        # on-policy distillation: mean log pi_student - log pi_teacher on the student's samples (a reverse KL)
        "train/opd_reverse_kl": "teacher_kl", "rollout/opd_reverse_kl": "teacher_kl",
        "multi_turn/multi_turn_metric/round_number_mean": "num_turns",
        "rollout/repetition_frac": "repetition_share",
        # pass@k over the training rollouts' raw rewards (log_passrate, --log-passrate): pass@1 is the solved share
        "passrate/pass@1": "pass_rate", "passrate/pass@*": "pass_rate",
    },
    raw={
        "rollout/rewards": "group-normalised rewards ((r - mean) / std for GRPO): an advantage, not the reward",
        "train/ois": "mean exp(log pi - log pi_old), the update's importance ratio",
        "train/tis_clipfrac": "share of tokens whose truncated-IS weight was clipped",
        "train/opsm_clipfrac": "share of sequences masked by off-policy sequence masking",
        "train/critic-*": "the value model's metrics (PPO)",
        "train/mtp_*": "multi-token-prediction losses", "train/global_batch_size": "samples in the step",
        "train/step": "the step counter",
        "rollout/response_len/*": "max / min / median of the batch; the mean is the series",
        # counts, not shares: rollout/zero_std/count_<reward> is the number of groups whose rewards all tie at it
        "rollout/zero_std/*": "number of tied groups per reward value (counts; zero_std_share is their sum over "
                              "the group count)",
        "rollout/spec_accept_*": "speculative-decoding acceptance",
        "rollout/prefix_cache_hit_rate": "prefix-cache hit rate", "rollout/avg_cached_tokens_per_sample": "cache",
        "rollout/error_cat/*": "share of samples per reward category (--log-reward-category)",
        "rollout/top_p_kept_vocab_per_token": "top-p replay vocabulary size",
        "rollout/step": "the step counter", "rollout/dynamic_filter/*": "dynamic-filter drop counts",
        "rollout/round_number": "mean turn count (multi_turn/multi_turn_metric/round_number_mean is the series)",
        "rollout/total_lengths": "prompt + response tokens",
        "rollout/rollout_log_probs": "mean rollout-engine log-prob", "rollout/log_probs": "mean log-prob",
        "rollout/ref_log_probs": "mean reference log-prob", "rollout/teacher_log_probs": "mean teacher log-prob",
        "rollout/ref_entropy": "the reference model's entropy", "rollout/teacher_entropy": "the teacher's entropy",
        "rollout/values": "mean value estimate", "rollout/returns": "mean return", "rollout/advantages":
            "mean advantage",
        "rollout/partition": "this rank's sample indices (summarised like a metric)",
        "rollout/correct_*": "length / entropy of the correct samples (--log-correct-samples)",
        "rollout/correct_length/*": "length quantile shares of the correct samples",
        "multi_turn/raw_response_length/*": "response length including observations (max / min)",
        "multi_turn/wo_obs_response_length/*": "generated tokens (max / min); the mean is the series",
        "multi_turn/multi_turn_metric/*": "turn counts (max / min); the mean is the series",
        "perf/**": "timings and throughput",
        "eval/step": "the step counter",
        "eval/*-truncated_ratio": "held-out truncation share",
        "eval/*": "mean reward per eval data set, the held-out score (not mapped: a glob cannot leave out eval/step)",
        "eval/*/**": "held-out rollout statistics (lengths, truncation, repetition)",
    },
    banners=("Rollout generation", "Update weights"),
    config_keys=("num_rollout", "rollout_num_gpus", "rollout_num_gpus_per_engine", "rollout_max_response_len",
                 "n_samples_per_eval_prompt", "kl_loss_coef", "hf_checkpoint", "use_rollout_entropy",
                 "get_mismatch_metrics"),
    plan_keys=("num_rollout",),
    paradigm_names={
        "train/pg_loss": "policy_gradient", "train/pg_clipfrac": "policy_gradient", "train/ppo_kl": "policy_gradient",
        "rollout/raw_reward": "policy_gradient", "rollout/zero_std/*": "policy_gradient",
        "train/opd_reverse_kl": "distillation",
    },
    agentic_names=("multi_turn/multi_turn_metric/round_number_mean", "multi_turn/multi_turn_metric/round_number_max"),
)


# -- console ----------------------------------------------------------------------------------------------------
# `logger.info(f"rollout {rollout_id}: {log_dict}")` (and `perf`, `eval`) before the rollout's train steps, then
# `step {n}: {loss dict}` for each of them (printed twice when two loggers run: log_utils and model.py). The run's
# step is the rollout: its plan is num_rollout, W&B logs rollout metrics at the rollout id
_LINE = re.compile(r" - (?P<kind>rollout|perf|step) (?P<n>\d{1,9}): (?P<d>\{.*\})\s*$")


class RolloutLines(Dialect):
    """One row per rollout: its `rollout`/`perf` dicts, given at its line (so a crash in its first update falls
    after it), with the mean of its train steps' `step` dicts merged in at the end."""

    order = 44
    name = "slime rollouts"
    trainer = "slime"
    markers = (b" - rollout ", b" - perf ", b" - step ")
    supersedes = ("generic lines",)
    sniff = rb" - (?:rollout|step) \d+: \{'(?:rollout|train)/"
    examples = ("[2026-04-04 07:39:09] log_utils.py:53 - rollout 0: {'rollout/response_lengths': 8159.1, "
                "'rollout/truncated': 0.953, 'rollout/raw_reward': 0.0625}",
                "[2026-04-04 07:42:32] log_utils.py:443 - step 0: {'train/loss': -0.011, 'train/grad_norm': 0.19, "
                "'train/step': 0}")

    def __init__(self) -> None:
        self.rollout: int | None = None
        self.steps: set[int] = set()  # train steps read (each is printed once per logger)
        # per rollout: key -> (sum, count) of its train steps' values (bounded: MAX_KEYS keys a rollout)
        self.sums: dict[int, dict[str, tuple[float, int]]] = {}
        self.extra: dict[int, dict[str, Any]] = {}  # per rollout: its perf dict

    def read(self, line: Line, sink: Sink) -> bool:
        m = _LINE.search(line.text)
        if m is None:
            return False
        got = parse_dict_line(m.group("d"))
        if not got:
            return True  # printed, but no numbers: nothing to keep
        kind, n = m.group("kind"), int(m.group("n"))
        if kind == "step":
            if n not in self.steps and self.rollout is not None:
                self.steps.add(n)
                sums = self.sums.setdefault(self.rollout, {})
                for k, v in got.items():
                    if isinstance(v, (int, float)) and (k in sums or len(sums) < MAX_KEYS):
                        total, count = sums.get(k, (0.0, 0))
                        sums[k] = (total + float(v), count + 1)
            return True
        if kind == "rollout" and n != self.rollout:
            self.rollout = n
            sink.add_row({**got, "step": n}, line.lineno, self.name)
        elif self.rollout is not None:  # its perf dict, or a second print of its rollout dict: merged at the end
            extra = self.extra.setdefault(self.rollout, {})
            extra.update(list(got.items())[:max(0, MAX_KEYS - len(extra))])
        return True

    def flush(self, sink: Sink) -> None:
        if not self.sums and not self.extra:
            return
        merged = {r: {k: t / c for k, (t, c) in sums.items()} for r, sums in self.sums.items()}
        for r, extra in self.extra.items():
            merged[r] = {**extra, **merged.get(r, {})}
        sink.restep(lambda row: {**row, **merged.get(int(row["step"]), {})})
