"""What-if: recompute a run's own numbers under changed thresholds and weights."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from triage_agent.analysis.filter import expected_kept, in_band
from triage_agent.analysis.rewards import shares_from_cov


@dataclass(frozen=True)
class FilterOutcome:
    easy_threshold: float | None
    unsolvable_threshold: float | None
    kept: int
    band_share_after_filter: float
    band_kept: int = 0  # boundary-band questions the filter keeps


def filter_outcome(acc: np.ndarray, band: tuple[float, float], easy: float | None,
                   unsolvable: float | None) -> FilterOutcome:
    keep = expected_kept(acc, easy, unsolvable)
    kept = int(keep.sum())
    band_kept = int((in_band(acc, band) & keep).sum())
    share = float(band_kept / kept) if kept else 0.0
    return FilterOutcome(easy, unsolvable, kept, share, band_kept)


GRID = [round(x * 0.05, 2) for x in range(21)]  # human-sized threshold steps


def search_thresholds(acc: np.ndarray, band: tuple[float, float], easy: float | None, unsolvable: float | None,
                      target: tuple[float, float], min_band_kept: int = 0) -> FilterOutcome:
    """Thresholds on a 0.05 grid that bring the band share into `target` keeping the most questions, among the
    pairs that keep at least `min_band_kept` boundary-band questions (a change "a little": the BAR-RAG seed, 5.4,
    never meets the share by dropping a whole side of the band).

    When no pair reaches the target, the pair whose share is closest to it. Ties go to the
    pair nearest the current thresholds, so the change is as small as it can be.
    """
    lo_t, hi_t = target
    easy_values: list[float | None] = list(GRID) if easy is not None else [None]
    unsolvable_values: list[float | None] = list(GRID) if unsolvable is not None else [None]
    best: tuple[tuple[float, ...], FilterOutcome] | None = None
    for e in easy_values:
        for u in unsolvable_values:
            if e is not None and u is not None and u >= e:
                continue
            out = filter_outcome(acc, band, e, u)
            if out.kept == 0 or out.band_kept < min_band_kept:
                continue
            miss = max(lo_t - out.band_share_after_filter, out.band_share_after_filter - hi_t, 0.0)
            moved = abs((e or 0.0) - (easy or 0.0)) + abs((u or 0.0) - (unsolvable or 0.0))
            key = (round(miss, 9), -out.kept, moved)
            if best is None or key < best[0]:
                best = (key, out)
    if best is None:  # nothing keeps enough of the band: the thresholds as they are
        return filter_outcome(acc, band, easy, unsolvable)
    return best[1]


@dataclass(frozen=True)
class WeightChange:
    key: str
    to: float
    shares: dict[str, float]


def search_boundary_weight(cov: np.ndarray, comps: list[str], weights: Mapping[str, float], boundary: str,
                           min_share: float, max_ratio: float, ratio_key: str | None) -> WeightChange | None:
    """The smallest single-weight change (relative) that lifts the boundary share to `min_share`.

    Candidates: raise the boundary weight, or lower any other weight; the result must also
    bring `ratio_key / boundary` below `max_ratio`.
    """
    best: tuple[float, WeightChange] | None = None
    for comp in comps:
        old = float(weights[comp])
        if comp == boundary:
            values = [round(old * (1 + 0.05 * k), 4) for k in range(1, 400)]
        else:
            values = [round(old * (1 - 0.05 * k), 4) for k in range(1, 21)]
        for v in values:
            trial = dict(weights)
            trial[comp] = max(v, 0.0)
            shares = shares_from_cov(cov, comps, trial)
            ratio_ok = True
            if ratio_key and ratio_key in trial and trial.get(boundary, 0) > 0:
                ratio_ok = trial[ratio_key] / trial[boundary] < max_ratio
            if shares.get(boundary, 0.0) >= min_share and ratio_ok:
                change = abs(v - old) / old if old else float("inf")
                if best is None or change < best[0]:
                    best = (change, WeightChange(comp, trial[comp], shares))
                break
    return best[1] if best else None
