"""Per-step trainer series: head/tail means, rolling means, spikes, crossings (spec: trainer-findings.md).

Pure functions over arrays. **Head** and **tail** are the means over the first and the last 20% of a
series' logged steps, at least 3 points each.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from triage_agent import lazy
from triage_agent.analysis.stats import curve_steps, downsample, spearman

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy.module("pandas")


@dataclass(frozen=True)
class Series:
    """One canonical series: finite values at their steps, where it came from, and its raw name."""

    name: str
    steps: np.ndarray
    values: np.ndarray
    source: str
    raw: str | None = None

    @property
    def n(self) -> int:
        return len(self.values)

    @classmethod
    def finite(cls, name: str, steps: np.ndarray, values: np.ndarray, source: str,
               raw: str | None = None) -> Series | None:
        """The points where both step and value are finite (steps as integers); None when there is none."""
        ok = np.isfinite(values) & np.isfinite(steps)
        if not ok.any():
            return None
        return cls(name, steps[ok].astype(np.int64), values[ok], source, raw)


def head_tail(values: np.ndarray, fraction: float = 0.2, min_points: int = 3) -> tuple[float, float]:
    """(head mean, tail mean): the first and last `fraction` of the points, at least `min_points` each."""
    k = max(min_points, math.ceil(fraction * len(values)))
    k = min(k, len(values))
    return float(values[:k].mean()), float(values[-k:].mean())


def rolling_mean(values: np.ndarray, window: int) -> np.ndarray:
    """Trailing means over `window` points (the first window-1 points average what there is)."""
    if len(values) == 0:
        return values.astype(float)
    c = np.cumsum(np.concatenate(([0.0], values.astype(float))))
    idx = np.arange(1, len(values) + 1)
    lo = np.maximum(idx - window, 0)
    out: np.ndarray = (c[idx] - c[lo]) / (idx - lo)
    return out


def spikes_and_medians(values: np.ndarray, ratio: float, floor: float, min_history: int,
                       skip_zero: bool = False) -> tuple[list[int], np.ndarray]:
    """Indexes whose value exceeds `ratio` x the median of all values before it (at least `min_history`
    of them) and `floor`, and the running median each index is held to (NaN before any value; its prefix
    median, so a caller needs no np.median per spike: 20,000 spikes in 125,000 steps took 17 s that way).
    The running median is pandas' expanding median (a skiplist in C: 200,000 points in ~0.1 s, where two heaps
    in Python took a second); a NaN counts as no value. With `skip_zero`, values of exactly 0 count as no value either:
    they stay out of the median and the history (a gradient norm of 0 is a step with nothing to learn, not a
    small gradient: a median of 0 would make any later step a spike)."""
    v = np.asarray(values, dtype=float)
    if len(v) <= min_history:
        return [], np.full(len(v), np.nan)
    seen = np.where(v == 0.0, np.nan, v) if skip_zero else v
    before = expanding_median(seen)  # the median of v[:i + 1]
    median = np.r_[np.nan, before[:-1]]  # of v[:i]: the values before i
    with np.errstate(invalid="ignore"):
        hit = (v > ratio * median) & (v > floor)
    if skip_zero:  # at least min_history values (not zeros) before it
        hit &= np.r_[0, np.cumsum(~np.isnan(seen))[:-1]] >= min_history
    else:
        hit[:min_history] = False
    return np.flatnonzero(hit).tolist(), median


SHORT_SERIES = 2048  # points up to which the expanding median is kept in a sorted list (pandas costs ~0.3 ms a call)


def expanding_median(values: np.ndarray) -> np.ndarray:
    """pandas' `Series.expanding().median()`: at each i the median of the finite values[:i + 1] (pandas leaves
    infinities out too; NaN while there is none; the mean of the two middle ones for an even count). A short
    series is kept in a sorted list (bisect: O(n²) moves, nothing for a few thousand points), a long one goes to
    pandas' skiplist; a test holds the two equal."""
    if len(values) > SHORT_SERIES:
        long: np.ndarray = pd.Series(values).expanding().median().to_numpy()
        return long
    out = np.full(len(values), np.nan)
    kept: list[float] = []
    for i, x in enumerate(values.tolist()):
        if math.isfinite(x):
            bisect.insort(kept, x)
        k = len(kept)
        if k:
            out[i] = kept[k // 2] if k % 2 else (kept[k // 2] + kept[k // 2 - 1]) / 2
    return out


def first_step(steps: np.ndarray, mask: np.ndarray) -> int | None:
    """The first step where `mask` holds, or None."""
    idx = np.flatnonzero(mask)
    return int(steps[idx[0]]) if len(idx) else None


@dataclass(frozen=True)
class SeriesSummary:
    """What the views and tools show of a series: raw first and last, head/tail means, range, curve."""

    name: str
    n: int
    first: float
    last: float
    head: float
    tail: float
    min: float
    max: float
    min_step: int
    max_step: int
    first_step: int
    last_step: int
    rho_step: float | None
    curve: list[float]
    curve_steps: list[int]  # the first step of each curve point's bucket


def summarize(s: Series, fraction: float = 0.2, min_points: int = 3, points: int = 40) -> SeriesSummary:
    head, tail = head_tail(s.values, fraction, min_points)
    i_min, i_max = int(np.argmin(s.values)), int(np.argmax(s.values))
    return SeriesSummary(s.name, s.n, float(s.values[0]), float(s.values[-1]), head, tail,
                         float(s.values[i_min]), float(s.values[i_max]), int(s.steps[i_min]), int(s.steps[i_max]),
                         int(s.steps[0]), int(s.steps[-1]), spearman(s.steps, s.values), downsample(s.values, points),
                         curve_steps(s.steps, s.values, points))


def noise(values: np.ndarray) -> float:
    """The series' step-to-step noise: the standard deviation of its first differences over sqrt(2), which is
    the per-point standard deviation of white noise around a slowly moving level (0 for fewer than 3 points)."""
    if len(values) < 3:
        return 0.0
    return float(np.std(np.diff(values.astype(float))) / math.sqrt(2))


def start_mean(values: np.ndarray, points: int = 3) -> float:
    """The mean of the run's first `points` values: its start, before any early event."""
    return float(values[:max(1, points)].mean())


def baseline(values: np.ndarray, head: float, points: int, window: int, ratio: float,
             falling: bool) -> tuple[float, str]:
    """What a collapse (`falling`) or an explosion is judged against: the head mean, or the run's start (the
    mean of its first `points` values) when the event already completed inside the head window (its first
    `window` values): their rolling mean crossed `ratio` x the start there, so the head mean holds the collapsed
    (or exploded) values and understates the change (post-training-findings.md, early events)."""
    start = start_mean(values, points)
    early = rolling_mean(values[:window], points)[points - 1:] if window >= points else values[:0]
    if len(early) and start > 0 and (bool((early <= ratio * start).any()) if falling
                                     else bool((early >= ratio * start).any())):
        return start, "start"
    first, rest = float(values[0]), values[1:]
    # the event at the second point: every later value beyond `ratio` x the first (NeMo-RL's first weight refit
    # took a run's entropy from 0.20 to 11.1 at step 2 and held it there; batch E)
    if len(rest) >= points and first > 0 and (bool((rest <= ratio * first).all()) if falling
                                               else bool((rest >= ratio * first).all())):
        return first, "first"
    return head, "head"


def rise_z(head: np.ndarray, tail: np.ndarray) -> float | None:
    """Welch's z for tail mean above head mean: (tail - head) / sqrt(var_h / n_h + var_t / n_t). Suits a reward
    with a few discrete levels, whose p95-p5 spread says little. None when both windows are constant."""
    if len(head) < 2 or len(tail) < 2:
        return None
    se = math.sqrt(float(np.var(head, ddof=1)) / len(head) + float(np.var(tail, ddof=1)) / len(tail))
    if se == 0:
        return None
    return float((tail.mean() - head.mean()) / se)


def mode_share(values: np.ndarray) -> tuple[float, float]:
    """(the most frequent value, the share of points at it)."""
    vals, counts = np.unique(values, return_counts=True)
    i = int(np.argmax(counts))
    return float(vals[i]), float(counts[i] / len(values))
