"""Solver-calibration runs: proxy vs gold, high-score failures, ECE, cadence, perturbations."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from triage_agent import lazy
from triage_agent.analysis.stats import spearman

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy.module("pandas")


@dataclass(frozen=True)
class ProxyGold:
    n: int
    rho_proxy: float | None
    rho_gold: float | None
    rho_second_half: float | None
    proxy_first: float
    proxy_last: float
    gold_first: float
    gold_last: float
    divergence_step: int | None


def _diverges(steps: np.ndarray, proxy: np.ndarray, gold: np.ndarray, rho_min: float, gold_max: float) -> bool:
    rp, rg = spearman(steps, proxy), spearman(steps, gold)
    return rp is not None and rp >= rho_min and (rg is None or rg <= gold_max)


def proxy_gold(frame: pd.DataFrame, rho_min: float = 0.5, gold_max: float = 0.1, min_points: int = 4) -> ProxyGold:
    """Trends of proxy reward and gold pass rate, and where they part.

    The divergence point is the first step from which, over the rest of training, the
    proxy keeps rising (rho >= rho_min) while gold does not (rho <= gold_max).
    """
    f = frame.dropna(subset=["proxy_reward", "gold_pass_rate"]).sort_values("step")
    steps = f["step"].to_numpy(dtype=float)
    proxy = f["proxy_reward"].to_numpy(dtype=float)
    gold = f["gold_pass_rate"].to_numpy(dtype=float)
    half = len(f) // 2
    divergence = None
    for i in range(0, max(0, len(f) - min_points + 1)):
        if _diverges(steps[i:], proxy[i:], gold[i:], rho_min, gold_max):
            divergence = int(steps[i])
            break
    k = max(1, len(f) // 10)
    return ProxyGold(
        n=len(f), rho_proxy=spearman(steps, proxy), rho_gold=spearman(steps, gold),
        rho_second_half=spearman(proxy[half:], gold[half:]),
        proxy_first=float(proxy[:k].mean()) if len(f) else float("nan"),
        proxy_last=float(proxy[-k:].mean()) if len(f) else float("nan"),
        gold_first=float(gold[:k].mean()) if len(f) else float("nan"),
        gold_last=float(gold[-k:].mean()) if len(f) else float("nan"),
        divergence_step=divergence)


@dataclass(frozen=True)
class HighScore:
    threshold: float
    threshold_source: str  # "config" or "top decile"
    n_candidates: int
    n_failing: int
    fail_share: float
    examples: list[str]


def high_score_failures(frame: pd.DataFrame, threshold: float | None, quantile: float = 0.9, k: int = 5) -> HighScore:
    scores = frame["score"].to_numpy(dtype=float)
    gold = frame["gold_pass"].astype(bool).to_numpy()
    source = "config"
    if threshold is None:
        threshold, source = float(np.quantile(scores, quantile)), "top decile"
    sel = scores >= threshold
    failing = sel & ~gold
    ids = frame["sample_id"].astype(str).to_numpy() if "sample_id" in frame.columns else \
        frame["__line__"].astype(str).to_numpy()
    order = np.argsort(-scores[failing], kind="stable")
    n = int(sel.sum())
    return HighScore(float(threshold), source, n, int(failing.sum()), float(failing.sum() / n) if n else 0.0,
                     [str(x) for x in ids[failing][order][:k]])


@dataclass(frozen=True)
class Reliability:
    ece: float
    bins: list[dict[str, float | int]]  # lo, hi, n, mean_score, gold_rate (non-empty bins)


def reliability(scores: np.ndarray, gold: np.ndarray, score_range: tuple[float, float], bins: int = 10) -> Reliability:
    """ECE of scores normalised to 0..1 against gold_pass, over `bins` equal-width bins."""
    lo, hi = score_range
    conf = np.clip((scores - lo) / (hi - lo), 0.0, 1.0)
    idx = np.minimum(np.floor(conf * bins + 1e-9).astype(int), bins - 1)
    table = []
    ece = 0.0
    for b in range(bins):
        m = idx == b
        n = int(m.sum())
        if not n:
            continue
        mc, mg = float(conf[m].mean()), float(gold[m].mean())
        ece += n / len(conf) * abs(mc - mg)
        table.append({"lo": b / bins, "hi": (b + 1) / bins, "n": n, "mean_score": round(mc, 4),
                      "gold_rate": round(mg, 4)})
    return Reliability(float(ece), table)


@dataclass(frozen=True)
class Cadence:
    config_interval: int | None
    event_intervals: list[int]
    min_interval: int | None
    mean_flip_rate: float | None
    confirmed: int
    candidates: int
    confirmed_ratio: float | None
    ranges: list[tuple[int, float, float]]
    range_move: float | None  # largest move of min or max, as a share of the first event's range


def cadence(events: pd.DataFrame | None, config_interval: int | None) -> Cadence:
    if events is None or events.empty:
        return Cadence(config_interval, [], config_interval, None, 0, 0, None, [], None)
    e = events.sort_values("step")
    steps = e["step"].to_numpy(dtype=int)
    intervals = [int(x) for x in np.diff(steps)]
    candidates = int(e["n_candidates"].fillna(0).sum()) if "n_candidates" in e.columns else 0
    confirmed = int(e["n_confirmed"].fillna(0).sum()) if "n_confirmed" in e.columns else 0
    flip = float(e["flip_rate"].mean()) if "flip_rate" in e.columns and e["flip_rate"].notna().any() else None
    ranges: list[tuple[int, float, float]] = []
    move = None
    if {"score_min", "score_max"} <= set(e.columns):
        r = e.dropna(subset=["score_min", "score_max"])
        ranges = [(int(s), float(a), float(b)) for s, a, b in zip(r["step"], r["score_min"], r["score_max"])]
        if ranges:
            _, lo0, hi0 = ranges[0]
            width = hi0 - lo0
            if width > 0:
                move = max(max(abs(lo - lo0), abs(hi - hi0)) for _, lo, hi in ranges) / width
    known = [x for x in [config_interval, *(intervals or [])] if x is not None]
    return Cadence(config_interval, intervals, min(known) if known else None, flip, confirmed, candidates,
                   confirmed / candidates if candidates else None, ranges, move)


def perturbation_sensitivity(frame: pd.DataFrame, score_range: tuple[float, float]) -> tuple[float, dict[str, float]]:
    """Mean |score - perturbed_score| as a share of the score range, overall and per perturbation kind."""
    width = score_range[1] - score_range[0]
    delta = (frame["score"] - frame["perturbed_score"]).abs() / width
    by_kind: dict[str, float] = {}
    if "perturbation" in frame.columns:
        by_kind = {str(k): float(v) for k, v in delta.groupby(frame["perturbation"].astype(str)).mean().items()}
    return float(delta.mean()), by_kind


def threshold_for_confirmed_share(frame: pd.DataFrame, target: float, min_candidates: int) -> tuple[float, float, int] | None:
    """The lowest score threshold whose candidates fail the gold check at `target` or more.

    Returns (threshold, predicted confirmed share, candidates), or None when no threshold does.
    """
    scores = frame["score"].to_numpy(dtype=float)
    gold = frame["gold_pass"].astype(bool).to_numpy()
    for thr in np.unique(np.round(scores, 2)):
        sel = scores >= thr
        n = int(sel.sum())
        if n < min_candidates:
            break
        share = float((~gold[sel]).mean())
        if share >= target:
            return float(thr), share, n
    return None
