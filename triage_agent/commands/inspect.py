"""`triage inspect RUN`: the deterministic report; never calls a model."""

from __future__ import annotations

from pathlib import Path

from triage_agent.report import Report, offline_report
from triage_agent.runs.load import Progress, load_run


def inspect(path: str | Path, progress: Progress | None = None, now: float | None = None) -> Report:
    """The offline report; `now` (default: the clock) is what file ages are measured against."""
    return offline_report(load_run(path, progress, now))
