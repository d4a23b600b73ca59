"""How reliable a question's accuracy estimate is for a given number of rollouts."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Reliability:
    rollouts: int
    standard_error: float  # of the accuracy estimate at p = 0.5
    p_outside_band: float  # chance a true-0.5 question is estimated outside the band
    band: tuple[float, float]
    attainable: list[float]  # the accuracy values inside the band that n rollouts can produce


def reliability(n: int, band: tuple[float, float], p: float = 0.5) -> Reliability:
    """Exact binomial: P(k/n outside [lo, hi]) for k ~ Binomial(n, p)."""
    lo, hi = band
    eps = 1e-9
    inside = [k for k in range(n + 1) if lo - eps <= k / n <= hi + eps]
    p_in = sum(math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in inside)
    return Reliability(
        rollouts=n,
        standard_error=math.sqrt(p * (1 - p) / n),
        p_outside_band=max(0.0, 1.0 - p_in),
        band=band,
        attainable=[round(k / n, 4) for k in inside],
    )
