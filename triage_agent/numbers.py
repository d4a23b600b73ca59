"""How numbers are rounded and written, in one place: for the model (tools, the first message), the JSON
evidence, the terminal and the HTML page.

The rule everywhere: a number keeps its significant digits. Rounding to a fixed count of decimals reads a
learning rate of 1e-06 as 0.0, and a reader told to check that the learning rate is not zero then sees a zero.
So a nonzero value never rounds to 0: small values keep SIGNIFICANT digits, however many decimals that takes.
"""

from __future__ import annotations

import math
from typing import Any

SIGNIFICANT = 4  # digits a number sent to the model or shown keeps (0.1235, 1.235e-06, 12.35)


def _magnitude(v: float) -> int:
    """The power of ten of v's first significant digit (v finite, nonzero)."""
    return math.floor(math.log10(abs(v)))


def rounded(x: float | None, decimals: int = 3, significant: int = 3) -> float | None:
    """`decimals` decimal places, but never fewer than `significant` significant digits (so never a nonzero
    to 0); None for a missing or non-finite value. The evidence numbers of findings use this."""
    if x is None or not math.isfinite(x):
        return None
    v = float(x)
    if v == 0:
        return 0.0
    return round(v, max(decimals, significant - 1 - _magnitude(v)))


def significant(x: float | None, digits: int = SIGNIFICANT) -> float | None:
    """`digits` significant digits; the integer part is never rounded away (12345.678 -> 12346.0). None for
    a missing or non-finite value. What the model is sent."""
    if x is None or not math.isfinite(x):
        return None
    v = float(x)
    if v == 0:
        return 0.0
    return round(v, max(0, digits - 1 - _magnitude(v)))


def sent(x: Any) -> Any:
    """A value as a tool or the first message sends it: floats to SIGNIFICANT digits, anything else as it is."""
    return significant(x) if isinstance(x, float) else x


def text(v: float, digits: int = SIGNIFICANT) -> str:
    """A number as people read it: `digits` significant digits, no -0, no exponent for ordinary magnitudes
    (4,980 tokens, not 4.98e+03), an exponent only below 1e-4 (1e-06, never 0)."""
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    a = abs(v)
    if a == 0:
        return "0"
    if a < 1e-4:
        return f"{v:.{digits - 1}e}".replace(".000e", "e").replace("00e", "e").replace("0e", "e")
    if a >= 1000:
        return f"{v:,.0f}"
    places = max(0, digits - 1 - _magnitude(v))
    out = f"{v:.{places}f}"
    if "." in out:
        out = out.rstrip("0").rstrip(".")
    return "0" if out in ("-0", "") else out


def plot_range(values: list[float]) -> list[float] | None:
    """A y-axis range for a constant (or constant to 9 significant digits) series, whose value then sits on
    a real axis: Plotly draws one as a line in [v - 1, v + 1], so an lr of 1e-06 is drawn at 0. None when the
    values vary (Plotly's own range is right then) or there are none."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return None
    lo, hi = min(finite), max(finite)
    scale = max(abs(lo), abs(hi))
    if scale == 0 or hi - lo > 1e-9 * scale:
        return None
    pad = 0.5 * scale
    return [lo - pad, hi + pad]
