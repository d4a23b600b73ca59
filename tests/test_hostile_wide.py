"""Hostile input, round 4 (issue 38), item 2: unbounded keys and sparse files. A log of step lines with a new
metric name each was quadratic in `Columns.from_rows` (200,000 lines: killed at 181 s, 1.1 GB); pyarrow was
handed a W&B history of as many names (keys x rows: 20,000 lines took 105 s and 10 GB); a sparse 8 GB
`metrics.jsonl` was read as one line (exit 70, MemoryError); a 20 GB sparse log was read to its end; W&B console
records without a newline copied the line so far for each one. Each case runs in a child of its own with a
memory cap and a time limit (a bound the old code was far past, never a measure); what is asserted are counts
worked out by hand: names kept and cut, bytes read."""

from __future__ import annotations

import json
from pathlib import Path

from tests.hostile import run, run_fn
from tests.test_wandb_binary import _write, exit_record, history, output
from triage_agent.runs.formats import base


def _sparse(path: Path, head: str, size: int) -> None:
    path.write_text(head)
    with open(path, "r+b") as fh:
        fh.truncate(size)  # a hole: zeros read back, no disk written
    assert path.stat().st_blocks * 512 < 1 << 20


def _in_child(check) -> None:
    """`check()` in a child with a memory cap and a time limit (the old code was quadratic here: minutes, GBs)."""

    def call(out, err):
        check()
        return 0

    res = run_fn(call, [check.__name__], timeout=30)
    assert res.code == 0, (res.code, res.stderr[-800:])


def test_columns_keep_a_bounded_number_of_distinct_keys_and_count_the_rest():
    def check() -> None:
        n = 50_000
        rows = [{"step": i, "loss": 1.0, f"k{i}": float(i)} for i in range(n)]
        cols = base.Columns.from_rows(rows)
        kept = (1 << 24) // n  # 335: the cell budget over 50,000 rows; the step and loss (held by every row) first
        assert len(cols.keys) == kept and cols.keys[:3] == ["step", "loss", "k0"]
        assert cols.cut == n + 2 - kept
        assert cols.values["k7"][7] == 7.0 and int(cols.present["k7"].sum()) == 1
        # concatenated parts are held to the same bounds, and their cuts add up
        halves = base.Columns.concat([base.Columns.from_rows(rows[:n // 2]), base.Columns.from_rows(rows[n // 2:])])
        assert len(halves.keys) == kept and halves.cut == n + 2 - kept

    _in_child(check)


def test_one_record_of_many_keys_keeps_max_keys():
    def check() -> None:
        row = {"step": 1.0, **{f"m{i}": 1.0 for i in range(300_000)}}
        cols = base.Columns.from_rows([row])
        assert cols.keys[:2] == ["step", "m0"] and len(cols.keys) == 4096 and cols.cut == 300_001 - 4096

    _in_child(check)


def test_a_log_table_with_a_new_name_on_every_line_is_read_and_says_what_it_cut(tmp_path):
    n = 50_000
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps({"step": i, "loss": 1.0 - i / n, f"k{i}": 1.0}) + "\n"
                                                    for i in range(n)))
    res = run(["inspect", str(tmp_path)], timeout=60)  # the old code: quadratic, far past this
    assert res.code == 0, (res.code, res.stderr[-600:])
    kept = (1 << 24) // n
    assert f"{n + 2 - kept:,} of its {n + 2:,} distinct metric names were not read" in " ".join(res.stdout.split())


def test_a_wide_wandb_history_is_not_given_to_pyarrow(tmp_path):
    n = 20_000
    path = tmp_path / "wandb-history.jsonl"
    path.write_text("".join(json.dumps({"_step": i, "loss": 1.0, f"k{i}": 1.0}) + "\n" for i in range(n)))

    def read(out, err):
        from triage_agent.runs.formats.wandb import read_history

        cols, errors = read_history(path, "h")
        out.write(json.dumps([cols.n, len(cols.keys), cols.cut, len(errors)]))
        return 0

    res = run_fn(read, ["read_history", "wide"], timeout=30)  # the old code: 105 s and 10 GB
    assert res.code == 0, (res.code, res.stderr[-600:])
    kept = (1 << 24) // n  # 838 of the 20,002 names (and `step`, which is `_step` read as the step)
    assert json.loads(res.stdout) == [n, kept, n + 3 - kept, 0]


def test_a_sparse_8_gb_metrics_jsonl_is_never_held_as_one_line(tmp_path):
    head = "".join(json.dumps({"step": i, "loss": 1.0 - i / 10, "reward": i / 10}) + "\n" for i in range(1, 6))
    _sparse(tmp_path / "metrics.jsonl", head, 8 << 30)

    def inspect(out, err):
        from rich.console import Console

        from triage_agent.cli import main
        from triage_agent.runs import tables

        tables.MAX_JSONL_BYTES = 256 << 20  # lowered from 4 GiB to keep the test short; the line bound is as shipped
        return main(["inspect", str(tmp_path)], stdout=Console(file=out, width=200), stderr=Console(file=err))

    res = run_fn(inspect, ["inspect", "8 GB"], timeout=60)  # under a 3 GB cap: the old code's MemoryError, exit 70
    assert res.code == 0, (res.code, res.stderr[-600:])
    assert "metrics.jsonl:6: a line longer than 64 MB; skipped unread" in res.stdout
    # the 64 MB read of the long line, then a megabyte at a time up to the bound: the line crossing it is the last
    assert f"read up to byte {(256 << 20) + len(head):,} of {8 << 30:,}" in res.stdout


def test_a_sparse_20_gb_log_is_read_no_further_than_the_bound(tmp_path):
    head = "".join(f"{{'loss': {1 - i / 100:.2f}, 'grad_norm': 1.0, 'learning_rate': 1e-05, 'epoch': {i / 100}}}\n"
                   for i in range(1, 51))
    _sparse(tmp_path / "train.log", head, 20 << 30)

    def inspect(out, err):
        from rich.console import Console

        from triage_agent.cli import main
        from triage_agent.runs.console import limits

        limits.MAX_LOG_BYTES = 64 << 20  # lowered for the test (the default is 4 GiB): the old code ignores it
        return main(["inspect", str(tmp_path)], stdout=Console(file=out, width=200), stderr=Console(file=err))

    res = run_fn(inspect, ["inspect", "20 GB"], timeout=30)  # the old code read all 20 GB
    assert res.code == 0, (res.code, res.stderr[-600:])
    assert f"train.log: read up to byte {64 << 20:,} of {20 << 30:,}" in res.stdout


def test_wandb_console_records_without_newlines_cost_their_own_bytes(tmp_path):
    text = "Traceback (most recent call last):\nRuntimeError: zq-after-the-long-line\n"
    records = [history(0, {"train/loss": 0.5, "global_step": 1})] + [output("x" * 64)] * 100_000 \
        + [output("\n" + text), exit_record(1)]
    path = _write(tmp_path, records)

    def read(out, err):
        from triage_agent.runs.formats import wandb_binary as wb

        got = wb.read_wandb_binary(path, "x.wandb")
        assert got.log is not None
        out.write(json.dumps([got.log.lines, got.log.crash.message if got.log.crash else None]))
        return 0

    res = run_fn(read, ["wandb console", "no newlines"], timeout=30)  # the old code: 1 MB copied per record
    assert res.code == 0, (res.code, res.stderr[-600:])
    lines, crash = json.loads(res.stdout)
    assert lines == 3 and "zq-after-the-long-line" in crash  # the 6.4 MB line, the traceback's two


def test_a_parquet_table_past_its_decoded_bound_is_a_note_not_a_swallowed_memory_error(make_run, monkeypatch):
    """A completions table is small on disk and huge once decompressed (repeated text): pyarrow met MemoryError
    and the reader's broad except turned it into "not a readable Parquet file" (a sweep's memory budget lost
    with it). Its columns' decoded size is bounded first, from the file's own page sizes; the bound is set at
    1 MB here and the table holds 40 texts of 50,000 characters (2 MB decoded, a few KB on disk)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from triage_agent.runs.formats import completions
    from triage_agent.runs.load import load_run

    monkeypatch.setattr(completions, "MAX_DECODED_BYTES", 1 << 20, raising=False)  # the old code had none
    root = make_run({"train.log": "{'loss': 0.9, 'grad_norm': 0.5, 'learning_rate': 1e-05, 'epoch': 0.1}\n"})
    (root / "completions").mkdir()
    texts = [f"{i:02d}" + "again and " * 5_000 for i in range(40)]  # 50,002 characters each
    pq.write_table(pa.table({"step": [1] * 40, "completion": texts}), root / "completions" / "completions_1.parquet",
                   use_dictionary=False, compression="zstd")
    assert (root / "completions" / "completions_1.parquet").stat().st_size < 100_000
    run_ = load_run(root)
    assert run_.rollouts is None
    said = [n for n in run_.notes if n.startswith("completions/completions_1.parquet: ")]
    assert len(said) == 1 and "once decompressed (more than 1 MB); not read" in said[0], run_.notes
    assert not [e for e in run_.parse_errors if "Parquet" in e.message]


def test_a_log_scan_past_its_time_bound_stops_and_says_so(tmp_path, monkeypatch):
    """The 120 s bound on one log's scan (console/limits.LOG_SECONDS), lowered to 0 s: the scan stops before its
    first line (it checked the clock only between 8 MB blocks, after a head of 5,000 lines read without one), says
    how far it read, and the crash at the log's end is not read. Nothing waits: a bound of 0 s has passed at once."""
    from triage_agent.runs.console import limits, scan_log

    text = "".join(f"{{'loss': {1 - i / 100:.2f}, 'grad_norm': 1.0, 'learning_rate': 1e-05, 'epoch': {i / 100}}}\n"
                   for i in range(1, 51)) + "Traceback (most recent call last):\nRuntimeError: zq-at-the-end\n"
    (tmp_path / "train.log").write_text(text)
    whole = scan_log(tmp_path / "train.log", "train.log")
    assert whole.left_unread is None and "zq-at-the-end" in repr(whole)  # within the bound: all of it read
    monkeypatch.setattr(limits, "LOG_SECONDS", 0.0)
    cut = scan_log(tmp_path / "train.log", "train.log")
    assert cut.left_unread == f"read up to byte 0 of {len(text.encode()):,} (the scan took more than 0 s); the rest " \
        "was not read"
    assert "zq-at-the-end" not in repr(cut) and cut.last_step is None
