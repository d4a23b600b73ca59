"""TRL (huggingface/trl): GRPO, RLOO, DPO, KTO, SFT, Reward and the experimental trainers (PPO, Online DPO,
Nash-MD, XPO, CPO, ORPO, BCO, TPO, GKD, distillation, async GRPO, ...). Every trainer averages its `_metrics[mode]`
at `log()` time and hands them to transformers' `Trainer.log`; eval passes prefix them with `eval_`.

Names read from the source at the pinned commit (tests/trainer_names/trl.json). The loss, gradient norm, learning
rate and epoch come from transformers' `Trainer` (see the `transformers` profile) and are mapped here as well.
"""

from triage_agent.runs.trainers.profile import Profile, Source

_FILES = (
    "trl/experimental/a2po/a2po_trainer.py",
    "trl/experimental/async_grpo/async_grpo_trainer.py",
    "trl/experimental/async_grpo/async_rollout_worker.py",
    "trl/experimental/bco/bco_trainer.py",
    "trl/experimental/cpo/cpo_trainer.py",
    "trl/experimental/distillation/distillation_trainer.py",
    "trl/experimental/gold/gold_trainer.py",
    "trl/experimental/iw_opd/iw_opd_trainer.py",
    "trl/experimental/nash_md/nash_md_trainer.py",
    "trl/experimental/online_dpo/online_dpo_trainer.py",
    "trl/experimental/orpo/orpo_trainer.py",
    "trl/experimental/ppo/ppo_trainer.py",
    "trl/experimental/sdft/sdft_trainer.py",
    "trl/experimental/sdpo/sdpo_trainer.py",
    "trl/experimental/ssd/ssd_trainer.py",
    "trl/experimental/xpo/xpo_trainer.py",
    "trl/extras/profiling.py",
    "trl/trainer/dpo_trainer.py",
    "trl/trainer/grpo_trainer.py",
    "trl/trainer/reward_trainer.py",
)

PROFILE = Profile(
    name="trl",
    title="TRL",
    source=Source("huggingface/trl", "f2cd57710ae345ea6428ae95363267fcf38a3dc8", "1.10.0.dev0", files=_FILES),
    names={
        # --- policy-gradient (GRPO, RLOO, async GRPO, A2PO, SDPO) ---
        "reward": "reward",  # weighted sum of the reward functions, batch mean (grpo_trainer.py)
        "self_distillation/reward_mean": "reward",  # sdpo_trainer.py
        # PPO / Online DPO: `objective/scores` is the reward model's score (canonical.py maps it to reward, as verl's
        # critic/score/mean); `objective/rlhf_reward` is score minus the KL penalty, the optimised reward (ppo_trainer.py)
        "objective/scores": "reward",
        "objective/model_scores": "reward",  # XPO: the reward model's score of the policy's completions (xpo_trainer.py)
        "env/reward_mean": "reward",  # legacy PPOTrainer (TRL < 0.12), kept from canonical.py
        "objective/rlhf_reward": "optimized_reward",
        "reward_std": "reward_std",
        "self_distillation/reward_std": "reward_std",
        "frac_reward_zero_std": "zero_std_share",
        # share of groups whose reward std is within tolerance (sdpo_trainer.py)
        "self_distillation/flat_group_fraction": "zero_std_share",
        "rewards/*/mean": "component",  # rewards/{reward_func_name}/mean (grpo_trainer.py, rloo_trainer.py)
        "self_distillation/rewards/*": "component",  # sdpo_trainer.py
        # --- preference (DPO, KTO, CPO, ORPO, BCO, TPO, Online DPO, Nash-MD, XPO): canonical.py's PREFERENCE ---
        "rewards/accuracies": "pref_accuracy",
        # Nash-MD's mean preference probability of the policy over the mixture; rewards/accuracies (logged with it)
        # is its thresholded share and wins (nash_md_trainer.py)
        "rewards/probabilities": "pref_accuracy",
        "rewards/margins": "pref_margin",
        "rewards/chosen": "pref_chosen",
        "rewards/rejected": "pref_rejected",
        "logps/chosen": "logps_chosen",
        "logps/rejected": "logps_rejected",
        "log_odds_ratio": "log_odds_ratio",
        # after the preference names: async GRPO's per-sample `rewards/{name}` (async_rollout_worker.py), and the
        # `rewards/<fn>` of older GRPOTrainer versions
        "rewards/*": "component",
        # --- reward model (RewardTrainer): pairwise accuracy and mean chosen-minus-rejected margin ---
        "accuracy": "rm_accuracy",
        "margin": "rm_margin",
        # --- shared ---
        "entropy": "entropy",
        "objective/entropy": "entropy",
        "policy/entropy_avg": "entropy",  # PPO: entropy of the update's minibatches (ppo_trainer.py)
        "kl": "kl",  # GRPO/RLOO: KL to the reference model (beta != 0); KTO: its KL reference point (kto_trainer.py)
        "objective/kl": "kl",
        "loss/kl": "kl",  # Nash-MD: policy-vs-reference KL term (nash_md_trainer.py)
        "policy/approxkl_avg": "update_kl",  # PPO: approx KL of one update (ppo_trainer.py)
        "clip_ratio/region_mean": "ratio_clip_share",  # low or high clipped tokens (grpo_trainer.py)
        "clip_ratio": "ratio_clip_share",  # the Liger GRPO loss's clip fraction (grpo_trainer.py)
        "cispo_clip_ratio": "ratio_clip_share",  # loss_type="cispo" (grpo_trainer.py)
        "policy/clipfrac_avg": "ratio_clip_share",  # PPO (ppo_trainer.py)
        "completions/mean_length": "length",
        "completions/on_policy_mean_length": "length",  # IW-OPD: generated (on-policy) completions (iw_opd_trainer.py)
        "completion_length": "length",  # legacy GRPOTrainer name, kept from canonical.py
        "completions/clipped_ratio": "clipped_share",  # completions whose last token is neither EOS nor pad
        "completions/truncated_fraction": "clipped_share",  # completions that reached max_new_tokens (distillation)
        # rollout-engine (vLLM) vs trainer: the IS ratio first, then the mean absolute log-prob difference
        "sampling/importance_sampling_ratio/mean": "is_ratio",
        "sampling/sampling_logp_difference/mean": "is_ratio",
        "tools/failure_frequency": "tool_failure_share",  # failed tool calls / tool calls (grpo_trainer.py)
        "loss": "loss",
        "loss/policy_avg": "loss",  # PPO logs no `loss` of its own (ppo_trainer.py)
        "policy_loss": "loss",  # GRPO with an entropy bonus: the loss before the bonus (grpo_trainer.py)
        "grad_norm": "grad_norm",
        "learning_rate": "lr",
        "lr": "lr",  # PPO (ppo_trainer.py)
        # --- held out (eval_ prefix added by every trainer's log()) ---
        "eval_loss": "eval_loss",
        "eval_reward": "validation",
        "eval_rewards/accuracies": "validation",
        "eval_accuracy": "validation",  # RewardTrainer on the eval set
        "eval_mean_token_accuracy": "validation",
    },
    raw={
        "eval_**": "the eval pass's copy of a training metric (every TRL trainer prefixes eval metrics with eval_)",
        "rewards/*/std": "a reward function's spread within the batch; its /mean is the component",
        "completions/*_length": "min/max/terminated completion lengths; completions/mean_length is the series",
        "completions/off_policy_*_length": "IW-OPD: lengths of the dataset's (off-policy) completions",
        "completions/on_policy_*_length": "IW-OPD: min/max of on-policy lengths; the mean is the series",
        "clip_ratio/*": "one side of the ratio clipping (low/high) or a per-rank extreme; region_mean is the series",
        "sampling/*/min": "min of the batch; the mean is the series",
        "sampling/*/max": "max of the batch; the mean is the series",
        "mean_reward": "RewardTrainer: mean score over chosen and rejected together, neither rm_chosen nor rm_rejected",
        "min_reward": "RewardTrainer: min score of the batch",
        "max_reward": "RewardTrainer: max score of the batch",
        "self_distillation/reward_min": "min of the batch; reward_mean is the series",
        "self_distillation/reward_max": "max of the batch; reward_mean is the series",
        "self_distillation/group_reward_std_mean": "mean within-group std (reward_std is the batch's)",
        "self_distillation/*": "SDPO/SDFT self-distillation bookkeeping: success/feedback/reprompt shares, its losses, "
                               "student-vs-server-teacher log-prob gap",
        "sdpo/distillation_loss": "SDPO's distillation loss (a KL or JSD by distillation_mode), per-trainer copy",
        "sdft/distillation_loss": "SDFT's distillation loss (a KL or JSD by distillation_mode), per-trainer copy",
        "tools/call_frequency": "tool calls per completion (a rate, not a failure share)",
        "num_tokens": "cumulative tokens seen (a counter)",
        "step_time": "wall-clock seconds of one optimizer step",
        "aux_loss": "MoE router auxiliary loss",
        "entropy_coef": "the (adaptive) entropy-bonus coefficient",
        "vespo/phi_seq_mean": "VESPO's sequence weight",
        "mean_token_accuracy": "next-token accuracy on the training batch (SFT/DPO/TPO), not a pass rate",
        "logits/*": "mean logits of chosen/rejected",
        "nll_loss": "CPO/ORPO: the SFT (NLL) part of the loss",
        "log_odds_chosen": "ORPO: mean log-odds of chosen; log_odds_ratio is the series",
        "delta": "BCO: running mean of the implicit rewards (its baseline)",
        "objective/non_score_reward": "the KL penalty part of the PPO/Online-DPO reward",
        "objective/scores_margin": "reward-model score margin between the two completions",
        "objective/ref_scores": "XPO: the reward model's score of the reference model's completions",
        "loss/*": "parts of the loss (value loss, DPO/XPO/score terms)",
        "val/*": "PPO value-function stats, ratio mean/var, EOS counts and shares",
        "beta": "the KL/DPO coefficient (may be scheduled)",
        "alpha": "XPO's exploration coefficient",
        "mixture_coef": "Nash-MD's mixture coefficient",
        "eps": "PPO: episodes per second",
        "episode": "PPO: episodes so far (a counter)",
        "v_star": "A2PO: the estimated optimal value V*",
        "implicit_reward": "A2PO: beta2 * log(pi / pi_ref), regressed onto the advantage",
        "advantage": "A2PO: mean regression target r - V*",
        "on_policy_loss": "GOLD/IW-OPD: the loss on on-policy batches (a part of loss)",
        "off_policy_loss": "GOLD/IW-OPD: the loss on off-policy batches (a part of loss)",
        "matched_loss": "GOLD: the loss on tokens matched across tokenizers",
        "unmatched_loss": "GOLD: the loss on unmatched tokens",
        "iw_opd/*": "IW-OPD importance weights and advantages",
        "ssd/*": "SSD: active-sample share and its cross-entropy loss",
        "ratio": "async GRPO: mean policy ratio of the update",
        "training_tok/s": "throughput",
        "generation_tok_per_s": "throughput",
        "forward_time_s": "wall-clock timing",
        "weight_sync_time_s": "wall-clock timing",
        "queue_wait_time_s": "wall-clock timing",
        "scoring_time_ms": "wall-clock timing",
        "wait_scoring_ms": "wall-clock timing",
        "train_seq_len": "packed sequence length of the step",
        "buffer_qsize": "rollout queue size (a counter)",
        "profiling/*": "wall-clock timings (profiling/Time taken: <method>)",
    },
    # console: PPOTrainer's own line, and the `Step N` panel of print_prompt_completions_sample (trainer/utils.py)
    banners=("===training policy===",),
    files=("completions/completions_*.parquet", "entropy_ctrl_state.json", "running.json"),
    config_keys=("num_generations", "max_completion_length", "vllm_importance_sampling_correction", "scale_rewards",
                 "mask_truncated_completions", "steps_per_generation", "precompute_ref_log_probs",
                 "center_rewards_coefficient", "desirable_weight", "undesirable_weight", "completion_only_loss",
                 "assistant_only_loss", "dataset_text_field", "num_completions_to_print", "total_episodes"),
    # max_steps is transformers' TrainingArguments; PPO writes its plan to num_total_batches (ppo_trainer.py)
    plan_keys=("max_steps", "num_total_batches"),
    # printed by transformers' Trainer, which every TRL trainer is (with a thousands separator: 1,000)
    plan_lines=(r"Total optimization steps = (?P<total>[\d,]+)",),
    paradigm_names={
        "rewards/chosen": "preference", "rewards/rejected": "preference", "rewards/margins": "preference",
        "rewards/accuracies": "preference", "logps/chosen": "preference", "logps/rejected": "preference",
        "log_odds_ratio": "preference", "log_odds_chosen": "preference",
        "reward": "policy_gradient", "reward_std": "policy_gradient", "frac_reward_zero_std": "policy_gradient",
        "completions/mean_length": "policy_gradient", "rewards/*/mean": "policy_gradient",
        "objective/rlhf_reward": "policy_gradient", "policy/approxkl_avg": "policy_gradient",
        "objective/scores": "policy_gradient", "completion_length": "policy_gradient",
        # SFTTrainer's own (sft_trainer.py); GRPO logs num_tokens too, but its reward names decide first
        "mean_token_accuracy": "sft", "num_tokens": "sft",
        # RewardTrainer (reward_trainer.py); its `accuracy`, `mean_reward`, `min_reward` and `max_reward` are left out:
        # custom policy-gradient loops log them too (batch D's phi-2 self-play PPO run logs `train/max_reward`)
        "margin": "reward_model",
        "on_policy_loss": "distillation", "completions/truncated_fraction": "distillation",
        "iw_opd/*": "distillation",
    },
    agentic_names=("tools/call_frequency", "tools/failure_frequency"),
    # builds on transformers: ranks after the trainers built on it (Unsloth, LLaMA-Factory, ms-swift), before it
    detect=(r"(?i:GRPOTrainer)", r"(?i:PPOTrainer)", r"(?i:\btrl\b)"),
    rank=7,
)
