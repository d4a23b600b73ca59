"""Reward components: per-round statistics and contribution shares (spec: findings.md, Definitions)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from triage_agent import lazy
from triage_agent.analysis.stats import curve_steps, downsample, head, histogram, spearman, swing_ratio, tail

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy.module("pandas")

NON_COMPONENTS = {"step", "total", "__line__", "reward", "accuracy", "epoch", "round", "qid", "sample_id"}


def component_columns(frame: pd.DataFrame, weights: Mapping[str, float] | None) -> list[str]:
    """The reward components of a history: the weighted names present, else every numeric column."""
    if weights:
        named = [c for c in weights if c in frame.columns]
        if named:
            return named
    return [c for c in frame.columns if c not in NON_COMPONENTS and frame[c].dtype.kind in "iuf"]


@dataclass(frozen=True)
class SeriesStats:
    name: str
    n: int
    mean: float
    std: float
    first: float
    last: float
    rho_step: float | None
    swing: float | None
    hist: list[int]
    hist_range: tuple[float, float]
    spark: list[float]
    spark_steps: list[int]  # the first step of each spark point's bucket


def series_stats(name: str, steps: np.ndarray, values: np.ndarray) -> SeriesStats:
    ok = np.isfinite(values)
    steps, values = steps[ok], values[ok]
    lo, hi = (float(values.min()), float(values.max())) if len(values) else (0.0, 0.0)
    return SeriesStats(
        name=name,
        n=len(values),
        mean=float(values.mean()) if len(values) else float("nan"),
        std=float(values.std()) if len(values) else float("nan"),
        first=float(head(values, 0.1).mean()) if len(values) else float("nan"),
        last=float(tail(values, 0.1).mean()) if len(values) else float("nan"),
        rho_step=spearman(steps, values),
        swing=swing_ratio(values),
        hist=histogram(values, 10, lo, hi if hi > lo else lo + 1.0),
        hist_range=(lo, hi),
        spark=downsample(values, 40),
        spark_steps=curve_steps(steps, values, 40),
    )


def history_stats(frame: pd.DataFrame, columns: list[str]) -> dict[str, SeriesStats]:
    steps = frame["step"].to_numpy(dtype=float)
    return {c: series_stats(c, steps, frame[c].to_numpy(dtype=float)) for c in columns}


@dataclass(frozen=True)
class Balance:
    shares: dict[str, float]
    weights: dict[str, float]
    approximate: bool  # True when computed from per-step means instead of per-rollout samples
    source: str
    n_steps: int


def covariance(frame: pd.DataFrame, comps: list[str], within_step: bool) -> np.ndarray:
    """Covariance matrix of the components: the mean within-step covariance, or across rows."""
    if not within_step:
        return _covariance_across_rows([frame[c].to_numpy(dtype=float) for c in comps])
    data = frame[comps].to_numpy(dtype=float)
    ok = np.isfinite(data).all(axis=1)
    data = data[ok]
    if not len(data):
        return np.zeros((len(comps), len(comps)))
    _, inverse = np.unique(frame["step"].to_numpy()[ok], return_inverse=True)
    counts = np.bincount(inverse).astype(float)
    sums = np.zeros((len(counts), len(comps)))
    np.add.at(sums, inverse, data)
    means = sums / counts[:, None]
    centered = data - means[inverse]
    # per-step population covariances, then their mean over steps
    per_step = np.einsum("ni,nj->nij", centered, centered)
    acc = np.zeros((len(counts), len(comps), len(comps)))
    np.add.at(acc, inverse, per_step)
    mean_cov: np.ndarray = (acc / counts[:, None, None]).mean(axis=0)
    return mean_cov


def _covariance_across_rows(columns: list[np.ndarray]) -> np.ndarray:
    """Population covariance over the rows where every column is finite, a column at a time (a per-step
    history may have a million rows: no interleaved copy of the whole table)."""
    ok = np.logical_and.reduce([np.isfinite(c) for c in columns])
    n = int(ok.sum())
    k = len(columns)
    cov = np.zeros((k, k))
    if not n:
        return cov
    if not ok.all():
        columns = [c[ok] for c in columns]
    means = [float(c.mean()) for c in columns]
    for i in range(k):
        ci = columns[i] - means[i]  # two centred columns alive at a time, not k
        for j in range(i, k):
            cov[i, j] = cov[j, i] = float(ci @ (ci if j == i else columns[j] - means[j])) / n
    return cov


def shares_from_cov(cov: np.ndarray, comps: list[str], weights: Mapping[str, float]) -> dict[str, float]:
    """share_i = w_i (C w)_i / (w' C w): they add up to 1 and need no pass over the data."""
    w = np.array([float(weights.get(c, 0.0)) for c in comps])
    cw = cov @ w
    denom = float(w @ cw)
    if denom <= 0:
        return {c: 0.0 for c in comps}
    return {c: float(w[i] * cw[i] / denom) for i, c in enumerate(comps)}


def contribution_shares(frame: pd.DataFrame, weights: Mapping[str, float], within_step: bool) -> dict[str, float]:
    """w_i * Cov(r_i, R) / Var(R) with R = sum_j w_j r_j; within each step when `within_step`."""
    comps = [c for c in weights if c in frame.columns]
    if not comps:
        return {}
    return shares_from_cov(covariance(frame, comps, within_step), comps, weights)


def balance(history: pd.DataFrame | None, samples: pd.DataFrame | None, weights: Mapping[str, float],
            history_source: str, samples_source: str | None) -> Balance | None:
    if samples is not None and any(c in samples.columns for c in weights):
        return Balance(contribution_shares(samples, weights, True), dict(weights), False, samples_source or "",
                       int(samples["step"].nunique()))
    if history is not None and any(c in history.columns for c in weights):
        return Balance(contribution_shares(history, weights, False), dict(weights), True, history_source,
                       int(history["step"].nunique()))
    return None


# How a component's variance and its contribution share relate, said once for the tool and the report.
VARIANCE_VS_SHARE = ("A share is the weight times the covariance with the weighted total over the total's variance, so "
                     "a component can swing the most (variance over steps) yet steer the least (share) when its "
                     "weight is small or it moves apart from the total.")


@dataclass(frozen=True)
class ComponentRow:
    """One reward component of a selector round, side by side: weight, mean and variance over the logged steps
    (population variance of the per-step history), and its contribution share (Balance)."""

    name: str
    weight: float | None
    mean: float
    variance: float
    share: float | None


def component_rows(history: pd.DataFrame, weights: Mapping[str, float], bal: Balance | None) -> list[ComponentRow]:
    """Mean, variance and share of each component of a round's history (the weighted names, else every numeric
    column)."""
    out = []
    for c in component_columns(history, weights):
        v = history[c].to_numpy(dtype=float)
        v = v[np.isfinite(v)]
        if not len(v):
            continue
        out.append(ComponentRow(c, weights.get(c), float(v.mean()), float(v.var()),
                                None if bal is None else bal.shares.get(c)))
    return out


def variance_ratio(rows: list[ComponentRow], top: str = "boundary", bottom: str = "format") -> float | None:
    """Var(top) / Var(bottom) over the logged steps; None when either is missing or the bottom never moves."""
    by = {r.name: r for r in rows}
    if top not in by or bottom not in by or by[bottom].variance <= 1e-12:
        return None
    return by[top].variance / by[bottom].variance
