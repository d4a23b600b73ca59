"""TensorBoard event files, read with the `tensorboard` package's loader (no TensorFlow)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from triage_agent import bounded
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
    events = Events()
    errors = events.absorb(path, rel)
    return events.rows(), errors


class Events:
    """One event file's scalars by step. `absorb` reads the records written since its last call (the
    loader keeps its place in the file), so a file still being written is read once in all."""

    def __init__(self) -> None:
        self.by_step: dict[int, dict[str, Any]] = defaultdict(dict)
        self.loader: Any = None

    def absorb(self, path: Path, rel: str) -> list[ParseError]:
        from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
        from tensorboard.util import tensor_util

        try:
            if self.loader is None:
                bounded.regular(path)  # the loader opens the path itself: no FIFO or device reaches it
                self.loader = EventFileLoader(str(path))
            for event in self.loader.Load():
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
                    self.by_step[int(event.step)][value.tag] = scalar
        except Exception as exc:  # the loader raises several unrelated types on corrupt files
            return [ParseError(rel, None, f"unreadable event file: {type(exc).__name__}: {exc}"[:200])]
        return []

    def rows(self) -> list[dict[str, Any]]:
        return [{"step": step, **vals} for step, vals in sorted(self.by_step.items())]


def _read(path: Path, rel: str) -> FormatRead:
    if not available():
        return FormatRead(notes=[MISSING])
    rows, errors = read_events(path, rel)
    return FormatRead(rows=rows, errors=errors)


FORMAT = Format("tfevents", lambda path, rel: path.name.lower().startswith("events.out.tfevents"), _read,
                follow="events")
