"""The gold series of an eval_history table, found by meaning (runs/trainers/custom.GOLD_NAMES): a human,
spot-check or manual pass rate serves every rule and view that reads `gold_pass_rate`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from triage_agent import lazy
from triage_agent.runs.trainers.custom import GOLD_NAMES

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy.module("pandas")

GOLD = GOLD_NAMES[0]
__all__ = ["ATTR", "GOLD", "GOLD_NAMES", "by_meaning", "logged_as"]
ATTR = "gold_column"  # frame.attrs key: the name the run logged its gold series as


def by_meaning(frame: pd.DataFrame) -> tuple[pd.DataFrame, str | None]:
    """The frame with its gold series named `gold_pass_rate` (the first of GOLD_NAMES present), and the name it
    was logged as when that was another one."""
    found = next((c for c in GOLD_NAMES if c in frame.columns), None)
    if found is None or found == GOLD:
        if found is not None:
            frame.attrs[ATTR] = GOLD
        return frame, None
    frame = frame.rename(columns={found: GOLD})
    frame[GOLD] = pd.to_numeric(frame[GOLD], errors="coerce")
    frame.attrs[ATTR] = found
    return frame, found


def logged_as(frame: pd.DataFrame) -> str:
    """The name the gold series was logged as."""
    return str(frame.attrs.get(ATTR, GOLD))
