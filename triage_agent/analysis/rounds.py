"""Round-over-round diffs: selector components, generator checkpoints."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from triage_agent import lazy
from triage_agent.analysis.stats import pearson

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy.module("pandas")


def _resample(values: np.ndarray, n: int) -> np.ndarray:
    """Put two rounds of different lengths on one progress axis (0..1) for correlation."""
    if len(values) == n:
        return values
    out: np.ndarray = np.interp(np.linspace(0, 1, n), np.linspace(0, 1, len(values)), values)
    return out


@dataclass(frozen=True)
class ComponentDiff:
    name: str
    mean_a: float
    mean_b: float
    rel_change: float
    curve_r: float | None


def diff_components(a: pd.DataFrame, b: pd.DataFrame, comps: list[str]) -> list[ComponentDiff]:
    out = []
    for c in comps:
        if c not in a.columns or c not in b.columns:
            continue
        va = a[c].to_numpy(dtype=float)
        vb = b[c].to_numpy(dtype=float)
        va, vb = va[np.isfinite(va)], vb[np.isfinite(vb)]
        if not len(va) or not len(vb):
            continue
        ma, mb = float(va.mean()), float(vb.mean())
        rel = abs(mb - ma) / max(abs(ma), 1e-12) if ma != mb else 0.0
        n = max(len(va), len(vb))
        ra, rb = _resample(va, n), _resample(vb, n)
        r = pearson(ra, rb)
        if r is None and np.allclose(ra, rb):
            r = 1.0  # two identical flat curves
        out.append(ComponentDiff(c, ma, mb, rel, r))
    return out
