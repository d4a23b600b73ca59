"""Plain-text helpers every view shares."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float] | np.ndarray) -> str:
    a = np.asarray(values, dtype=float)
    a = a[np.isfinite(a)]
    if not len(a):
        return ""
    lo, hi = float(a.min()), float(a.max())
    if hi == lo:
        return BARS[3] * len(a)
    idx = ((a - lo) / (hi - lo) * (len(BARS) - 1)).round().astype(int)
    return "".join(BARS[i] for i in idx)
