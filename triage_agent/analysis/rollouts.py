"""How reliable a question's accuracy estimate is for a given number of rollouts."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


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
    # in log space: math.comb(n, k) * p**k overflows a float from n ~ 1030 on
    p_in = sum(math.exp(_log_pmf(n, k, p)) for k in inside)
    return Reliability(
        rollouts=n,
        standard_error=math.sqrt(p * (1 - p) / n),
        p_outside_band=max(0.0, 1.0 - p_in),
        band=band,
        attainable=[round(k / n, 4) for k in inside],
    )


def _log_pmf(n: int, k: int, p: float) -> float:
    if p in (0.0, 1.0):
        return 0.0 if k == round(n * p) else -math.inf
    return (math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
            + k * math.log(p) + (n - k) * math.log(1 - p))


def pass_rates(prompts: Sequence[str], scores: np.ndarray) -> list[float]:
    """Per-prompt pass rates from per-sample rollouts: the share of a prompt's samples that scored above 0."""
    _, inverse = np.unique(np.asarray(prompts, dtype=object).astype(str), return_inverse=True)
    passed = np.bincount(inverse, weights=(np.asarray(scores, dtype=float) > 0).astype(float))
    counts = np.bincount(inverse)
    return [float(v) for v in passed / counts]


def zero_variance_share(rates: list[float], n: int) -> float:
    """Expected share of GRPO groups of n samples whose rewards all tie: mean over prompts of p^n + (1-p)^n."""
    if not rates:
        return float("nan")
    return sum(p**n + (1 - p) ** n for p in rates) / len(rates)
