"""Inline SVG charts (no JavaScript, no network): lines, paired histograms, reliability diagrams."""

from __future__ import annotations

import math
from html import escape
from typing import Any

import numpy as np

W, H = 500, 250
PAD_L, PAD_R, PAD_T, PAD_B = 48, 12, 42, 34
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
MAX_POINTS = 300


def _thin(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if len(x) > MAX_POINTS:
        idx = np.linspace(0, len(x) - 1, MAX_POINTS).astype(int)
        x, y = x[idx], y[idx]
    return x, y


class _Frame:
    def __init__(self, x0: float, x1: float, y0: float, y1: float) -> None:
        if x1 == x0:
            x1 = x0 + 1
        if y1 == y0:
            y0, y1 = y0 - 0.5, y1 + 0.5
        self.x0, self.x1, self.y0, self.y1 = x0, x1, y0, y1

    def px(self, x: float) -> float:
        return PAD_L + (x - self.x0) / (self.x1 - self.x0) * (W - PAD_L - PAD_R)

    def py(self, y: float) -> float:
        return H - PAD_B - (y - self.y0) / (self.y1 - self.y0) * (H - PAD_T - PAD_B)


def _axes(f: _Frame, title: str, xlabel: str) -> list[str]:
    out = [f'<text x="{W / 2}" y="16" text-anchor="middle" class="t">{escape(title)}</text>',
           f'<line x1="{PAD_L}" y1="{H - PAD_B}" x2="{W - PAD_R}" y2="{H - PAD_B}" class="ax"/>',
           f'<line x1="{PAD_L}" y1="{PAD_T}" x2="{PAD_L}" y2="{H - PAD_B}" class="ax"/>',
           f'<text x="{W / 2}" y="{H - 6}" text-anchor="middle" class="l">{escape(xlabel)}</text>']
    for v in np.linspace(f.y0, f.y1, 5):
        out.append(f'<text x="{PAD_L - 4}" y="{f.py(v) + 4:.1f}" text-anchor="end" class="l">{v:.3g}</text>')
        out.append(f'<line x1="{PAD_L}" y1="{f.py(v):.1f}" x2="{W - PAD_R}" y2="{f.py(v):.1f}" class="grid"/>')
    for i, v in enumerate(np.linspace(f.x0, f.x1, 5)):
        anchor = "start" if i == 0 else "end" if i == 4 else "middle"
        out.append(f'<text x="{f.px(v):.1f}" y="{H - PAD_B + 14}" text-anchor="{anchor}" class="l">{_tick(v, f.x1 - f.x0)}</text>')
    return out


def _tick(v: float, span: float) -> str:
    """Steps as whole numbers (1,975), fractions with two or three significant digits."""
    return f"{v:,.0f}" if span >= 10 else f"{v:.3g}"


def _svg(parts: list[str], label: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img" '
            f'aria-label="{escape(label)}" class="plot">' + "".join(parts) + "</svg>")


def line_chart(title: str, series: dict[str, tuple[Any, Any]], xlabel: str = "step",
               hline: tuple[float, str] | None = None, y_range: tuple[float, float] | None = None) -> str:
    thinned = {k: _thin(np.asarray(x, float), np.asarray(y, float)) for k, (x, y) in series.items()}
    xs = np.concatenate([x for x, _ in thinned.values()] or [np.zeros(1)])
    ys = np.concatenate([y for _, y in thinned.values()] + ([np.array([hline[0]])] if hline else []) or [np.zeros(1)])
    lo, hi = y_range if y_range else (float(ys.min()), float(ys.max()))
    f = _Frame(float(xs.min()), float(xs.max()), lo, hi)
    parts = _axes(f, title, xlabel)
    if hline:
        y = f.py(hline[0])
        parts.append(f'<line x1="{PAD_L}" y1="{y:.1f}" x2="{W - PAD_R}" y2="{y:.1f}" class="target"/>'
                     f'<text x="{W - PAD_R - 2}" y="{y - 4:.1f}" text-anchor="end" class="l">{escape(hline[1])}</text>')
    for i, (name, (xv, yv)) in enumerate(thinned.items()):
        color = COLORS[i % len(COLORS)]
        pts = " ".join(f"{f.px(a):.1f},{f.py(b):.1f}" for a, b in zip(xv, yv))
        parts.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="1.5"/>')
        parts.append(f'<text x="{PAD_L + 8 + 110 * i}" y="{PAD_T - 8}" style="fill:{color}" class="l">{escape(name)}</text>')
    return _svg(parts, title)


def paired_histogram(title: str, before: list[int], after: list[int] | None, band: tuple[float, float],
                     xlabel: str = "accuracy") -> str:
    top = max(before + (after or []) + [1])
    f = _Frame(0.0, 1.0, 0.0, float(top))
    parts = _axes(f, title, xlabel)
    n = len(before)
    # shade the bins that hold in-band values: with k/n accuracies, 0.6 sits in the bin [0.6, 0.7)
    lo_edge = math.floor(band[0] * n + 1e-9) / n
    hi_edge = min(1.0, (math.floor(band[1] * n + 1e-9) + 1) / n)
    parts.append(f'<rect x="{f.px(lo_edge):.1f}" y="{PAD_T}" width="{f.px(hi_edge) - f.px(lo_edge):.1f}" '
                 f'height="{H - PAD_T - PAD_B}" class="band"/>')
    for i, cnt in enumerate(before):
        x0, x1 = f.px(i / n), f.px((i + 1) / n)
        w = (x1 - x0) / 2 - 1
        parts.append(f'<rect x="{x0 + 1:.1f}" y="{f.py(cnt):.1f}" width="{w:.1f}" height="{f.py(0) - f.py(cnt):.1f}" '
                     f'fill="{COLORS[0]}"><title>before: {cnt}</title></rect>')
        if after is not None:
            a = after[i]
            parts.append(f'<rect x="{x0 + 1 + w:.1f}" y="{f.py(a):.1f}" width="{w:.1f}" '
                         f'height="{f.py(0) - f.py(a):.1f}" fill="{COLORS[1]}"><title>after: {a}</title></rect>')
    parts.append(f'<text x="{PAD_L + 8}" y="{PAD_T - 8}" style="fill:{COLORS[0]}" class="l">before filter</text>'
                 f'<text x="{PAD_L + 110}" y="{PAD_T - 8}" style="fill:{COLORS[1]}" class="l">after filter</text>'
                 f'<text x="{PAD_L + 210}" y="{PAD_T - 8}" class="l">shaded: bins of the boundary band</text>')
    return _svg(parts, title)


def reliability_diagram(title: str, bins: list[dict[str, float | int]],
                        xlabel: str = "solver score (normalised)") -> str:
    f = _Frame(0.0, 1.0, 0.0, 1.0)
    parts = _axes(f, title, xlabel)
    parts.append(f'<line x1="{f.px(0):.1f}" y1="{f.py(0):.1f}" x2="{f.px(1):.1f}" y2="{f.py(1):.1f}" class="target"/>')
    for b in bins:
        lo, hi, rate = float(b["lo"]), float(b["hi"]), float(b["gold_rate"])
        parts.append(f'<rect x="{f.px(lo) + 1:.1f}" y="{f.py(rate):.1f}" width="{f.px(hi) - f.px(lo) - 2:.1f}" '
                     f'height="{f.py(0) - f.py(rate):.1f}" fill="{COLORS[0]}" opacity="0.8">'
                     f'<title>n={b["n"]} gold rate {rate:.2f}</title></rect>')
    parts.append(f'<text x="{PAD_L + 8}" y="{PAD_T - 8}" class="l">bars: gold pass rate per score bin; '
                 "line: perfect calibration</text>")
    return _svg(parts, title)
