"""The pre-training filter: band shares before/after, the accuracy histogram, rule consistency."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from triage_agent import lazy
from triage_agent.analysis.stats import histogram

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy.module("pandas")


@dataclass(frozen=True)
class FilterAudit:
    band: tuple[float, float]
    n_total: int
    n_kept: int | None
    band_before: int
    band_after: int | None
    share_before: float
    share_after: float | None
    hist_before: list[int]
    hist_after: list[int] | None
    drop_reasons: dict[str, int]


def in_band(acc: np.ndarray, band: tuple[float, float]) -> np.ndarray:
    lo, hi = band
    eps = 1e-9  # accuracies are k/n; 0.6 must count as inside [0.4, 0.6]
    return (acc >= lo - eps) & (acc <= hi + eps)


def audit(frame: pd.DataFrame, band: tuple[float, float]) -> FilterAudit:
    acc = frame["accuracy"].to_numpy(dtype=float)
    inb = in_band(acc, band)
    kept: np.ndarray | None = None
    if "kept" in frame.columns and frame["kept"].notna().any():
        kept = frame["kept"].fillna(False).astype(bool).to_numpy()
    reasons: dict[str, int] = {}
    if "drop_reason" in frame.columns:
        counts = frame["drop_reason"].fillna("").astype(str).str.strip().value_counts()
        reasons = {str(k): int(v) for k, v in counts.items() if k}
    n_kept = int(kept.sum()) if kept is not None else None
    band_after = int((inb & kept).sum()) if kept is not None else None
    return FilterAudit(
        band=band,
        n_total=len(acc),
        n_kept=n_kept,
        band_before=int(inb.sum()),
        band_after=band_after,
        share_before=float(inb.mean()) if len(acc) else 0.0,
        share_after=(band_after / n_kept if n_kept else 0.0) if band_after is not None else None,
        hist_before=histogram(acc),
        hist_after=histogram(acc[kept]) if kept is not None else None,
        drop_reasons=reasons,
    )


def expected_kept(acc: np.ndarray, easy: float | None, unsolvable: float | None) -> np.ndarray:
    """The config's rule: drop accuracy >= easy_threshold and accuracy <= unsolvable_threshold."""
    keep = np.ones(len(acc), dtype=bool)
    if easy is not None:
        keep &= acc < easy
    if unsolvable is not None:
        keep &= acc > unsolvable
    return keep


@dataclass(frozen=True)
class RuleCheck:
    n_checked: int
    n_mismatch: int
    rate: float
    kept_but_should_drop: int
    dropped_but_should_keep: int
    examples: list[str]


def rule_check(frame: pd.DataFrame, easy: float | None, unsolvable: float | None, k: int = 5) -> RuleCheck | None:
    if "kept" not in frame.columns or (easy is None and unsolvable is None):
        return None
    sub = frame[frame["kept"].notna()]
    acc = sub["accuracy"].to_numpy(dtype=float)
    kept = sub["kept"].astype(bool).to_numpy()
    want = expected_kept(acc, easy, unsolvable)
    mism = kept != want
    ids = sub["qid"].astype(str).to_numpy() if "qid" in sub.columns else sub["__line__"].astype(str).to_numpy()
    return RuleCheck(
        n_checked=len(acc),
        n_mismatch=int(mism.sum()),
        rate=float(mism.mean()) if len(acc) else 0.0,
        kept_but_should_drop=int((kept & ~want).sum()),
        dropped_but_should_keep=int((~kept & want).sum()),
        examples=[str(x) for x in ids[mism][:k]],
    )
