"""TensorBoard event files, read with the `tensorboard` package's loader (no TensorFlow)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from triage_agent.runs.formats.base import Format, FormatRead
from triage_agent.runs.model import ParseError

MISSING = ("TensorBoard event files found, but the `tensorboard` package is not installed: "
           "pip install 'triage-agent[tensorboard]'")


def available() -> bool:
    try:
        import tensorboard.backend.event_processing.event_file_loader  # noqa: F401
    except ImportError:
        return False
    return True


def read_events(path: Path, rel: str) -> tuple[list[dict[str, Any]], list[ParseError]]:
    """Scalars by tag, merged per step: [{"step": N, tag: value, ...}]."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    from tensorboard.util import tensor_util

    by_step: dict[int, dict[str, Any]] = defaultdict(dict)
    errors: list[ParseError] = []
    try:
        for event in EventFileLoader(str(path)).Load():
            if not event.HasField("summary"):
                continue
            for value in event.summary.value:
                kind = value.WhichOneof("value")
                if kind == "simple_value":
                    scalar = float(value.simple_value)
                elif kind == "tensor":
                    arr = tensor_util.make_ndarray(value.tensor)
                    if arr.size != 1 or arr.dtype.kind not in "fiu":
                        continue
                    scalar = float(arr.reshape(-1)[0])
                else:
                    continue
                by_step[int(event.step)][value.tag] = scalar
    except Exception as exc:  # the loader raises several unrelated types on corrupt files
        errors.append(ParseError(rel, None, f"unreadable event file: {type(exc).__name__}: {exc}"[:200]))
    return [{"step": step, **vals} for step, vals in sorted(by_step.items())], errors


def _read(path: Path, rel: str) -> FormatRead:
    if not available():
        return FormatRead(notes=[MISSING])
    rows, errors = read_events(path, rel)
    return FormatRead(rows=rows, errors=errors)


FORMAT = Format("tfevents", lambda path, rel: path.name.lower().startswith("events.out.tfevents"), _read)
