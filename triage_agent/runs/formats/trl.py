"""TRL / HF Trainer `trainer_state.json` (any file of that shape): `log_history` rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from triage_agent import safejson
from triage_agent.runs.formats.base import Format, FormatRead, head_bytes
from triage_agent.runs.model import ParseError

SUMMARY_KEYS = ("train_runtime", "train_loss", "total_flos")


def read_trainer_state(path: Path, rel: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any],
                                                       list[ParseError]]:
    """Returns (train rows, eval rows, state header, errors). The final summary row is left out."""
    try:
        doc = safejson.load_file(path)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        line = getattr(exc, "lineno", None)
        return [], [], {}, [ParseError(rel, line, f"unreadable trainer state: {getattr(exc, 'msg', exc)}")]
    history = doc.get("log_history") if isinstance(doc, dict) else None
    if not isinstance(history, list):
        return [], [], {}, [ParseError(rel, None, "no log_history list")]
    train: list[dict[str, Any]] = []
    evals: list[dict[str, Any]] = []
    errors: list[ParseError] = []
    for i, row in enumerate(history):
        if not isinstance(row, dict) or "step" not in row:
            errors.append(ParseError(rel, None, f"log_history[{i}] has no step"))
            continue
        if any(k in row for k in SUMMARY_KEYS):
            continue
        if any(k.startswith("eval_") for k in row):
            evals.append(row)
        else:
            train.append(row)
    header = {k: v for k, v in doc.items() if k != "log_history"}
    header["_summary"] = any(isinstance(r, dict) and any(k in r for k in SUMMARY_KEYS) for r in history[-3:])
    return train, evals, header, errors


def _sniff(path: Path, rel: str) -> bool:
    """Any JSON file holding a `log_history` list (trainer_state.json under any name)."""
    if path.suffix.lower() != ".json":
        return False
    if b'"log_history"' in head_bytes(path, 1 << 16):
        return True
    try:
        if path.stat().st_size > (64 << 20):
            return False
        doc = safejson.load_file(path)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(doc, dict) and isinstance(doc.get("log_history"), list)


def _read(path: Path, rel: str) -> FormatRead:
    train, evals, header, errors = read_trainer_state(path, rel)
    finished = "the final summary row (train_runtime)" if header.get("_summary") else None
    gs, ms = header.get("global_step"), header.get("max_steps")
    if finished is None and isinstance(gs, int) and isinstance(ms, int) and 0 < ms <= gs:
        finished = f"global_step {gs} reached max_steps {ms}"
    notes = [f"{rel}: {len(evals)} eval rows (eval_*) kept apart from training rows"] if evals else []
    planned = header.get("max_steps")
    return FormatRead(rows=train, errors=errors, notes=notes, eval_rows=evals, trainer="trl", finished=finished,
                      planned_steps=planned if isinstance(planned, int) and planned > 0 else None)


FORMAT = Format("trl_state", _sniff, _read)
