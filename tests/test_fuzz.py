"""Property-based fuzzing (Hypothesis) of the readers and the answer parser: whatever the bytes, they
return a result or a located parse error, never raise."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import n_examples
from triage_agent.agent.answer import parse_answer
from triage_agent.runs.configs import load_config
from triage_agent.runs.console import scan_log
from triage_agent.runs.tables import read_table

SETTINGS = settings(max_examples=n_examples(200))
# pieces of real formats, so the fuzzer reaches the parsers' inner branches, not only their first check
FRAGMENTS = st.sampled_from([
    b"step:1 - critic/score/mean:0.5 - ", b"np.float64(", b"{'loss': ", b"nan", b"inf", b"}", b"{", b"[", b"]",
    b"\r 12%|", b"| 3/10 [00:01<00:09, 1.0s/it, reward=0.5]", b"Traceback (most recent call last):\n",
    b'  File "x.py", line 3, in f\n', b"RuntimeError: boom\n", b"\n", b"\x1b[31m", b"(TaskRunner pid=1) ",
    b'{"accuracy": 0.5, "kept": true}', b'"step": ', b",", b":", b"\xff\xfe", b"\x00", b"Killed\n",
    b"'global_step/max_steps': '3/10'", b"Total training steps: 9\n", b"a: &a [*a]\n", b"key = 1\n"])
BLOBS = st.lists(st.one_of(FRAGMENTS, st.binary(max_size=40)), max_size=40).map(b"".join)


def _write(data: bytes, suffix: str) -> Path:
    fd, name = tempfile.mkstemp(suffix=suffix)
    with open(fd, "wb") as fh:
        fh.write(data)
    return Path(name)


@SETTINGS
@given(BLOBS)
def test_log_scanner_never_raises(data):
    path = _write(data, ".log")
    scan = scan_log(path, "x.log")
    assert scan.lines == data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    assert all(isinstance(r["step"], int) for r in scan.metric_rows)


@SETTINGS
@given(BLOBS, st.sampled_from([".jsonl", ".csv"]))
def test_table_reader_never_raises(data, suffix):
    frame, errors = read_table(_write(data, suffix), "t" + suffix)
    assert frame is not None or errors  # no rows means a located reason
    assert all(e.file == "t" + suffix for e in errors)


@SETTINGS
@given(BLOBS, st.sampled_from([".yaml", ".json", ".toml"]))
def test_config_reader_never_raises(data, suffix):
    doc, values, errors = load_config(_write(data, suffix), "c" + suffix)
    assert (doc is None) == bool(errors) or not values


@SETTINGS
@given(st.text(max_size=400) | st.sampled_from(['{"diagnosis": [], "adjustments": []}',
                                                '```json\n{"diagnosis": [{"cause": 1}], "adjustments": 5}\n```',
                                                '{"diagnosis": [{"cause": "c", "confidence": "high"}]}',
                                                "[" * 5000, '{"a": ' * 3000]))
def test_answer_parser_never_raises(text):
    obj, problem = parse_answer(text)
    assert (obj is None) != (problem is None)
