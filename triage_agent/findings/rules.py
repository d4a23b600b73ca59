"""The one thresholds table. Every default comes from shared/spec/findings.md (v1) unless noted;
`[rules]` in a run's triage.toml overrides any of them by name."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DEFAULTS: dict[str, Any] = {
    # filter.boundary_starved / overloaded (findings.md, selector/generator table)
    "band_share_min": 0.25,
    "band_share_drop": 0.05,
    "band_dropped_fraction": 0.5,
    "band_share_max": 0.40,
    # filter.rule_mismatch: more than 1% of questions disagree with the config's rule
    "rule_mismatch_rate": 0.01,
    # reward.boundary_suppressed: format/boundary weight ratio, boundary contribution share
    "format_boundary_ratio": 3.0,
    "boundary_share_min": 0.40,
    # reward.boundary_variance_dominates: Var(boundary) >= 5x Var(format) over the last selector round's logged
    # steps (BAR-RAG seed, shared/seeds/000_4933788cbac857c9.txt 4.2: "boundary reward variance 5x the format
    # reward's or more"; findings-v4.md)
    "boundary_variance_ratio": 5.0,
    # reward.boundary_oscillating: swing ratio and Spearman rho of the last selector round
    "swing_ratio_max": 0.25,
    "boundary_rho_min": 0.5,
    # rollouts.too_few: medium below min_rollouts, high at or below rollouts_high
    "min_rollouts": 5,
    "rollouts_high": 2,
    # rounds.selector_stale: relative mean change and curve correlation
    "stale_rel_change": 0.02,
    "stale_curve_r": 0.95,
    # generator.accuracy_off_target / accuracy_regressed
    "target_gap": 0.05,
    "target_progress_min": 0.02,
    "regression_drop": 0.03,
    # hacking.proxy_gold_divergence (solver-calibration table)
    "proxy_rho_min": 0.5,
    "gold_rho_max": 0.1,
    "second_half_rho_max": 0.0,
    # hacking.high_score_failures: medium at >= 0.20, high at >= 0.35; candidates default to the top decile
    "high_score_fail_share": 0.20,
    "high_score_fail_share_high": 0.35,
    "high_score_quantile": 0.90,
    # calibration.too_frequent
    "calibration_min_interval": 2000,
    "flip_rate_max": 0.10,
    # calibration.interface_changed: range moves by more than 10% of the first event's range
    "interface_range_change": 0.10,
    # calibration.candidates_too_loose
    "confirmed_ratio_min": 0.30,
    # CalibForge's input stage (seed 003, 5.1 step 2 and 3.3; findings-v4.md, the seeds end to end):
    # calibration.too_few_candidates below 50 candidates in a calibration event (findings-v4.md default)
    "min_candidates": 50,
    # calibration.solvers_disagree: several solvers' verdicts (score at or above the middle of the score range)
    # split on at least 20% of samples (ours: the seed names no number)
    "solver_disagreement_share": 0.20,
    # calibration.behavior_drift: early = first, late = last head_tail_fraction of the sampled steps, each with at
    # least 30 samples; median length 1.5x apart, or a KS statistic of the score distributions >= 0.3 with the
    # score moving unlike the gold pass rate (ours: the seed names no number)
    "drift_length_ratio": 1.5,
    "drift_score_ks": 0.30,
    "drift_min_samples": 30,
    # calibration.surface_sensitive: mean |score - perturbed| as a share of the score range
    "perturbation_delta_max": 0.10,
    # calibration.miscalibrated: ECE over 10 equal-width bins
    "ece_max": 0.10,
    "ece_bins": 10,
    # any run: reward.zero_variance_groups and generation.truncated over the last 20% of steps
    "tail_fraction": 0.20,
    "zero_std_share_max": 0.5,
    "truncated_share": 0.30,
    "truncated_share_high": 0.8,
    # trainer runs (trainer-findings.md): head/tail = means of the first/last 20% of logged steps, >= 3 points;
    # rules need at least 10 logged steps of a series
    "head_tail_fraction": 0.20,
    "head_tail_min_points": 3,
    "min_series_steps": 10,
    # reward.flat: >= 30 steps, rho(step, reward) < 0.2 and tail - head < 0.05 x (p95 - p5)
    "flat_min_steps": 30,
    "flat_rho_max": 0.2,
    "flat_gain_share": 0.05,
    # reward.flat on a discrete reward (post-training-findings.md, robust 1): a reward with at most this many
    # distinct values is judged by Welch's z of tail over head, not by the p95-p5 spread (which is one whole
    # level for a 0/0.125/0.25 format reward, so any wobble passes as a gain). Binary and format rewards have 2-5
    # levels; 6 keeps a 0..5 score in. Not rising = z below the one-sided 5% quantile of the normal, 1.645.
    "flat_discrete_levels": 6,
    "flat_rise_z": 1.645,
    # ... a flat training reward while the validation score rises (rho >= 0.5 over at least 3 evaluations, last above
    # first) is an info note, not an alarm: two Tinker runs of batch A (issue 36) evaluate at rho 0.56 and 0.72
    "flat_validation_rho": 0.5,
    "flat_validation_points": 3,
    # reward.collapsed: tail at least 50% back from the rolling-mean peak toward the rolling minimum,
    # and peak - tail >= 0.1 x (p95 - p5)
    "collapse_return_share": 0.5,
    "collapse_drop_share": 0.1,
    # ... and (post-training-findings.md, robust 3: a plateau is not a collapse) the fall from the peak to the tail
    # beyond 3x its noise and 25% of the gain from the start (first 3 points) to the peak. A verl PPO run that
    # rose to 0.958 and ended at 0.944 (issue 23) falls 1.5% of its gain. Changed from the spec: the noise is that
    # of the fall, a difference of two means (the peak's rolling window of w points and the tail's k), i.e. the
    # step-to-step noise x sqrt(1/w + 1/k), not of one point: chaos-economy-a (SOURCES.md, a collapse the tests
    # expect) falls 0.85 from a rolling peak of 0.97 with a per-point noise of 0.48, which 3x one point's noise
    # (1.45) would have called noise; 3x the fall's noise is 0.82.
    "collapse_noise_k": 3.0,
    "collapse_gain_share": 0.25,
    # policy.entropy_collapse: tail <= 0.25 x head; high at <= 0.1 x [P: PTT warns at a 50% drop]
    "entropy_collapse_ratio": 0.25,
    "entropy_collapse_ratio_high": 0.1,
    # policy.kl_explosion: tail or any 5-step rolling mean >= 10 x head and >= 0.5; high at >= 2.0 [P: 0.5/2.0]
    "kl_growth_ratio": 10.0,
    "kl_min": 0.5,
    "kl_high": 2.0,
    "kl_window": 5,
    # optim.grad_norm_spike: > 10 x the median of the steps before (at least 10), and > 1.0; high at 3 spikes
    "grad_spike_ratio": 10.0,
    "grad_spike_min": 1.0,
    "grad_spike_history": 10,
    "grad_spike_high_count": 3,
    # ... an isolated spike (back under the bar on the next logged step) below this multiple of the running median
    # is an info note: HF Trainer logs the norm before clipping, so a clipped one-step spike moves the policy no
    # further than max_grad_norm. Evidence: the healthy Unsloth GSM8K run (SOURCES.md) has two such spikes, 12.5x
    # and 10.4x; the MBPP GRPO run's labelled spike is 39.5x its median (tests/real_runs labels).
    "grad_spike_isolated_ratio": 20.0,
    # optim.zero_grad: grad_norm exactly 0 on >= 20% of steps [M]
    "zero_grad_share": 0.20,
    # generation.length_collapse / length_explosion
    "length_collapse_ratio": 0.25,
    "length_explosion_ratio": 3.0,
    "clip_head_max": 0.05,
    "clip_tail_min": 0.30,
    # reward.component_dominates: share >= 0.70 (high >= 0.90) while another component's rho < 0.2 [P: 70/90%]
    "dominant_share": 0.70,
    "dominant_share_high": 0.90,
    "stagnant_rho": 0.2,
    # reward.task_signal_dead (post-training-findings.md): a task component at one value on >= 90% of steps
    "task_stuck_share": 0.90,
    # ... and with no components: a task success series (pass_rate, task_score) at its floor on that share of steps
    # while the reward moves; or the only reward exactly 0, its floor, on >= 80% of steps: a GRPO step whose mean
    # reward is 0 failed every sample of every group, so it has no advantage to learn from (ours; batch A's Tinker
    # function-calling run: 87 of 100 steps at 0, loss 0 on 91; the healthy corpus runs start at 0 on <= 30%)
    "reward_dead_share": 0.80,
    # zero variance without frac_reward_zero_std (robust 2): the share of steps whose batch reward_std is exactly 0
    # is a lower bound of the tied-group share; it is held to zero_std_share_max over all logged steps
    # preference.saturated (post-training-findings.md): before 30% of the run, loss < 0.05 with accuracies >= 0.98
    # (DPO starts at ln 2 = 0.693; a LLaMA-Factory DPO run hit 0.0017 at 12% of its first epoch, issue 23, and
    # tests/real_runs/llama_factory_dpo_qwen7b_vgpt2_saturated; huggingface/trl#1236 shows accuracies 1.0 and
    # loss 0.07 in the first hundredth of an epoch). The first saturated point is that of a 3-point rolling mean
    # of both series (head_tail_min_points): one lucky batch is not saturation
    "pref_saturated_loss": 0.05,
    "pref_saturated_accuracy": 0.98,
    "pref_saturated_by": 0.30,
    # preference.likelihood_displacement: chosen log-probs fall (rho <= -0.5, tail below head by more than the
    # noise) while margins rise (rho >= 0.5); Razin et al. 2024, Pal et al. 2024. The healthy TRL DPO run
    # (tests/real_runs/trl_dpo_qwen7b_cleancode_lora) has logps/chosen rho +0.09 and margins +0.96. Medium, not
    # high: DPO's author calls a slow fall of the chosen log-probs after SFT expected (eric-mitchell/
    # direct-preference-optimization#32); users report it as a problem (huggingface/trl#800, LlamaFactory#6153,
    # OpenRLHF#1054) and LLaMA-Factory's maintainer answers with its SFT term, pref_ftx (LlamaFactory#6153)
    "displacement_rho": -0.5,
    "margin_rho_min": 0.5,
    # preference.not_learning: after 30 steps, tail accuracies <= 0.55 and tail loss >= 0.65. The healthy TRL DPO
    # run above sits at loss 0.679 (lr 2e-6 with LoRA) but accuracy 0.92: the accuracy bar keeps it silent
    "not_learning_min_step": 30,
    "not_learning_accuracy": 0.55,
    "not_learning_loss": 0.65,
    # train.overfitting: eval loss >= 10% above its minimum over >= 3 eval points while training loss falls.
    # The healthy TRL SFT run (tests/real_runs/trl_sft_qwen7b_cleancode_lora) has 2 eval points, equal
    "overfit_rise": 0.10,
    "overfit_min_points": 3,
    # train.loss_diverged: tail mean >= 1.5x the minimum of the loss's rolling mean (over the tail's window) and
    # rising over the tail (rho >= 0.5). The minimum is of the rolling mean, not the raw minimum (one lucky batch:
    # the Unsloth code-CoT SFT run in tests/real_runs ends at 2.0x its raw minimum of 0.040 and at 1.0x its rolling
    # minimum). The rho bar keeps llama_factory_sft_lora_20ep_loss_rebound silent (tail 1.75x its rolling minimum,
    # flat over the tail, rho +0.10; its label calls it healthy and borderline)
    "diverged_ratio": 1.5,
    "diverged_rho": 0.5,
    # ... and the climb is at least this share of the fall from the head mean to that minimum: a DPO loss saturated at
    # 1e-13 that drifts to 1e-11 is 30x its minimum and still ~0 (batch A, custom_dpo_llama31_8b_physics_html_saturated:
    # head 0.69, minimum 3.3e-13, tail 1.0e-11)
    "diverged_share_of_fall": 0.1,
    # ... on a policy-gradient run, the surrogate loss's size (its sign and level mean nothing): PPO/GRPO's clipped
    # ratio times a normalised advantage (mean 0, std 1) is of the order of 1 per token (Schulman et al. 2017, eq. 7;
    # DeepSeekMath's GRPO, eq. 3), so a tail median |loss| of 10 or more, and 100x the head's, is a blow-up (ours:
    # the corpus's healthy GRPO runs log |loss| below 1; a GRPO loop of batch F reaches 16 to 1e8)
    "pg_loss_abs_max": 10.0,
    "pg_loss_blowup": 100.0,
    # policy.train_inference_mismatch: NeMo token_mult_prob_error tail > 1.05 [M]; TRL IS ratio outside 0.8-1.25
    "prob_error_max": 1.05,
    "is_ratio_lo": 0.8,
    "is_ratio_hi": 1.25,
    # policy.train_inference_mismatch on every trainer (findings-v4.md), by the form of the series: a ratio (an IS
    # ratio, NeMo's multiplicative error) by the bars above; a KL between the sampler's and the trainer's token
    # distributions above 0.01 (ours: a bf16 noise floor of mean |dlogp| ~0.05 gives KL ~ dlogp^2 / 2 ~ 1e-3, and
    # verl-omni#637 measures verl's training/rollout_probs_diff_mean at 4e-3 on a stack it calls mismatched); a mean
    # |log-prob difference| above 0.1 (verl-omni#637: 6.4e-2 per token on that stack); a mean |probability
    # difference| above 0.02 (5x verl-omni#637's 4e-3). Growing: the tail's distance from agreement >= 3x the head's
    # (findings-v4.md); high when it grows and is above its bar
    "mismatch_kl_max": 0.01,
    "mismatch_logp_diff_max": 0.1,
    "mismatch_prob_diff_max": 0.02,
    "mismatch_growth": 3.0,
    # ... Tinker's sampler-vs-learner KL estimate: two healthy tinker-cookbook RL runs in tests/real_runs log
    # optim/kl_sample_train_v1 at 0.02-0.03 and 0.060-0.069 (skyrl_tinker_*_autoresume, *_5step_benchmark): a bar of
    # 0.1 sits above both
    "mismatch_tinker_kl_max": 0.1,
    # ... and the KL of one update (`update_kl`: verl actor/ppo_kl, approx_kl) far above PPO's usual trust region: the
    # log-probs the ratio is taken against are not the policy's own (an off-policy prefix, a stale or foreign
    # sampler). PPO's adaptive-KL target is 0.01 (Schulman et al. 2017, sec. 4; Spinning Up's target_kl 0.01): 10x
    # that. The corpus's healthy verl runs log medians of 9e-6 to 3e-5; a prefix-replay run mixing a teacher's
    # tokens into the ratio, 0.58 (batch F)
    "mismatch_update_kl_max": 0.1,
    # policy.entropy_blowup (findings-v4.md): tail >= 3x head and rising (rho >= 0.5), or any 5-step rolling mean >= 5x
    # the head
    "entropy_blowup_ratio": 3.0,
    "entropy_blowup_rho": 0.5,
    "entropy_blowup_peak": 5.0,
    # generation.degenerate (findings-v4.md): >= 20% of the last 20% of samples degenerate (analysis/degenerate.py
    # says which are), high at >= 50%; at least 20 samples in that tail (ours: fewer give a share in steps of 5%+); a
    # logged repetition share (slime rollout/repetition_frac) is held to the same bars over the tail of its steps
    "degenerate_share": 0.20,
    "degenerate_share_high": 0.50,
    "degenerate_min_samples": 20,
    # reward.groups_too_hard / groups_too_easy (findings-v4.md): >= 50% of groups tie at the reward's floor / ceiling
    # over the last 20% of steps (tail_fraction); the pass-rate histogram's "learnable" band is 0.4-0.6
    "groups_tied_share": 0.50,
    "groups_band_lo": 0.4,
    "groups_band_hi": 0.6,
    # optim.steps_skipped (findings-v4.md): skipped on >= 20% of steps; "every step" at >= 99% (a counter that starts
    # one step late). DeepSpeed's fp16 loss scaler skips a few steps while it finds its scale: the healthy
    # DeepSpeed-Chat PPO run in tests/real_runs skipped 7 of 470 (1.5%)
    "skipped_share": 0.20,
    "skipped_all_share": 0.99,
    # ... or fp16 overflows at the loss scale's floor ("Attempted loss scale: 1.0, reducing to 1.0"): DeepSpeed's
    # scaler cannot go below min_loss_scale (1) and can raise "Current loss scale already at minimum" there; three
    # such lines are no fluke (a trlx run of batch G: 12 between iterations 87 and 114, then SIGTERM)
    "skipped_floor_lines": 3,
    # run.resume_discontinuity (findings-v4.md): at a resume, the mean of the 5 logged steps after it differs from the
    # mean of the 5 before, beyond the trend the two windows share, by more than 5x the series' step-to-step noise
    "resume_noise_k": 5.0,
    "resume_window": 5,
    # policy.off_policy_stale (findings-v4.md: "grows over the run or its tail exceeds the configured maximum"). Ours:
    # grows = the tail's mean >= 1.5x the mean of the middle 20% of steps and rising over the second half (rho >=
    # 0.5); against the middle, not the head, since every async run starts at staleness 0 and fills its pipeline
    "stale_growth": 1.5,
    "stale_rho": 0.5,
    # agent.turns_collapsed (findings-v4.md): mean turns per episode fall to <= 50% of the head, or to one turn
    "turns_collapse_ratio": 0.5,
    # agent.tool_failures (findings-v4.md): tail failure share >= 30%, or rising from < 10% (ours: to >= 20%, twice
    # the 10% line, so that noise around 10% is no rise)
    "tool_fail_share": 0.30,
    "tool_fail_head_max": 0.10,
    "tool_fail_rise_to": 0.20,
    # run.stopped_early / run.in_progress: last step < 90% of the planned total; newest file 15 minutes old
    "stopped_share": 0.90,
    "stale_minutes": 15,
    # ... but not when 3 or more files all share one modification time within 2 s (ours): a copy, a git clone or an
    # extracted archive writes every file at once, a training run writes its config first and its logs as it goes
    "copy_mtime_spread_seconds": 2.0,
    # a filter-threshold suggestion keeps at least half of the boundary-band questions the current thresholds keep:
    # the BAR-RAG seed (5.4) tightens the unsolvable threshold "a little" to bring the band share to 25-35%; meeting
    # it by dropping every band question below 0.5 (unsolvable 0.0 -> 0.5) is not a little (issue 37)
    "suggest_band_keep_min": 0.5,
    # suggestion targets (findings.md, Definitions)
    "target_band_share_lo": 0.25,
    "target_band_share_hi": 0.35,
    # data.parse_errors: how many locations the evidence lists (ours)
    "parse_error_examples": 5,
    # causal chains (findings/chains.py): a cause's onset may lag its consequence's by this share of the run's steps
    # (ours: both onsets are first steps of rolling means, whose windows differ by up to 5% of the steps each)
    "chain_onset_slack": 0.10,
    # `triage compare`: curves part where their smoothed difference stays beyond k times the runs' combined
    # step-to-step noise (ours: 3 sigma), smoothed over 5% of the steps (at least 3)
    "compare_noise_k": 3.0,
    "compare_window_fraction": 0.05,
    "compare_min_window": 3,
    # `triage compare BEFORE AFTER`, `compare_rounds`: a quantity moved when its change in the right direction is
    # beyond k standard errors of the difference (ours: 2, about 95% two-sided for normal errors)
    "before_after_noise_k": 2.0,
}
# thresholds read by views (and the engine's chains) rather than by a finding rule
VIEW_THRESHOLDS = frozenset({"compare_noise_k", "compare_window_fraction", "compare_min_window", "chain_onset_slack",
                             "before_after_noise_k"})
# thresholds read when the life cycle is decided (runs/lifecycle.py, through facts.resolve), before any rule
LIFECYCLE_THRESHOLDS = frozenset({"copy_mtime_spread_seconds"})


# Counts, windows and bin numbers: whole numbers in these ranges (a huge ece_bins would allocate and loop
# for minutes). Every other threshold must be finite and at most 1e6 in size.
INT_RANGES: dict[str, tuple[int, int]] = {
    "min_rollouts": (1, 10_000), "rollouts_high": (0, 10_000), "calibration_min_interval": (1, 10**9),
    "ece_bins": (1, 1000), "parse_error_examples": (0, 100), "head_tail_min_points": (1, 1000),
    "min_series_steps": (1, 10**6), "flat_min_steps": (1, 10**6), "kl_window": (1, 10_000),
    "grad_spike_history": (1, 10**6), "flat_discrete_levels": (2, 1000), "overfit_min_points": (2, 10**6),
    "not_learning_min_step": (0, 10**9), "degenerate_min_samples": (1, 10**9), "flat_validation_points": (2, 10**6),
    "resume_window": (1, 10_000), "compare_min_window": (1, 10**6), "min_candidates": (1, 10**9),
    "drift_min_samples": (1, 10**9), "grad_spike_high_count": (1, 10**6), "stale_minutes": (0, 10**6),
}
MAX_ABS = 1e6

EPS = 1e-9  # data like 0.6 - 0.5 must meet a 0.10 threshold, as it does on paper


def head_tail_window(n: int, rules: Thresholds) -> int:
    """How many of a series' n points a head or tail window holds: the first/last head_tail_fraction of them, at
    least head_tail_min_points (never more than n)."""
    return min(n, max(int(rules["head_tail_min_points"]), math.ceil(float(rules["head_tail_fraction"]) * n)))


def ge(x: float, threshold: float) -> bool:
    return x >= threshold - EPS


def gt(x: float, threshold: float) -> bool:
    return x > threshold + EPS


@dataclass(frozen=True)
class Thresholds:
    """A run's thresholds: DEFAULTS with its `[rules]` applied (`rules_for`), read by name."""

    values: Mapping[str, Any]

    def __getitem__(self, name: str) -> Any:
        return self.values[name]


def _valid(name: str, value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return False
    if name in INT_RANGES:
        lo, hi = INT_RANGES[name]
        return float(value).is_integer() and lo <= value <= hi
    return abs(value) <= MAX_ABS


def rules_for(overrides: Mapping[str, Any] | None) -> tuple[Thresholds, list[str]]:
    """Defaults with a run's `[rules]` applied; unknown names and values out of range are reported, not applied."""
    values = dict(DEFAULTS)
    unknown = []
    for name, value in (overrides or {}).items():
        if name in DEFAULTS and _valid(name, value):
            values[name] = int(value) if name in INT_RANGES else value
        else:
            unknown.append(str(name)[:80])
    return Thresholds(values), unknown
