"""Small statistics used everywhere (no scipy: ranks and moments with numpy)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

ArrayLike = Sequence[float] | np.ndarray | pd.Series


def _arr(x: ArrayLike) -> np.ndarray:
    return np.asarray(x, dtype=float)


def pearson(x: ArrayLike, y: ArrayLike) -> float | None:
    """Pearson r; None when either side is constant or there are fewer than 3 points."""
    a, b = _arr(x), _arr(y)
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    if len(a) < 3:
        return None
    sa, sb = a.std(), b.std()
    if sa == 0 or sb == 0:
        return None
    return float(np.mean((a - a.mean()) * (b - b.mean())) / (sa * sb))


def rank(x: ArrayLike) -> np.ndarray:
    """Average ranks (ties share the mean rank), as Spearman's rho needs."""
    ranks: np.ndarray = pd.Series(_arr(x)).rank(method="average").to_numpy(dtype=float)
    return ranks


def spearman(x: ArrayLike, y: ArrayLike) -> float | None:
    a, b = _arr(x), _arr(y)
    ok = np.isfinite(a) & np.isfinite(b)
    return pearson(rank(a[ok]), rank(b[ok]))


def swing_ratio(x: ArrayLike) -> float | None:
    """mean |x[t] - x[t-1]| / (p95 - p5): near 0.34 for white noise, small for a smooth curve."""
    a = _arr(x)
    a = a[np.isfinite(a)]
    if len(a) < 3:
        return None
    spread = float(np.percentile(a, 95) - np.percentile(a, 5))
    if spread == 0:
        return 0.0
    return float(np.mean(np.abs(np.diff(a))) / spread)


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
    # index arithmetic instead of np.histogram's float edges, so 0.6 lands in [0.6, 0.7)
    idx = np.floor((np.clip(a, lo, hi) - lo) / (hi - lo) * bins + 1e-9).astype(int)
    return [int(c) for c in np.bincount(np.minimum(idx, bins - 1), minlength=bins)]


def rnd(x: float | None, digits: int = 3) -> float | None:
    """The one rounding helper: evidence and tool numbers; None for a missing or non-finite value."""
    if x is None or not math.isfinite(x):
        return None
    return round(float(x), digits)


def downsample(x: ArrayLike, points: int = 40) -> list[float]:
    """Bucket means, for sparklines and bounded tool outputs."""
    a = _arr(x)
    a = a[np.isfinite(a)]
    if len(a) <= points:
        return [float(v) for v in a]
    edges = np.linspace(0, len(a), points + 1).astype(int)
    return [float(a[edges[i]:edges[i + 1]].mean()) for i in range(points)]
