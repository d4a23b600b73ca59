"""No text cut in any terminal view at any width >= 60 (issue 43, item 3): tables that cannot hold each column's
longest word are stacked; every value the JSON document carries is found whole in the text at 60, 80 and 120
columns."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from tests.conftest import SAMPLES
from tests.scripted_server import ScriptedServer

REAL = Path(__file__).resolve().parent / "real_runs"
WIDTHS = (60, 80, 120)
_BOX = re.compile(r"[\u2500-\u257f]")  # box drawing: table borders are not words
_EDGE = ",;:()[]'\"."


def _words(text: str) -> set[str]:
    return {w.strip(_EDGE) for w in _BOX.sub(" ", text).split()}


def _render(result: Any, width: int) -> str:
    out = io.StringIO()
    result.view(Console(file=out, width=width, color_system=None))
    return out.getvalue()


def _strings(doc: Any, keys: tuple[str, ...]) -> Iterator[str]:
    """The string values under `keys` anywhere in a JSON document."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k in keys and isinstance(v, str) and v:
                yield v
            else:
                yield from _strings(v, keys)
    elif isinstance(doc, list):
        for v in doc:
            yield from _strings(v, keys)


def _assert_whole(result: Any, values: list[str]) -> None:
    assert values
    for width in WIDTHS:
        words = _words(_render(result, width))
        for value in values:
            missing = [w for w in (x.strip(_EDGE) for x in value.split()) if w and w not in words]
            assert not missing, (width, value, missing)


@pytest.mark.parametrize("run", [*sorted(p.name for p in SAMPLES.iterdir() if p.is_dir()),
                                 "real:verl_opd_qwen25_3b_length_growth", "real:trl_grpo_qwen25vl3b_aokvqa_length_collapse",
                                 "real:verl_grpo_qwen25_15b_math_worker_died"])
def test_report_view_keeps_every_value_whole(run):
    from triage_agent.commands.inspect import inspect

    path = REAL / run[5:] if run.startswith("real:") else SAMPLES / run
    report = inspect(path)
    doc = report.document()
    values = [f[k] for f in doc["findings"] for k in ("id", "severity", "title")]
    values += [str(a[k]) for a in doc["adjustments"] for k in ("key", "file", "to") if a.get(k) is not None]
    values += [doc["run"]["kind"], doc["run"]["paradigm"].replace("_", " ")]  # the header names it in words
    # the series the trainer-metrics table lists, by the canonical names the frame holds
    if report.run.metrics is not None:
        values += [c.replace("rc:", "") for c in report.facts.trainer_columns()[:24]
                   if (sm := report.facts.summary(c)) is not None and sm.n >= 2]
    _assert_whole(report, values)


def test_sweep_view_keeps_every_value_whole():
    from triage_agent.commands.inspect import inspect

    result = inspect(SAMPLES)
    doc = json.loads(json.dumps(result.document(), default=str))
    values = [r["name"] for r in doc["runs"]] + [i for r in doc["runs"] for i in r["ids"]] + \
        [r["trainer"] for r in doc["runs"] if r["trainer"]]
    _assert_whole(result, values)


def test_compare_view_keeps_every_value_whole():
    from triage_agent.commands.compare import compare

    result = compare([SAMPLES / "trl_healthy", SAMPLES / "trl_entropy_collapse"])
    doc = result.document()
    values = list(_strings(doc, ("series", "key", "id")))
    _assert_whole(result, values)


def test_doctor_view_keeps_every_value_whole(tmp_path):
    from tests.test_doctor_apply import healthy_script
    from triage_agent.commands.doctor import doctor
    from triage_agent.llm.settings import Settings

    with ScriptedServer(healthy_script()) as srv:
        result = doctor(Settings(base_url=srv.base_url, model="scripted-model", retry_wait=0.01),
                        {"XDG_STATE_HOME": str(tmp_path)})
    doc = result.document()
    values = list(_strings(doc, ("name", "detail", "fix")))
    _assert_whole(result, values)
