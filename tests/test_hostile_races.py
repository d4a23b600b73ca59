"""Hostile input, round 4 (issue 38): open once. A file swapped for a link (or another file) between discovery
and its read was read through it, printing an outside file's crash line; a log truncated while it was read
exited 70 (`np.frombuffer` with the size seen at open). Both are now reported and the rest of the run read."""

from __future__ import annotations

import os
from pathlib import Path

from triage_agent.runs.console import Scanner, scan_range
from triage_agent.runs.load import load_run

STEPS = "".join(f"{{'loss': {1.0 - i / 1000:.4f}, 'grad_norm': 0.5, 'learning_rate': 1e-05, 'epoch': {i / 400:.3f}}}\n"
                for i in range(1, 301))
OUTSIDE_CRASH = "RuntimeError: zq-the-outside-file-crash-line"


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside.log"
    outside.write_text(STEPS + "Traceback (most recent call last):\n" + OUTSIDE_CRASH + "\n")
    return outside


def _everything_said(run) -> str:
    return repr([vars(s) for s in run.logs]) + repr(run.notes) + repr(run.parse_errors)


def test_a_file_swapped_for_a_link_after_discovery_is_not_read_through_it(tmp_path):
    outside = _outside(tmp_path)
    root = tmp_path / "run"
    root.mkdir()
    (root / "train.log").write_text(STEPS)
    (root / "other.log").write_text(STEPS)

    def swap(rel: str, i: int, n: int) -> None:  # called after discovery, before each file is read
        if rel == "train.log" and not (root / rel).is_symlink():
            (root / rel).unlink()
            (root / rel).symlink_to(outside)

    run = load_run(root, progress=swap)
    assert OUTSIDE_CRASH not in _everything_said(run)
    assert [e.file for e in run.parse_errors if "link" in e.message] == ["train.log"]
    assert [s.path for s in run.logs] == ["other.log"]  # the rest of the run is read


def test_a_file_replaced_by_another_after_discovery_is_not_read(tmp_path):
    outside = _outside(tmp_path)
    root = tmp_path / "run"
    root.mkdir()
    (root / "train.log").write_text(STEPS)
    (root / "other.log").write_text(STEPS)

    def replace(rel: str, i: int, n: int) -> None:
        if rel == "train.log":
            os.link(outside, root / "new.tmp")  # another file (another inode) renamed over it
            os.replace(root / "new.tmp", root / rel)

    run = load_run(root, progress=replace)
    assert OUTSIDE_CRASH not in _everything_said(run)
    assert [e.file for e in run.parse_errors if "replaced" in e.message] == ["train.log"]


def test_a_log_that_shrinks_below_the_size_seen_at_open_is_reported_not_a_crash(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(STEPS * 40)  # past the head read line by line: the rest goes by blocks
    with open(log, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        os.truncate(log, 4096)  # truncated while read (a rotating logger, `> train.log`)
        try:
            scan_range(Scanner("train.log"), fh, 0, size, 0)
        except OSError as exc:
            assert "shrank while it was read" in str(exc)
        else:
            raise AssertionError("a read past the end of a shrunk file went unsaid")


def _parquet(path: Path, prompt: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"step": list(range(1, 41)), "prompt": [prompt] * 40, "completion": ["x = 4."] * 40,
                             "accuracy": [0.5] * 40}), path)


def test_a_parquet_file_swapped_for_a_link_after_discovery_is_not_read_through_it(tmp_path):
    """pyarrow opened a completions table by its name again (following a link swapped in since discovery); it
    now reads the one file triage opened and checked. A round table's Parquet is held to the same."""
    (tmp_path / "outside").mkdir()
    root = tmp_path / "run"
    (root / "completions").mkdir(parents=True)
    (root / "data").mkdir()
    (root / "train.log").write_text(STEPS)
    swapped = ("completions/completions_00005.parquet", "data/filter_stats.parquet")
    for rel in swapped:
        _parquet(root / rel, "inside")
        _parquet(tmp_path / "outside" / Path(rel).name, "zq-outside")

    def swap(rel: str, i: int, n: int) -> None:
        if rel in swapped and not (root / rel).is_symlink():
            (root / rel).unlink()
            (root / rel).symlink_to(tmp_path / "outside" / Path(rel).name)

    run = load_run(root, progress=swap)
    assert run.rollouts is None and run.filter_stats is None  # no row of either outside file
    assert sorted(e.file for e in run.parse_errors if "link" in e.message) == sorted(swapped)
    assert [s.path for s in run.logs] == ["train.log"]
