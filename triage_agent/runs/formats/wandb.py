"""W&B run folders (`wandb/run-*/files/`): legacy `wandb-history.jsonl` and `wandb-summary.json`.

`config.yaml` is read as a config (its `{key: {value: ...}}` shape is unwrapped by
configs.py) and `output.log` as a log. Binary `.wandb` files need `wandb sync` first.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from triage_agent import safejson
from triage_agent.runs import values
from triage_agent.runs.formats.base import Format, FormatRead
from triage_agent.runs.model import ParseError
from triage_agent.runs.tables import iter_json_objects


def read_history(path: Path, rel: str) -> tuple[list[dict[str, Any]], list[ParseError]]:
    rows: list[dict[str, Any]] = []
    errors: list[ParseError] = []
    for i, obj in iter_json_objects(path, rel, errors):
        step = obj.get("train/global_step", obj.get("global_step", obj.get("_step")))
        if step is None:
            errors.append(ParseError(rel, i, "row has no step"))
            continue
        row = {k: n for k, n in ((k, values.number(v)) for k, v in obj.items()) if n is not None}
        row["step"] = step
        rows.append(row)
    return rows, errors


def read_summary(path: Path, rel: str) -> tuple[dict[str, Any], list[ParseError]]:
    try:
        doc = safejson.load_file(path)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return {}, [ParseError(rel, getattr(exc, "lineno", None), "unreadable W&B summary")]
    if not isinstance(doc, dict):
        return {}, [ParseError(rel, None, "W&B summary is not an object")]
    return {k: v for k, v in doc.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}, []


def _read_history(path: Path, rel: str) -> FormatRead:
    rows, errors = read_history(path, rel)
    return FormatRead(rows=rows, errors=errors)


def _read_summary(path: Path, rel: str) -> FormatRead:
    _summary, errors = read_summary(path, rel)
    return FormatRead(errors=errors)


def _never(path: Path, rel: str) -> FormatRead:
    return FormatRead()


HISTORY = Format("wandb_history", lambda path, rel: path.name.lower() == "wandb-history.jsonl", _read_history,
                 follow="lines")
SUMMARY = Format("wandb_summary", lambda path, rel: path.name.lower() == "wandb-summary.json", _read_summary)
BINARY = Format("wandb_binary", lambda path, rel: path.suffix.lower() == ".wandb", _never,
                skip_note="binary W&B file; run `wandb sync` first (or export history) to analyse it")
