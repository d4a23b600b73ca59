"""verl (volcengine/verl): Ray PPO/GRPO trainer, its fully-async and one-step-off-policy variants, and its SFT
trainers. Names read from the source at the pinned commit (tests/trainer_names/verl.json); verl logs its keys
as-is (the console prints `step:N - key:value - ...`, the `file` logger writes `{"step": N, "data": {...}}`)."""

from triage_agent.runs.trainers.profile import Profile, Source

PROFILE = Profile(
    name="verl",
    title="verl",
    source=Source(
        repo="volcengine/verl",
        commit="b178a3cd56f58b2d502255daba591e92833930a7",
        version="0.8.0.dev",
        files=(
            "verl/experimental/agent_loop/agent_loop.py",
            "verl/experimental/fully_async_policy/detach_utils.py",
            "verl/experimental/fully_async_policy/fully_async_rollouter.py",
            "verl/experimental/fully_async_policy/fully_async_trainer.py",
            "verl/trainer/fsdp_sft_trainer.py",
            "verl/trainer/ppo/core_algos.py",
            "verl/trainer/ppo/metric_utils.py",
            "verl/trainer/ppo/ray_trainer.py",
            "verl/trainer/ppo/rollout_corr_helper.py",
            "verl/trainer/sft_trainer.py",
            "verl/trainer/sft_trainer_ray.py",
            "verl/utils/debug/metrics.py",
            "verl/utils/seqlen_balancing.py",
            "verl/workers/actor/dp_actor.py",
            "verl/workers/actor/megatron_actor.py",
            "verl/workers/critic/dp_critic.py",
            "verl/workers/critic/megatron_critic.py",
            "verl/workers/engine_workers.py",
            "verl/workers/fsdp_workers.py",
            "verl/workers/megatron_workers.py",
            "verl/workers/utils/losses.py",
        ),
    ),
    names={
        # metric_utils.compute_data_metrics: the score is the reward function's sequence score, the rewards are
        # score minus the in-reward KL penalty (kept as canonical.py has them: reward and optimized_reward)
        "critic/score/mean": "reward",
        "critic/rewards/mean": "optimized_reward",
        # canonical.py's alias (and synth.py's verl runs); verl logs no score std at the pinned commit
        "critic/score/std": "reward_std",
        # ray_trainer recomputes it from the old-log-prob pass every step; dp_actor logs it per update
        "actor/entropy": "entropy",
        # workers/utils/losses.py (engine path) and older verl: the token-entropy mean itself, the entropy_coeff
        # is applied outside the logged value
        "actor/entropy_loss": "entropy",
        # the KL to the reference model: as a loss term (use_kl_loss), or as the in-reward penalty
        # (ray_trainer.apply_kl_penalty, use_kl_in_reward); `critic/kl` is the older verl name of the latter
        "actor/kl_loss": "kl",
        "actor/reward_kl_penalty": "kl",
        "critic/kl": "kl",
        # core_algos policy losses: the KL between the old and the current policy of one update
        "actor/ppo_kl": "update_kl",
        "actor/grad_norm": "grad_norm",
        "train/grad_norm": "grad_norm",
        # the policy-gradient part; `actor/loss` (engine path, engine_workers.py) is the total with KL/entropy terms
        "actor/pg_loss": "loss",
        "actor/loss": "loss",
        "train/loss": "loss",
        "response_length/mean": "length",
        "response_length_non_aborted/mean": "length",
        # share of responses whose length equals max_response_length (metric_utils.py)
        "response_length/clip_ratio": "clipped_share",
        "response_length_non_aborted/clip_ratio": "clipped_share",
        "actor/pg_clipfrac": "ratio_clip_share",
        "actor/lr": "lr",
        "train/lr": "lr",
        # rollout engine vs trainer: utils/debug/metrics.py logs the mean |p_rollout - p_actor| (a difference);
        # rollout_corr_helper.py the KL (k1, k3) and the truncated IS ratio mean
        "training/rollout_probs_diff_mean": "is_ratio",
        "rollout_corr/kl": "is_ratio",
        "rollout_corr/k3_kl": "is_ratio",
        "rollout_corr/rollout_is_mean": "is_ratio",
        "num_turns/mean": "num_turns",
        # the spellings findings-v4.md gives for verl (a newer/forked verl); not logged at the pinned commit
        "training/num_turns/mean": "num_turns",
        "training/off_policy/trajectory_staleness/mean": "staleness",
        # ray_trainer._val_metrics_update: the core variable's (acc, else reward) mean/maj/best @N
        "val-core/**": "validation",
        "val/loss": "eval_loss",
    },
    raw={
        "critic/*/max": "max of the batch; the mean is the series",
        "critic/*/min": "min of the batch; the mean is the series",
        "critic/advantages/mean": "advantage statistics (per token), not the reward",
        "critic/returns/mean": "return statistics (per token), not the reward",
        "critic/values/mean": "critic value statistics",
        "critic/vf_*": "value-function (critic) training",
        "critic/vpred_mean": "value-function (critic) training",
        "critic/loss": "value-function (critic) loss",
        "critic/grad_norm": "value-function (critic) gradient norm",
        "critic/lr": "value-function (critic) learning rate",
        "response_length*/max": "max of the batch; the mean is the series",
        "response_length*/min": "min of the batch; the mean is the series",
        "response/aborted_ratio": "share of aborted (empty) responses",
        "prompt_length/*": "prompt length, not generated tokens",
        "num_turns/max": "max of the batch; the mean is the series",
        "num_turns/min": "min of the batch; the mean is the series",
        "tool_call_counts/*": "tool calls per sample (a count, not failures)",
        "timing_s/**": "wall-clock timings",
        "timing_per_token_ms/*": "wall-clock timings per token",
        "perf/**": "throughput, MFU and memory",
        "variance_proxy/*": "gradient-variance diagnostics",
        "actor/reward_kl_penalty_coeff": "the KL coefficient (a setting)",
        "actor/kl_coef": "the KL coefficient (a setting)",
        "actor/pg_clipfrac_lower": "dual-clip share (negative advantages); actor/pg_clipfrac is the series",
        "training/global_step": "step counter",
        "training/epoch": "epoch counter",
        "mtp_losses/*": "Megatron multi-token-prediction auxiliary losses",
        "global_seqlen/*": "sequence-length balance across data-parallel ranks",
        "training/rollout_probs_diff_max": "max of the mismatch; the mean is the series",
        "training/rollout_probs_diff_std": "std of the mismatch; the mean is the series",
        "training/rollout_probs_diff_valid": "flag: the mismatch inputs were valid",
        "training/rollout_actor_probs_pearson_corr": "rollout/trainer log-prob correlation",
        "rollout_corr/rollout_rs_*": "rejection-sampling statistics of the rollout correction",
        "rollout_corr/rollout_is_batch_norm_factor": "IS weight normaliser",
        "rollout_corr/rollout_is_max": "max of the IS weights; the mean is the series",
        "rollout_corr/rollout_is_min": "min of the IS weights; the mean is the series",
        "rollout_corr/rollout_is_std": "std of the IS weights",
        "rollout_corr/rollout_is_ratio_fraction_*": "share of IS weights beyond the thresholds",
        "rollout_corr/rollout_is_eff_sample_size": "effective sample size of the IS weights",
        "rollout_corr/rollout_is_seq_*": "sequence-level IS weight statistics",
        "rollout_corr/*ppl*": "rollout/trainer perplexities and their differences",
        "rollout_corr/chi2_*": "chi-square divergence of rollout vs trainer",
        "fully_async/**": "fully-async pipeline counters, queue sizes, settings and timings",
        "rollouter/*": "fully-async rollouter timings and idle share",
        "trainer/*": "fully-async trainer timings and idle share",
        "train/lr(1e-3)": "the learning rate times 1e3 (fsdp_sft_trainer.py)",
        "train/time(s)": "wall-clock time per step",
        "train/mfu": "model FLOPs utilisation",
        "train/global_tokens": "tokens per step",
        "train/total_tokens(B)": "cumulative tokens (billions)",
        "val-aux/**": "auxiliary validation statistics (std, worst@N, other variables, turns)",
    },
    banners=("step:", "Training Progress", "Total training steps:", "Size of train dataloader:",
             "Creating file logger at", "Dumped generations to", "local_global_step_folder:"),
    files=("latest_checkpointed_iteration.txt",),
    config_keys=("actor_rollout_ref", "actor_rollout_ref.rollout.n", "actor_rollout_ref.actor.ppo_mini_batch_size",
                 "algorithm.use_kl_in_reward", "trainer.critic_warmup", "reward_model.launch_reward_fn_async"),
    plan_keys=("trainer.total_training_steps", "total_training_steps"),
    plan_lines=(r"Total training steps: (?P<total>\d+)",
                # fsdp_sft_trainer.py
                r"total number of steps (?P<total>\d+)"),
    paradigm_names={"critic/score/mean": "policy_gradient", "critic/rewards/mean": "policy_gradient",
                    "actor/pg_loss": "policy_gradient", "actor/ppo_kl": "policy_gradient",
                    "response_length/mean": "policy_gradient",
                    "critic/*": "policy_gradient", "actor/*": "policy_gradient", "response_length/*": "policy_gradient",
                    "rollout_corr/*": "policy_gradient", "train/*": "sft"},
    # what verl runs are when nothing else tells (paradigm.py's _RL_TRAINERS); its SFT trainers log `train/*`
    paradigm="policy_gradient",
    agentic_names=("num_turns/*", "tool_call_counts/*", "timing_s/agent_loop/tool_calls/*", "val-aux/num_turns/*",
                   "training/num_turns/*"),
    # a log's head: its config dump, its Ray task runner, its package name (first on a line that names several)
    # `(TaskRunner pid=...)`: its Ray actor's prefix, never AReaL's `AsyncTaskRunner`
    detect=(r"actor_rollout_ref", r"verl\.trainer", r"\bTaskRunner\b", r"\bverl\b"),
    rank=1,
    # ray_trainer.fit after the last step
    done_lines=(r"Final validation metrics",),
)
