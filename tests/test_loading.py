"""Discovery, the three table formats, layouts, the manifest and bad input."""

import hashlib
import json
import os

import pandas as pd
import pytest

from tests.conftest import finding_ids
from triage_agent.commands.inspect import inspect
from triage_agent.errors import TriageError
from triage_agent.runs.load import load_run

HIST = pd.DataFrame({"step": [0, 1, 2], "boundary": [0.1, 0.2, 0.3], "format": [0.9, 0.9, 0.8]})


@pytest.mark.parametrize("layout", ["selector_round2/{f}", "round2/selector/{f}", "round_2/selector/{f}"])
def test_round_layouts(make_run, layout):
    run = load_run(make_run({layout.format(f="reward_history.csv"): HIST,
                             layout.replace("selector", "generator").format(f="round.json"):
                                 {"round": 2, "role": "generator", "checkpoint_in": "a", "checkpoint_out": "b"}}))
    sel = run.rounds_of("selector")
    assert [(r.role, r.index) for r in sel] == [("selector", 2)]
    assert sel[0].history.frame["boundary"].tolist() == [0.1, 0.2, 0.3]
    assert run.rounds_of("generator")[0].meta["checkpoint_out"] == "b"
    assert run.kind == "selector-generator"


@pytest.mark.parametrize("ext", [".jsonl", ".csv", ".parquet"])
def test_three_table_formats_read_alike(make_run, ext):
    rows = pd.DataFrame({"qid": ["a", "b", "c", "d"], "accuracy": [0.0, 0.5, 0.5, 1.0], "kept": [False, True, True, False]})
    run = load_run(make_run({f"data/filter_stats{ext}": rows}))
    frame = run.filter_stats.frame
    assert frame["accuracy"].tolist() == [0.0, 0.5, 0.5, 1.0]
    assert frame["kept"].tolist() == [False, True, True, False]
    assert run.parse_errors == []


def test_manifest_columns_and_files(make_run):
    metrics = pd.DataFrame({"it": [0, 1, 2], "rewards/boundary_reward/mean": [0.1, 0.2, 0.3], "fmt": [1, 1, 1]})
    root = make_run({"logs/sel/metrics.csv": metrics,
                     "triage.toml": '[files]\nreward_history = ["logs/*/metrics.csv"]\n'
                                    '[columns]\nstep = "it"\nboundary = "rewards/boundary_reward/mean"\n'
                                    'format = "fmt"\n'})
    run = load_run(root)
    (rnd,) = run.rounds
    assert rnd.role == "selector"
    assert rnd.history.frame["boundary"].tolist() == [0.1, 0.2, 0.3]
    assert rnd.history.source == "logs/sel/metrics.csv"


def test_config_keys_by_leaf_with_dotted_paths(make_run):
    run = load_run(make_run({"configs/a.yaml": "filter:\n  inner:\n    easy_threshold: 0.7\n",
                             "my_config.toml": "[reward.weights]\nboundary = 1.0\nformat = 0.5\n",
                             "configs/c.json": '{"target_accuracy": 0.45}'}))
    cv = run.config("easy_threshold")
    assert (cv.file, cv.key, cv.value) == ("configs/a.yaml", "filter.inner.easy_threshold", 0.7)
    assert run.config("weights").value == {"boundary": 1.0, "format": 0.5}
    assert run.config("weights.format").key == "reward.weights.format"
    assert run.config_value("target_accuracy") == 0.45


def test_depth_limit_and_hidden_folders(make_run):
    root = make_run({"a/b/c/d/filter_stats.csv": pd.DataFrame({"accuracy": [0.5]}),
                     ".hidden/filter_stats.csv": pd.DataFrame({"accuracy": [0.5]}),
                     "a/b/c/d/e/eval_history.csv": pd.DataFrame({"step": [1]})})
    run = load_run(root)
    assert [f.path for f in run.files] == ["a/b/c/d/filter_stats.csv"]


def test_truncated_jsonl_line_is_skipped_and_located(make_run):
    text = '{"qid": "a", "accuracy": 0.5, "kept": true}\n{"qid": "b", "accuracy": 0.2, "kep\n' \
           '{"qid": "c", "accuracy": 0.4, "kept": true}\n'
    run = load_run(make_run({"filter_stats.jsonl": text}))
    assert run.filter_stats.frame["qid"].tolist() == ["a", "c"]
    assert [(e.file, e.line) for e in run.parse_errors] == [("filter_stats.jsonl", 2)]


def test_nan_and_missing_values_are_skipped(make_run):
    text = ('{"qid": "a", "accuracy": NaN, "kept": true}\n{"qid": "b", "accuracy": 0.2, "kept": false}\n'
            '{"qid": "c", "kept": true}\n{"qid": "d", "accuracy": 1.7, "kept": true}\n')
    run = load_run(make_run({"filter_stats.jsonl": text}))
    assert run.filter_stats.frame["qid"].tolist() == ["b"]
    assert sorted(e.line for e in run.parse_errors) == [1, 3, 4]


def test_csv_nan_and_short_rows(make_run):
    text = "step,boundary\n0,0.1\n1,nan\n2\n3,0.4,9\n4,0.5\n"
    run = load_run(make_run({"selector_round1/reward_history.csv": text}))
    assert run.rounds[0].history.frame["step"].tolist() == [0, 1, 4]  # NaN boundary kept: only step is required
    assert sorted(e.line for e in run.parse_errors) == [4, 5]


def test_empty_file_missing_column_binary_junk(make_run):
    root = make_run({"filter_stats.csv": "", "eval_history.jsonl": '{"proxy_reward": 0.1}\n',
                     "selector_round1/reward_history.parquet": b"\x00\x01PAR1junk\xff",
                     "solver_scores.jsonl": b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe",
                     "configs/bad.yaml": "a: [1, 2\n"})
    rep = inspect(root)
    msgs = {e.file: e.message for e in rep.run.parse_errors}
    assert msgs["filter_stats.csv"] == "empty file"
    assert "missing column step" in msgs["eval_history.jsonl"]
    assert "parquet" in msgs["selector_round1/reward_history.parquet"]
    assert "solver_scores.jsonl" in msgs
    assert "configs/bad.yaml" in msgs
    f = next(f for f in rep.findings if f.id == "data.parse_errors")
    assert f.severity == "info" and f.evidence["count"] == len(rep.run.parse_errors)


def test_missing_and_empty_folder_are_clear_errors(tmp_path):
    with pytest.raises(TriageError, match="no such folder"):
        load_run(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(TriageError, match="nothing recognisable"):
        load_run(tmp_path / "empty")


def digest(root):
    h = hashlib.sha256()
    for dirpath, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            p = os.path.join(dirpath, name)
            h.update(p.encode())
            with open(p, "rb") as fh:
                h.update(fh.read())
            h.update(str(os.stat(p).st_mtime_ns).encode())
    return h.hexdigest()


def test_run_folder_is_never_written(make_run):
    root = make_run({"filter_stats.jsonl": '{"accuracy": 0.5, "kept": true}\n{"accuracy": bad}\n',
                     "configs/f.yaml": "easy_threshold: 0.4\n"})
    before = digest(root)
    inspect(root)
    assert digest(root) == before
    assert "data.parse_errors" in finding_ids(inspect(root))


def test_jsonl_tables_read_in_batches_equal_pyarrows_whole_read_and_survive_a_late_key(tmp_path, monkeypatch):
    import numpy as np
    import pyarrow.json as pajson

    from triage_agent.runs import tables

    monkeypatch.setattr(tables, "STREAM_BLOCK", 2048)  # many batches
    uniform = tmp_path / "reward_history.jsonl"
    uniform.write_text("".join(json.dumps({"step": i, "boundary": i / 7, "format": 1.0, "tag": f"t{i % 3}"}) + "\n"
                               for i in range(500)))
    frame, errors = tables.read_table(uniform, "reward_history.jsonl")
    want = pajson.read_json(uniform).to_pandas()
    assert errors == [] and list(frame.columns) == [*want.columns, "__line__"]
    pd.testing.assert_frame_equal(frame[want.columns], want)
    assert frame["__line__"].tolist() == list(range(1, 501))
    late = tmp_path / "late.jsonl"  # a key that appears only after the first batches
    late.write_text("".join(json.dumps({"step": i, "boundary": 0.5, **({"extra": 1.0} if i >= 300 else {})}) + "\n"
                            for i in range(500)))
    frame, errors = tables.read_table(late, "late.jsonl")
    assert errors == [] and len(frame) == 500
    assert np.isnan(frame["extra"].iloc[:300]).all() and (frame["extra"].iloc[300:] == 1.0).all()


def test_one_survey_pass_counts_lines_and_finds_deep_nesting_across_chunk_edges(tmp_path, monkeypatch):
    import io
    import re

    from hypothesis import given
    from hypothesis import strategies as st

    from triage_agent.runs import tables

    monkeypatch.setattr(tables, "MAX_OPENINGS", 3)  # deep nesting within reach of short inputs
    monkeypatch.setattr(tables, "_OPENINGS_RUN", re.compile(rb"[{\[]{4}"))
    alphabet = list(b"a\n\r{[")

    @given(content=st.lists(st.sampled_from(alphabet), max_size=60).map(bytes), chunk=st.integers(1, 7))
    def check(content: bytes, chunk: int) -> None:
        path = tmp_path / "x.jsonl"
        path.write_bytes(content)
        deep, lines = tables._survey(path, chunk)
        # over the whole file at once: the lines readline would give, and the bracket runs
        brackets = content.translate(None, bytes(b for b in range(256) if b not in b"{[\n"))
        assert deep == (re.search(rb"[{\[]{4}", brackets) is not None)
        # lines as a file reads them (only \n ends a line)
        assert deep or lines == len(io.BytesIO(content).readlines())

    check()


def test_blank_lines_in_a_jsonl_table_keep_their_line_numbers(tmp_path):
    from triage_agent.runs import tables

    path = tmp_path / "reward_history.jsonl"
    path.write_text('{"step": 1, "a": 1}\n\n{"step": 2, "a": 2}\n   \n{"step": 3, "a": 3}\n')
    frame, errors = tables.read_table(path, "reward_history.jsonl")
    assert errors == [] and frame["__line__"].tolist() == [1, 3, 5]


def test_yaml_exponent_floats_without_a_dot_are_numbers(tmp_path):
    # PyYAML follows YAML 1.1, where `1e-6` is a string; training configs write learning rates that way
    from triage_agent.runs.configs import load_config

    path = tmp_path / "grpo_config.yaml"
    path.write_text('learning_rate: 1e-6\nbeta: 4E-2\nname: "1e-6"\nsteps: 1_000\n')
    _, values, errors = load_config(path, "grpo_config.yaml")
    assert errors == [] and {cv.key: cv.value for cv in values} == {"learning_rate": 1e-6, "beta": 0.04,
                                                                     "name": "1e-6", "steps": 1000}
