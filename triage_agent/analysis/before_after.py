"""Before and after (findings-v4.md, "did the change help?"): each quantity the seeds name measured on two sides,
the direction it should move, and a verdict against the noise of the difference. Pure functions over arrays.

Noise, honestly: a mean's standard error from the series' own step-to-step scatter (the standard deviation of its
first differences over sqrt 2, so a trend is not counted as noise) over sqrt n; a variance's from the normal
approximation var * sqrt(2 / (n - 1)); a share's binomial sqrt(p (1 - p) / n); a correlation's in Fisher's z,
1 / sqrt(n - 3). Two sides differ when the movement in the right direction is beyond k (2) standard errors of the
difference, sqrt(se_before^2 + se_after^2); otherwise "unchanged within noise".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

IMPROVED, WORSE, UNCHANGED, NOT_MEASURED = "improved", "worse", "unchanged within noise", "not measured"


@dataclass(frozen=True)
class Measure:
    value: float
    se: float  # standard error of `value` (in Fisher z for a correlation)
    n: int


@dataclass(frozen=True)
class Direction:
    """How a quantity should move: "up", "down", "toward" a target, or "into" an interval."""

    how: str
    target: float | None = None
    lo: float | None = None
    hi: float | None = None

    def text(self) -> str:
        if self.how == "toward":
            return f"toward {self.target:g}"
        if self.how == "into":
            return f"into {self.lo:g}-{self.hi:g}"
        return self.how

    def gain(self, before: float, after: float) -> float:
        """How far the quantity moved the right way (negative: the wrong way)."""
        if self.how == "up":
            return after - before
        if self.how == "down":
            return before - after
        if self.how == "toward":
            assert self.target is not None
            return abs(before - self.target) - abs(after - self.target)
        assert self.lo is not None and self.hi is not None
        return _outside(before, self.lo, self.hi) - _outside(after, self.lo, self.hi)


def _outside(x: float, lo: float, hi: float) -> float:
    return max(lo - x, x - hi, 0.0)


@dataclass(frozen=True)
class Row:
    quantity: str
    before: float | None
    after: float | None
    direction: str
    verdict: str
    noise: float | None  # the standard error of the difference
    n: tuple[int, int]
    source: str
    note: str | None = None


def _finite(values: np.ndarray) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    out: np.ndarray = v[np.isfinite(v)]
    return out


def scatter(values: np.ndarray) -> float:
    """The step-to-step noise of a series: std of its first differences over sqrt 2 (a trend cancels out)."""
    v = _finite(values)
    return float(np.diff(v).std() / math.sqrt(2)) if len(v) >= 3 else float("nan")


def mean(values: np.ndarray) -> Measure | None:
    v = _finite(values)
    if len(v) < 3:
        return None
    return Measure(float(v.mean()), scatter(v) / math.sqrt(len(v)), len(v))


def variance(values: np.ndarray) -> Measure | None:
    """Population variance over the logged steps (as reward.boundary_variance_dominates reads it)."""
    v = _finite(values)
    if len(v) < 3:
        return None
    var = float(v.var())
    return Measure(var, var * math.sqrt(2 / (len(v) - 1)), len(v))


def tail_mean(values: np.ndarray, fraction: float = 0.1) -> Measure | None:
    """The mean of the last `fraction` of steps (a generator round's end), with the series' scatter over sqrt k."""
    v = _finite(values)
    if len(v) < 3:
        return None
    k = max(1, int(len(v) * fraction))
    return Measure(float(v[-k:].mean()), scatter(v) / math.sqrt(k), k)


def share(hits: int, n: int) -> Measure | None:
    if n <= 0:
        return None
    p = hits / n
    return Measure(p, math.sqrt(p * (1 - p) / n), n)


def correlation(x: np.ndarray, y: np.ndarray) -> Measure | None:
    """Pearson's r (value) with the standard error of Fisher's z (se); None below 4 points or without spread."""
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(xa) & np.isfinite(ya)
    xa, ya = xa[ok], ya[ok]
    if len(xa) < 4 or xa.std() == 0 or ya.std() == 0:
        return None
    r = float(np.corrcoef(xa, ya)[0, 1])
    return Measure(r, 1 / math.sqrt(len(xa) - 3), len(xa))


def _z(r: float) -> float:
    return math.atanh(max(-0.999999, min(0.999999, r)))


def judge(quantity: str, before: Measure | None, after: Measure | None, direction: Direction, k: float,
          source: str, *, fisher: bool = False) -> Row:
    """The row of one quantity: values, direction, verdict (`fisher`: compare correlations in Fisher's z)."""
    if before is None or after is None:
        return Row(quantity, None if before is None else before.value, None if after is None else after.value,
                   direction.text(), NOT_MEASURED, None, (before.n if before else 0, after.n if after else 0),
                   source, "too few points on one side")
    b, a = (_z(before.value), _z(after.value)) if fisher else (before.value, after.value)
    noise = math.sqrt(before.se ** 2 + after.se ** 2)
    gain = direction.gain(b, a)
    if not math.isfinite(noise):
        verdict = NOT_MEASURED
    elif gain > k * noise:
        verdict = IMPROVED
    elif gain < -k * noise:
        verdict = WORSE
    else:
        verdict = UNCHANGED
    return Row(quantity, before.value, after.value, direction.text(), verdict, noise, (before.n, after.n), source,
               "noise in Fisher's z" if fisher else None)


def summary(rows: list[Row]) -> str:
    """One line first: how many quantities improved, got worse, did not move beyond noise."""
    counts = {v: sum(r.verdict == v for r in rows) for v in (IMPROVED, WORSE, UNCHANGED, NOT_MEASURED)}
    measured = len(rows) - counts[NOT_MEASURED]
    if not measured:
        head = "not measured: no quantity has data on both sides"
    elif counts[WORSE] == 0 and counts[IMPROVED] == measured:
        head = "it helped"
    elif counts[IMPROVED] == 0 and counts[WORSE] > 0:
        head = "it did not help"
    elif counts[IMPROVED] and counts[WORSE]:
        head = "mixed"
    elif counts[IMPROVED]:
        head = "it helped in part"
    else:
        head = "no change beyond noise"
    parts = [f"{counts[v]} {v}" for v in (IMPROVED, WORSE, UNCHANGED, NOT_MEASURED) if counts[v]]
    return f"{head}: {', '.join(parts)} (of {len(rows)} quantities)"
