"""What batch K of the real-run corpus taught (issue 35): a scheduler's fatal line glued to the last tqdm redraw
(stderr left without a newline before SLURM wrote its `*** JOB ... CANCELLED ***`). From lines shaped like the real
run that showed it, with its near miss; expected numbers are worked out beside them."""

from __future__ import annotations

import time

import pytest

from triage_agent.commands.inspect import inspect

YEAR = 365 * 86400.0  # read as of a year on: the files are old
ROW = "{'loss': 0.7175, 'grad_norm': 13.01, 'learning_rate': 1.75e-06, 'epoch': 0.06}\n"


def bars(upto: int) -> str:
    return "".join(f"\r  2%|▏         | {n}/2133 [42:{n:02d}<21:36:58, 37.27s/it]" for n in range(41, upto + 1))


@pytest.mark.parametrize("why", ["SIGNAL Terminated", "TIME LIMIT"])
def test_a_slurm_cancel_glued_to_the_bar_is_a_scheduler_crash(make_run, why):
    # line 1 a row, line 2 the redraws 41..45 and, glued after the last, SLURM's line: a crash on line 2, kind
    # scheduler (post-training-findings.md: SLURM `CANCELLED ... DUE TO TIME LIMIT` is `scheduler`), step 45
    log = ROW + bars(45) + f"[2026-02-06T10:15:37.189] error: *** JOB 4523781 ON della-i23g1 CANCELLED AT " \
                           f"2026-02-06T10:15:37 DUE to {why} ***\n"
    rep = inspect(make_run({"4523781.err": log}))
    crash = rep.facts.run.logs[0].crash
    assert crash is not None and crash.kind == "scheduler" and crash.line == 2
    assert rep.facts.run.lifecycle == "crashed"


def test_the_bar_alone_is_no_crash(make_run):
    # the same redraws with nothing glued after them: no crash, the run stopped at 45 of 2133
    rep = inspect(make_run({"4523781.err": ROW + bars(45) + "\n"}), now=time.time() + YEAR)
    assert rep.facts.run.logs[0].crash is None
    assert rep.facts.run.lifecycle == "stopped_early"


def test_cpython_s_own_abort_is_a_crash(make_run):
    # batch J's verl worker: a step line, then CPython's abort and faulthandler's dump (no `Traceback` line);
    # the abort is on line 2, the crash's message is its text, and the dump after it does not end it
    log = ("step:3 - actor/pg_loss:0.01 - actor/entropy:0.5 - critic/score/mean:0.2\n"
           "Fatal Python error: none_dealloc: deallocating None: bug likely caused by a refcount error in a C "
           "extension\nPython runtime state: initialized\n\nThread 0x00007fa3cc9f8640 (most recent call first):\n"
           '  File "/usr/local/lib/python3.11/threading.py", line 331 in wait\n\n'
           "Current thread 0x00007fa6cdc14c40 (most recent call first):\n"
           '  File "/workspace/verl/workers/fsdp_workers.py", line 681 in generate_sequences\n\n'
           "Extension modules: msgpack._cmsgpack, psutil._psutil_linux (total: 2)\n")
    rep = inspect(make_run({"worker.log": log}))
    crash = rep.facts.run.logs[0].crash
    assert crash is not None and crash.line == 2 and crash.message.startswith("Fatal Python error: none_dealloc")
    assert "log.crash" in {f.id for f in rep.findings} and "log.no_progress" not in {f.id for f in rep.findings}
