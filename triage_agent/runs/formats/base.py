"""What a trainer-format reader is: a sniff (is this file mine?) and a read (file -> rows)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from triage_agent import bounded
from triage_agent.runs.model import LogScan, ParseError


@dataclass
class FormatRead:
    """What one file gave: per-step metric rows (raw names, `step` included), a log scan, errors, notes."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    errors: list[ParseError] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    log: LogScan | None = None
    eval_rows: list[dict[str, Any]] = field(default_factory=list)  # validation rows (eval_* keys)
    samples: list[dict[str, Any]] = field(default_factory=list)  # per-sample rollouts: step, prompt, score
    planned_steps: int | None = None  # the planned total, when the file says
    config: dict[str, Any] | None = None  # a config the file carries (W&B config, trainer_state args)
    trainer: str | None = None


# How `triage watch` follows a file of the format between passes:
#   reread  - read again whole, only when its size, mtime or inode changed (documents rewritten in place)
#   lines   - the file only grows by whole lines: the format's `read` runs over just the appended lines
#   log     - a console log: the streaming scanner keeps its state and byte offset
#   events  - TensorBoard records: the reader keeps its place in the file
Follow = Literal["reread", "lines", "log", "events"]


@dataclass(frozen=True)
class Format:
    """One trainer output format. `name` is the role its files get in the run's file list."""

    name: str
    sniff: Callable[[Path, str], bool]
    read: Callable[[Path, str], FormatRead]
    # a format whose files are listed but never read (a note says why), e.g. binary W&B files
    skip_note: str | None = None
    follow: Follow = "reread"


def head_bytes(path: Path, size: int = 4096) -> bytes:
    """The first `size` bytes of a file (b"" when unreadable): what sniffs look at."""
    return bounded.head(path, size)
