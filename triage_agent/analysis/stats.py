"""Small statistics used everywhere (no scipy: ranks and moments with numpy)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeAlias

import numpy as np

from triage_agent import lazy
from triage_agent.numbers import rounded

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy.module("pandas")

# a string: the alias is for type checking, and naming pd.Series here would import pandas with this module
ArrayLike: TypeAlias = "Sequence[float] | np.ndarray | pd.Series"


def _arr(x: ArrayLike) -> np.ndarray:
    return np.asarray(x, dtype=float)


def floats(column: pd.Series) -> np.ndarray:
    """A table column as floats, any cell that is not a number (text, a nested value) NaN: a column of round
    tables is only as numeric as the run that wrote it."""
    return pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)


def pearson(x: ArrayLike, y: ArrayLike) -> float | None:
    """Pearson r; None when either side is constant or there are fewer than 3 points."""
    a, b = _finite_pairs(_arr(x), _arr(y))
    if len(a) < 3:
        return None
    ca, cb = a - a.mean(), b - b.mean()
    sa, sb = math.sqrt(float(ca @ ca)), math.sqrt(float(cb @ cb))  # n cancels out of r
    if sa == 0 or sb == 0:
        return None
    return float(ca @ cb) / (sa * sb)


def rank(x: ArrayLike) -> np.ndarray:
    """Average ranks (ties share the mean rank), as Spearman's rho needs."""
    a = _arr(x)
    if len(a) > 1 and bool(np.all(a[1:] > a[:-1])):  # steps: already strictly increasing, ranks 1..n
        return np.arange(1, len(a) + 1, dtype=float)
    order = np.argsort(a)
    ordered = a[order]
    tied = ordered[1:] == ordered[:-1]
    ranks = np.empty(len(a))
    if not tied.any():  # distinct values (most float series): ranks without a pass for ties, in little memory
        del ordered, tied
        ranks[order] = np.arange(1.0, len(a) + 1)
        return ranks
    starts = np.flatnonzero(np.concatenate(([True], ~tied)))  # each run of equal values
    counts = np.diff(np.append(starts, len(a)))
    ranks[order] = np.repeat(starts + 1 + (counts - 1) / 2, counts)  # a tie shares its run's mean rank
    return ranks


def spearman(x: ArrayLike, y: ArrayLike) -> float | None:
    a, b = _finite_pairs(_arr(x), _arr(y))
    if len(a) < 3:
        return None
    ra, rb = rank(a), rank(b)
    # Pearson's r of the ranks from sums, without centred copies (a million steps): ranks are at most n,
    # so the sums stay exact enough in float64 (n^3 ~ 1e18 against covariances of order n^3 / 12)
    n, ma, mb = len(ra), float(ra.mean()), float(rb.mean())
    va, vb = float(ra @ ra) - n * ma * ma, float(rb @ rb) - n * mb * mb
    if va <= 0 or vb <= 0:
        return None
    return (float(ra @ rb) - n * ma * mb) / math.sqrt(va * vb)


def _finite_pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pairs where both are finite (no copy when all are: a million-step series stays one array)."""
    ok = np.isfinite(a) & np.isfinite(b)
    return (a, b) if ok.all() else (a[ok], b[ok])


def swing_ratio(x: ArrayLike) -> float | None:
    """mean |x[t] - x[t-1]| / (p95 - p5): near 0.34 for white noise, small for a smooth curve."""
    a = _arr(x)
    finite = np.isfinite(a)
    a = a if finite.all() else a[finite]
    if len(a) < 3:
        return None
    p5, p95 = np.percentile(a, [5, 95])  # one partial sort for both
    spread = float(p95 - p5)
    if spread == 0:
        return 0.0
    steps = np.diff(a)
    return float(np.mean(np.abs(steps, out=steps)) / spread)


def tail(x: ArrayLike, fraction: float) -> np.ndarray:
    """The last `fraction` of the points (at least one)."""
    a = _arr(x)
    n = max(1, math.ceil(len(a) * fraction))
    return a[-n:]


def head(x: ArrayLike, fraction: float) -> np.ndarray:
    a = _arr(x)
    n = max(1, math.ceil(len(a) * fraction))
    return a[:n]


def histogram(x: ArrayLike, bins: int = 10, lo: float = 0.0, hi: float = 1.0) -> list[int]:
    """Counts in `bins` equal-width bins over [lo, hi]; the last bin includes hi."""
    a = _arr(x)
    a = a[np.isfinite(a)]
    if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
        return [len(a)] + [0] * (bins - 1) if bins > 0 else []
    # index arithmetic instead of np.histogram's float edges, so 0.6 lands in [0.6, 0.7); halved first (exact
    # in binary floating point) so that a range as wide as +-1e308 does not overflow to inf and NaN
    frac = (np.clip(a, lo, hi) / 2 - lo / 2) / (hi / 2 - lo / 2)
    idx = np.floor(frac * bins + 1e-9).astype(int)
    return [int(c) for c in np.bincount(np.clip(idx, 0, bins - 1), minlength=bins)]


def rnd(x: float | None, digits: int = 3) -> float | None:
    """Evidence numbers: `digits` decimals, never fewer than 3 significant digits (numbers.rounded: a nonzero
    never rounds to 0); None for a missing or non-finite value."""
    return rounded(x, digits)


def curve_steps(steps: ArrayLike, x: ArrayLike, points: int = 40) -> list[int]:
    """The step axis of `downsample(x, points)`: the first step of each point's bucket (over the same finite
    values), so a 40-point curve says where each of its points lies."""
    s, a = _arr(steps), _arr(x)
    s = s[np.isfinite(a)]
    if len(s) <= points:
        return [int(v) for v in s if math.isfinite(v)]
    edges = np.linspace(0, len(s), points + 1).astype(int)
    return [int(s[edges[i]]) if math.isfinite(s[edges[i]]) else -1 for i in range(points)]


def downsample(x: ArrayLike, points: int = 40) -> list[float]:
    """Bucket means, for sparklines and bounded tool outputs."""
    a = _arr(x)
    a = a[np.isfinite(a)]
    if len(a) <= points:
        return [float(v) for v in a]
    edges = np.linspace(0, len(a), points + 1).astype(int)
    return [float(a[edges[i]:edges[i + 1]].mean()) for i in range(points)]
