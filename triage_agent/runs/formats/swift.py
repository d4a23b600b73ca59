"""ms-swift's `output_dir/logging.jsonl`: JSON lines whose step is the string `"global_step/max_steps": "12/500"`.

Other string values (`"elapsed_time": "4m 52s"`, `"percentage": "2.40%"`) are not metrics and are
left out; eval rows (`eval_*` keys) go to the validation series; the final summary row is skipped.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from triage_agent.runs import values
from triage_agent.runs.formats.base import Format, FormatRead, head_bytes
from triage_agent.runs.model import ParseError
from triage_agent.runs.tables import iter_json_objects

_STEP = re.compile(r"^(\d+)/(\d+)$")


def _sniff(path: Path, rel: str) -> bool:
    if path.suffix.lower() != ".jsonl":
        return False
    if path.name.lower() == "logging.jsonl":
        return True
    first = head_bytes(path, 8192).split(b"\n", 1)[0]
    return b'"global_step/max_steps"' in first


def _read(path: Path, rel: str) -> FormatRead:
    got = FormatRead(trainer="ms-swift")
    errors: list[ParseError] = []
    for i, obj in iter_json_objects(path, rel, errors):
        m = _STEP.match(str(obj.get("global_step/max_steps", "")))
        if m is None:
            errors.append(ParseError(rel, i, "no global_step/max_steps"))
            continue
        step, total = int(m.group(1)), int(m.group(2))
        got.planned_steps = total
        if any(k in obj for k in ("train_runtime", "train_samples_per_second")):
            got.finished = f"the final summary row (line {i})"
            continue
        row: dict[str, Any] = {"step": step}
        for k, v in obj.items():
            if k in ("percentage", "elapsed_time", "remaining_time"):
                continue  # progress and clock strings, not metrics
            n = values.number(v)
            if n is not None:
                row[k] = n
        (got.eval_rows if any(k.startswith("eval_") for k in row) else got.rows).append(row)
    got.errors = errors
    return got


FORMAT = Format("swift_jsonl", _sniff, _read, follow="lines")
