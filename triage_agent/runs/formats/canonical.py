"""Trainer metric names -> the canonical names the analyses use.

Sources: TRL GRPOTrainer logs `reward`, `reward_std`, `frac_reward_zero_std`,
`completions/clipped_ratio`, `completions/mean_length` (older: `completion_length`),
`kl`, `entropy`, `rewards/<fn>/mean` (older: `rewards/<fn>`); verl's metric dict
(verl/trainer/ppo/metric_utils.py) uses `critic/score/mean`, `critic/rewards/mean`,
`response_length/mean`, `response_length/clip_ratio`, `actor/entropy`, `actor/kl_loss`.
TensorBoard tags from the HF Trainer carry a `train/` prefix.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

ALIASES: dict[str, tuple[str, ...]] = {
    "reward": ("reward", "critic/score/mean", "critic/rewards/mean", "env/reward_mean", "objective/scores",
               "rewards/mean"),
    "reward_std": ("reward_std", "critic/score/std"),
    "frac_reward_zero_std": ("frac_reward_zero_std",),
    "clipped_ratio": ("completions/clipped_ratio", "response_length/clip_ratio"),
    "completion_length": ("completions/mean_length", "completion_length", "response_length/mean"),
    "kl": ("kl", "objective/kl", "actor/kl_loss", "critic/kl", "actor/ppo_kl"),
    "entropy": ("entropy", "actor/entropy", "objective/entropy"),
    "loss": ("loss", "actor/pg_loss"),
}
_COMPONENT = re.compile(r"^rewards/(?P<fn>[^/]+?)(?:/mean)?$")
_PREFIXES = ("train/", "train_")


def strip_prefix(key: str) -> str:
    for p in _PREFIXES:
        if key.startswith(p) and key != p:
            return key[len(p):]
    return key


def canonicalize(rows: list[dict[str, Any]]) -> tuple[pd.DataFrame, list[str]]:
    """Rows of raw trainer metrics -> (frame with `step`, canonical metrics and `rc:<fn>` components, raw keys)."""
    frame = pd.DataFrame.from_records(rows)
    if frame.empty or "step" not in frame.columns:
        return pd.DataFrame(), []
    frame = frame.rename(columns={c: strip_prefix(c) for c in frame.columns})
    frame = frame.loc[:, ~frame.columns.duplicated()]
    out = pd.DataFrame({"step": pd.to_numeric(frame["step"], errors="coerce")})
    for canon, names in ALIASES.items():
        for name in names:
            if name in frame.columns:
                out[canon] = pd.to_numeric(frame[name], errors="coerce")
                break
    for col in frame.columns:
        m = _COMPONENT.match(col)
        if m and not col.endswith("/std") and m.group("fn") not in ("mean", "std"):
            name = m.group("fn")
            if f"rc:{name}" not in out.columns or col.endswith("/mean"):
                out[f"rc:{name}"] = pd.to_numeric(frame[col], errors="coerce")
    out = out.dropna(subset=["step"]).sort_values("step", kind="stable").reset_index(drop=True)
    out["step"] = out["step"].astype("int64")
    return out, [str(c) for c in frame.columns]
