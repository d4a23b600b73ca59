"""The HTML report's charts: Plotly figures (hover with step and value, zoom, round ticks, integer steps,
legends above the plot area so they are never cut). The page inlines plotly.js once, so it works offline.

Plotly comes with the core install; it is imported only when a page is drawn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from triage_agent.errors import BadInput
from triage_agent.extras import DISTRIBUTION
from triage_agent.numbers import plot_range
from triage_agent.render.text import html_text

MAX_POINTS = 2000  # per line: a 100,000-step run draws its shape, not every point
MISSING = f"the HTML report draws its charts with Plotly, which is missing: pip install --force-reinstall {DISTRIBUTION}"


def _go() -> Any:
    try:
        import plotly.graph_objects as go
    except ImportError:
        raise BadInput(MISSING) from None
    return go


def plotly_js() -> str:
    try:
        from plotly.offline import get_plotlyjs
    except ImportError:
        raise BadInput(MISSING) from None
    js: str = get_plotlyjs()
    return js


def _t(text: str) -> str:
    """Text from run files (sources, metric names) as Plotly text: no tag and no script end reach the page."""
    return html_text(text, quote=False)


def _thin(x: Sequence[float], y: Sequence[float]) -> tuple[list[float], list[float]]:
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(xa) & np.isfinite(ya)
    xa, ya = xa[ok], ya[ok]
    if len(xa) > MAX_POINTS:
        idx = np.linspace(0, len(xa) - 1, MAX_POINTS).astype(int)
        xa, ya = xa[idx], ya[idx]
    return xa.tolist(), ya.tolist()


LEGEND_PER_ROW = 3  # legend entries a row holds in a 520-px chart (the page's narrowest), names of ~25 characters
LEGEND_ROW = 22  # px a legend row takes


def _layout(fig: Any, title: str, xlabel: str, ylabel: str = "", integer_x: bool = True) -> Any:
    # the title at the top of the figure and the legend just above the plot area, with a top margin as tall as
    # both: Plotly grows a horizontal legend upwards, so a legend of many rows used to cover the title
    rows = max(1, -(-len(fig.data) // LEGEND_PER_ROW))
    fig.update_layout(
        title={"text": _t(title), "x": 0, "xanchor": "left", "font": {"size": 14},
               "yref": "container", "y": 1, "yanchor": "top", "pad": {"t": 10}},
        height=340 + LEGEND_ROW * (rows - 1), margin={"l": 60, "r": 20, "t": 44 + LEGEND_ROW * rows, "b": 50},
        template="plotly_white",
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "xanchor": "left", "x": 0},
        hovermode="x unified", showlegend=True)
    fig.update_xaxes(title_text=_t(xlabel), automargin=True, tickformat="d" if integer_x else ".2~f")
    fig.update_yaxes(title_text=_t(ylabel), automargin=True, tickformat=".3~g")
    return fig


def line_chart(title: str, series: dict[str, tuple[Any, Any]], xlabel: str = "step",
               hline: tuple[float, str] | None = None, ylabel: str = "") -> Any:
    go = _go()
    fig = go.Figure()
    drawn: list[float] = []
    for name, (x, y) in series.items():
        xs, ys = _thin(x, y)
        drawn += ys
        label = _t(name).replace("%", "%%")
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=_t(name),
                                 hovertemplate=f"{label}<br>step %{{x:d}}: %{{y:.4~g}}<extra></extra>"))
    if hline:
        fig.add_hline(y=hline[0], line_dash="dash", line_color="#888", annotation_text=_t(hline[1]))
        drawn.append(hline[0])
    _layout(fig, title, xlabel, ylabel)
    constant = plot_range(drawn)  # a constant series on an axis around its value, not at 0 in [v - 1, v + 1]
    if constant is not None:
        fig.update_yaxes(range=constant)
    return fig


def paired_histogram(title: str, before: list[int], after: list[int] | None, band: tuple[float, float],
                     xlabel: str) -> Any:
    go = _go()
    edges = [i / len(before) for i in range(len(before) + 1)]
    mids = [(a + b) / 2 for a, b in zip(edges, edges[1:])]
    labels = [f"{a:.1f}-{b:.1f}" for a, b in zip(edges, edges[1:])]
    fig = go.Figure()
    fig.add_vrect(x0=band[0], x1=band[1], fillcolor="#ffd54f", opacity=0.3, line_width=0,
                  annotation_text=f"band {band[0]:g}-{band[1]:g}", annotation_position="top left")
    fig.add_trace(go.Bar(x=mids, y=before, name="before the filter", customdata=labels,
                         hovertemplate="accuracy %{customdata}: %{y} questions<extra>before</extra>"))
    if after is not None:
        fig.add_trace(go.Bar(x=mids, y=after, name="after the filter", customdata=labels,
                             hovertemplate="accuracy %{customdata}: %{y} questions<extra>after</extra>"))
    fig.update_layout(barmode="group")
    _layout(fig, title, xlabel, "questions", integer_x=False)
    fig.update_xaxes(range=[0, 1], dtick=0.1)
    return fig


def reliability_diagram(title: str, bins: list[dict[str, float | int]], xlabel: str) -> Any:
    go = _go()
    mids = [(float(b["lo"]) + float(b["hi"])) / 2 for b in bins]
    width = float(bins[0]["hi"]) - float(bins[0]["lo"]) if bins else 0.1
    fig = go.Figure()
    fig.add_trace(go.Bar(x=mids, y=[float(b["gold_rate"]) for b in bins], width=width * 0.9, name="gold pass rate",
                         customdata=[[b["n"], b["mean_score"]] for b in bins],
                         hovertemplate="score bin %{x:.2f}: gold rate %{y:.2f}, mean score %{customdata[1]:.2f}, "
                                       "n=%{customdata[0]}<extra></extra>"))
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfect calibration",
                             line={"dash": "dash", "color": "#888"}, hoverinfo="skip"))
    _layout(fig, title, xlabel, "gold pass rate", integer_x=False)
    fig.update_xaxes(range=[0, 1])
    fig.update_yaxes(range=[0, 1])
    return fig


def to_div(fig: Any, div_id: str) -> str:
    """A figure as a div and its script; plotly.js itself is inlined once by the page."""
    html: str = fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id,
                            config={"displaylogo": False, "responsive": True})
    return html
