"""Plain-text helpers every view shares."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
from rich.table import Table
from rich.text import Text

from triage_agent import redact

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


# C0 controls but tab and newline, DEL, and the C1 controls (0x80-0x9f: CSI and OSC have one-byte forms)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def neutralise(s: str) -> str:
    """Text from outside (run files, model answers, server replies) made inert for a terminal: every control
    character, ESC above all, becomes its visible escape (`\\x1b`), so no sequence can reach the screen."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", s)


def literal(s: object, style: str = "") -> Text:
    """A rich Text that shows `s` exactly: no markup interpreted, no control character passed through."""
    return Text(neutralise(redact.text(str(s))), style=style)


class LiteralTable(Table):
    """A rich Table whose string cells and title are shown literally: the data in them comes from run files
    and models, and a `[/]` or an escape sequence there must print as itself."""

    def __init__(self, *headers: Any, title: str | Text | None = None, **kw: Any) -> None:
        super().__init__(*headers, title=literal(title) if isinstance(title, str) else title, **kw)

    def add_column(self, *args: Any, **kw: Any) -> None:
        # ids, keys, paths and numbers wrap onto the next line; nothing is ever cut with an ellipsis
        kw.setdefault("overflow", "fold")
        super().add_column(*args, **kw)

    def add_row(self, *renderables: Any, **kw: Any) -> None:
        super().add_row(*(literal(r) if isinstance(r, str) else r for r in renderables), **kw)
