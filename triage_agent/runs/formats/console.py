"""Free-text training logs (`*.log`): crashes, progress bars and verl-style metric lines."""

from __future__ import annotations

from pathlib import Path

from triage_agent.runs.formats.base import Format, FormatRead
from triage_agent.runs.logs import scan_log


def _read(path: Path, rel: str) -> FormatRead:
    scan = scan_log(path, rel)
    return FormatRead(rows=scan.metric_rows, log=scan)


FORMAT = Format("log", lambda path, rel: path.suffix.lower() == ".log", _read)
