"""Terminal parts for solver-calibration runs: proxy vs gold, reliability table, events."""

from __future__ import annotations

from typing import Any

from triage_agent.report import Report


def parts(report: Report) -> list[Any]:
    return []
