"""verl outputs: the `file` logger's JSONL ({"step": N, "data": {...}}) and console metric lines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from triage_agent.runs.logs import parse_value
from triage_agent.runs.model import ParseError
from triage_agent.runs.tables import iter_json_objects


def read_verl_jsonl(path: Path, rel: str) -> tuple[list[dict[str, Any]], list[ParseError]]:
    rows: list[dict[str, Any]] = []
    errors: list[ParseError] = []
    for i, obj in iter_json_objects(path, rel, errors):
        if not isinstance(obj.get("data"), dict) or "step" not in obj:
            errors.append(ParseError(rel, i, "not a {step, data} row"))
            continue
        row: dict[str, Any] = {"step": obj["step"]}
        for k, v in obj["data"].items():
            value = v if isinstance(v, (int, float)) and not isinstance(v, bool) else parse_value(str(v))
            if value is not None:
                row[k] = value
        rows.append(row)
    return rows, errors
