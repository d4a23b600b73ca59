"""Life cycle without file age alone (issue 37): a copy, clone or extracted archive writes every file at one time;
the bundled samples carry the evidence that they finished."""

import os
import shutil
import time

import pytest

from tests.conftest import SAMPLES, cli, write
from triage_agent.findings.facts import resolve
from triage_agent.runs.load import load_run


def fresh_copy(src, dst, age_seconds=0.0):
    """A copy whose files all carry one new time, as `git clone` leaves them (copyfile does not keep mtimes)."""
    shutil.copytree(src, dst, copy_function=shutil.copyfile)
    t = time.time() - age_seconds
    for p in dst.rglob("*"):
        os.utime(p, (t, t))
    return dst


@pytest.mark.parametrize("age", [0.0, 15 * 60.0])
@pytest.mark.parametrize("name", ["boundary_collapse", "healthy", "reward_hacking", "calibration_healthy",
                                  "boundary_variance_near_miss"])
def test_a_fresh_clone_of_a_finished_sample_says_finished(tmp_path, name, age):
    run = fresh_copy(SAMPLES / name, tmp_path / name, age)
    code, out, _ = cli("inspect", str(run))
    assert code == 0
    assert "life cycle: finished" in out
    state = resolve(load_run(run)).run.lifecycle
    assert state == "finished"


def test_boundary_collapse_finishes_by_its_planned_rounds(tmp_path):
    run = resolve(load_run(fresh_copy(SAMPLES / "boundary_collapse", tmp_path / "r"))).run
    assert "round 3 of num_rounds 3" in run.lifecycle_evidence and "steps_per_round 300" in run.lifecycle_evidence


def test_files_copied_together_are_not_in_progress_by_their_age(make_run):
    files = {"metrics.jsonl": [{"step": i, "loss": 1.0 - i / 100} for i in range(30)],
             "configs/a.yaml": "x: 1\n", "configs/b.yaml": "y: 2\n"}
    root = make_run(files)
    t = time.time()
    for p in root.rglob("*"):
        os.utime(p, (t, t))
    run = resolve(load_run(root)).run
    assert run.lifecycle == "unknown"
    assert "one modification time" in run.lifecycle_evidence
    # a run being written: its config from an hour ago, its metrics now
    for rel in ("configs/a.yaml", "configs/b.yaml"):
        os.utime(root / rel, (t - 3600, t - 3600))
    assert resolve(load_run(root)).run.lifecycle == "in_progress"


def test_one_log_being_written_is_still_in_progress(tmp_path):
    write(tmp_path, "train.log", "".join(f"step {i} | loss: {1 - i / 100:.3f} | reward: {i / 100:.3f}\n"
                                         for i in range(30)))
    assert resolve(load_run(tmp_path)).run.lifecycle == "in_progress"


def test_the_copy_spread_is_a_rule_a_run_can_set(make_run):
    files = {"metrics.jsonl": [{"step": i, "loss": 1.0 - i / 100} for i in range(30)],
             "configs/a.yaml": "x: 1\n", "configs/b.yaml": "y: 2\n", "triage.toml": "[rules]\ncopy_mtime_spread_seconds = 0\n"}
    root = make_run(files)
    t = time.time()
    for i, p in enumerate(sorted(root.rglob("*"))):
        os.utime(p, (t - i * 0.5, t - i * 0.5))
    assert resolve(load_run(root)).run.lifecycle == "in_progress"
