"""The console wing's contract (runs/console/): every dialect's examples hold one of its markers, the literals the
scan searches for are those of the profiles' own lines, and what the scanner makes of crashes: interrupts are
signals, a crash stays a crash when stdout's buffered line of the same step follows it, each launch of a relaunched
log has its crash, and one rank's traceback goes on past another rank's lines.

Lines are written the way the trainers and launchers print them (transformers' ProgressCallback, verl's
ray_trainer, torchrun's `[rank3]:` and `[default0]:` prefixes)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import finding_ids
from triage_agent.commands.inspect import inspect
from triage_agent.runs import trainers
from triage_agent.runs.console import Scanner, limits, scan_log, scan_log_lines
from triage_agent.runs.console.blockscan import Word
from triage_agent.runs.console.scanner import DIALECTS, STAGES
from triage_agent.runs.model import LogScan
from triage_agent.runs.trainers.profile import Profile, literal

YEAR = 365 * 86400.0
OOM = ["Traceback (most recent call last):",
       '  File "/workspace/train_grpo.py", line 88, in <module>',
       "    trainer.train()",
       '  File "/usr/lib/python3.11/site-packages/transformers/trainer.py", line 1938, in train',
       "    return inner_training_loop(",
       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.1 GiB"]


def scan_text(tmp_path: Path, text: str, name: str = "train.log") -> LogScan:
    """The scan of a log, by blocks and line by line: the two must agree, and the first is returned."""
    path = tmp_path / name
    path.write_text(text)
    fast, slow = scan_log(path, name), scan_log_lines(path, name)
    assert repr(fast) == repr(slow)
    return fast


def bar(cur: int, total: int) -> str:
    pct = cur * 100 // total
    return f"{pct:3d}%|{'█' * (pct // 10):10s}| {cur}/{total} [00:{cur % 60:02d}<01:00,  3.00s/it]"


def trl_log(steps: int, total: int = 100) -> list[str]:
    out = ["***** Running training *****", "  Num examples = 1,000", "  Num Epochs = 1",
           f"  Total optimization steps = {total}"]
    for s in range(1, steps + 1):
        out.append(bar(s, total))
        if s % 10 == 0:
            out.append(f"{{'loss': {0.5 - s / 1000:.4f}, 'grad_norm': 1.25, 'learning_rate': 1e-05, "
                       f"'epoch': {s / total:.2f}}}")
    return out


# -- the dialects' contract ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("cls", STAGES, ids=lambda c: c.name)
def test_every_dialect_has_examples_and_each_holds_one_of_its_markers(cls):
    """A line shape a dialect reads but whose marker it forgot is never found past a log's head (a finished
    20,000-step log read as its first rows): each example must hold a marker, the literal as it is or a word."""
    assert cls.examples, cls.name
    for line in cls.examples:
        raw = line.encode()
        assert any(m in raw if isinstance(m, bytes) else re.search(rb"(?i:" + re.escape(m.text) + rb")\b", raw)
                   for m in cls.markers), (cls.name, line)


@pytest.mark.parametrize("cls", STAGES, ids=lambda c: c.name)
def test_every_dialect_s_examples_are_read_past_the_head_as_in_it(cls, tmp_path, monkeypatch):
    """Past the head, a line goes through the block scan's markers and the gate; in the general way it is read
    whatever it holds. A dialect's examples, after a head of blank banners, give the same scan both ways."""
    monkeypatch.setattr(limits, "DETECT_LINES", 2)
    lines = [b"banner\n"] * 3 + [e.encode() + b"\n" for e in cls.examples]
    general = Scanner("x.log", fast=False)
    for n, raw in enumerate(lines, 1):
        general.scan.lines = n
        general.line(raw, n)
    assert repr(scan_text(tmp_path, b"".join(lines).decode(), "x.log")) == repr(general.finish())


def test_a_dialect_s_trainer_is_a_profile():
    for cls in STAGES:
        assert cls.trainer is None or trainers.by_name(cls.trainer) is not None, cls.name


def test_the_markers_are_the_union_of_the_live_dialects_markers():
    sc = Scanner("x.log")
    want = tuple(dict.fromkeys(m for d in sc.stages for m in d.live(sc.tally)))
    assert sc.markers() == want
    assert b"Total optimization steps = " in want and b"Will train on " in want  # the profiles' banner lines


def test_what_another_dialect_looks_for_holds_a_letter_or_a_brace():
    """A learned bar's plain redraw is read without a search for other dialects' literals because its variable
    parts (count, fill, times) hold no letter and no `{`: that only holds while every such literal holds one."""
    for cls in DIALECTS:
        for lit in cls.looks_for():
            assert re.search(rb"[A-Za-z{]", lit), (cls.name, lit)


def test_state_is_per_scan():
    line = b"step:%d - actor/entropy:0.5 - critic/score/mean:0.25\n"
    a = Scanner("a.log")
    for n in (1, 2, 3):
        a.dialect("verl").shapes.row(line % n)  # type: ignore[attr-defined]
    assert a.dialect("verl").shapes.learned  # type: ignore[attr-defined]
    assert not Scanner("b.log").dialect("verl").shapes.learned  # type: ignore[attr-defined]


# -- the profiles' lines -------------------------------------------------------------------------------------------

def test_literal_of_hand_worked_patterns():
    assert literal(r"Total training steps: (?P<total>\d+)") == "Total training steps: "
    assert literal(r"\*{5} train metrics \*{5}") == " train metrics "  # a quantified character is left out
    assert literal(r"(?:[Tt]raining|[Ff]ine-tuning) (?:is )?completed?\b") == "complete"  # groups end a run
    assert literal(r"\[launch\.py:\d+:main\] Process \d+ exits successfully") == " exits successfully"
    assert literal(r"Step \d+/(?P<total>\d+) \| Loss:") == " | Loss:"
    assert literal(r"a|b") == ""  # an alternation at the top: each alternative is its own line
    with pytest.raises(ValueError, match="no literal of 4"):
        Profile(name="x", title="x", source=None, plan_lines=(r"(?P<total>\d+)/\d+",))
    with pytest.raises(ValueError, match="no regex"):
        Profile(name="x", title="x", source=None, detect=("(unclosed",))


PROFILE_LINES = sorted({p.pattern for _lit, p in (*trainers.plan_lines(), *trainers.done_lines())})


@given(data=st.data())
def test_every_profile_line_s_literal_is_in_whatever_it_matches(data):
    """The scan searches a log for each plan and completion line's literal: a line the pattern matches must hold
    it, or past the head that line is never read."""
    pattern = data.draw(st.sampled_from(PROFILE_LINES))
    text = data.draw(st.from_regex(pattern))
    assert literal(pattern) in text, (pattern, text)


def test_rollout_prose_holds_no_literal_of_the_profiles_lines():
    """The scan cuts every line holding a plan or completion line's literal out of its block, and reads it the
    general way: a literal that prose holds (" Step ", "complete", "iteration") would read a rollout dump's every
    completion (the bench's rollout-text log took three times as long)."""
    prose = ["[response] Step 1: In April she sold 48 clips. Step 2: half of 48 is 24.",
             "The proof is complete, and we are done. I finished the task.",
             "At each iteration of the loop the sum moves forward; the step=1 case is trivial.",
             "Training data is complete. Fine-tuning the answer, the loop is finished."]
    literals = [lit for lit, _p in (*trainers.plan_lines(), *trainers.done_lines())]
    for line in prose:
        assert not [lit for lit in literals if lit in line and lit != "step="], line


def test_a_plan_banner_far_past_the_head_with_thousands_separators(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "DETECT_LINES", 5)
    scan = scan_text(tmp_path, "\n".join(["x"] * 20 + ["[INFO|trainer.py:2414] >>   Total optimization steps = 20,000",
                                                       "Will train on 120 batches"]) + "\n")
    assert scan.planned_steps == 120
    scan = scan_text(tmp_path, "\n".join(["x"] * 20 + ["  Total optimization steps = 20,000"]) + "\n")
    assert scan.planned_steps == 20000


@pytest.mark.parametrize(("line", "trainer"), [
    ("INFO: Unsloth 2025.3.9 patched TRL's GRPOTrainer", "unsloth"),  # builds on TRL: ranks before it
    ("(TaskRunner pid=42) verl GRPOTrainer config", "verl"),
    ("trl.trainer.grpo_trainer: ***** Running training *****", "trl"),  # TRL before transformers
    ("***** Running training *****", "transformers"),
    ("[INFO|2025-01-01 10:00:00] llamafactory.hparams.parser:406 >> ***** Running training *****", "llama-factory"),
    ("[INFO:swift] Start time of running main: 2025-01-01", "ms-swift"),
])
def test_the_trainer_is_the_lowest_ranked_profile_a_head_line_names(line, trainer):
    sc = Scanner("x.log")
    sc.line(line.encode() + b"\n", 1)
    assert sc.scan.trainer == trainer


# -- crashes -------------------------------------------------------------------------------------------------------

def test_keyboard_interrupt_and_sigint_are_signals(tmp_path):
    lines = trl_log(20) + ["Traceback (most recent call last):", '  File "/home/me/train.py", line 42, in <module>',
                           "    trainer.train()", "KeyboardInterrupt"]
    crash = scan_text(tmp_path, "\n".join(lines) + "\n").crash
    assert crash is not None and (crash.exception, crash.kind) == ("KeyboardInterrupt", "signal")
    for last in ("[2025-02-20 20:27:14,902] [INFO] [launch.py:328:sigkill_handler] Main process received SIGINT, "
                 "exiting",
                 "torch.distributed.elastic.multiprocessing.api.SignalException: Process 4242 got signal: 2"):
        extra = [] if "SIGINT" in last else ["Traceback (most recent call last):",
                                             '  File "/opt/venv/bin/torchrun", line 8, in <module>']
        crash = scan_text(tmp_path, "\n".join(trl_log(20) + extra + [last]) + "\n").crash
        assert crash is not None and crash.kind == "signal", last


def test_an_oom_then_stdout_s_buffered_row_of_the_same_step_is_still_a_crash(tmp_path, make_run):
    """stderr (the bar, the traceback) is unbuffered, stdout (the logged dicts) is not: the row logged at step 50
    comes out after the OOM that killed step 51. It advances no step past the crash's: the crash stands."""
    lines = trl_log(50) + OOM + ["{'loss': 0.4512, 'grad_norm': 1.25, 'learning_rate': 1e-05, 'epoch': 0.5}"]
    scan = scan_text(tmp_path, "\n".join(lines) + "\n")
    assert scan.crash is not None and scan.crash.kind == "oom"
    assert scan.crash.frame is not None and scan.crash.frame.file == "/workspace/train_grpo.py"
    rep = inspect(make_run({"train.log": "\n".join(lines) + "\n"}), now=time.time() + YEAR)
    assert rep.run.lifecycle == "crashed" and "log.crash" in finding_ids(rep)
    # a traceback the run lived through: the next step's bar and row clear it, as before
    lines = trl_log(50) + OOM + ["[INFO] skipping the batch", bar(51, 100), bar(60, 100),
                                 "{'loss': 0.44, 'grad_norm': 1.2, 'epoch': 0.6}"]
    assert scan_text(tmp_path, "\n".join(lines) + "\n").crash is None


def test_verl_s_buffered_step_line_after_its_traceback_keeps_the_crash(tmp_path):
    pre = "\x1b[36m(TaskRunner pid=42)\x1b[0m "
    lines = [f"{pre}Total training steps: 100"]
    for s in range(1, 13):
        lines += [f"{pre}step:{s} - critic/score/mean:0.{s:02d} - actor/entropy:0.5",
                  f"{pre}Training Progress:  {s}%|#         | {s}/100 [00:{s:02d}<01:40,  1.00s/it]"]
    lines += [f"{pre}Training Progress:  13%|#         | 13/100 [00:13<01:27,  1.00s/it]", *OOM,
              f"{pre}step:13 - critic/score/mean:0.13 - actor/entropy:0.5"]
    scan = scan_text(tmp_path, "\n".join(lines) + "\n")
    assert scan.crash is not None and scan.crash.kind == "oom" and scan.last_step == 13


def _verl_launch(first: int, last: int, *, crash: list[str] | None = None) -> list[str]:
    pre = "(main_task pid=4242) "
    out = [f"{pre}Size of train dataloader: 100", f"{pre}Total training steps: 200"]
    out += [f"{pre}step:{s} - critic/score/mean:0.{s:02d} - actor/entropy:0.5 - actor/pg_loss:0.01"
            for s in range(first, last + 1)]
    return out + (crash or [])


NCCL = ["[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=812, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600055 "
        "milliseconds before timing out."]


def test_a_relaunched_log_gives_each_launch_its_crash(tmp_path, make_run):
    """Three launches appended to one log (a job requeued and resumed from its checkpoints): the first dies of an
    OOM at step 12, the second of an NCCL timeout at step 30, the third finishes. The log's crash is its last
    launch's (none); the earlier launches' crashes are kept, oldest first, and reported as info."""
    text = "\n".join(_verl_launch(1, 12, crash=OOM) + _verl_launch(11, 30, crash=NCCL) + _verl_launch(31, 200)) + "\n"
    scan = scan_text(tmp_path, text)
    assert scan.crash is None
    assert [(c.kind, c.step) for c in scan.superseded_crashes] == [("oom", 12), ("nccl_timeout", 30)]
    rep = inspect(make_run({"train.log": text}), now=time.time() + YEAR)
    crashes = [f for f in rep.findings if f.id == "log.crash"]
    assert [(f.severity, f.evidence["kind"], f.evidence["last_step"]) for f in crashes] == [
        ("info", "oom", 12), ("info", "nccl_timeout", 30)]
    assert set(crashes[0].evidence) == {"kind", "exception", "message", "file", "line", "last_step",
                                        "last_step_line", "frame", "source"}
    assert rep.run.lifecycle == "finished"
    # the last launch crashes too: its crash at its severity, the earlier one as info
    text = "\n".join(_verl_launch(1, 12, crash=OOM) + _verl_launch(11, 30, crash=NCCL)) + "\n"
    scan = scan_text(tmp_path, text)
    assert scan.crash is not None and scan.crash.kind == "nccl_timeout"
    assert [c.kind for c in scan.superseded_crashes] == ["oom"]
    rep = inspect(make_run({"train.log": text}), now=time.time() + YEAR)
    assert sorted((f.severity, f.evidence["kind"]) for f in rep.findings if f.id == "log.crash") == [
        ("high", "nccl_timeout"), ("info", "oom")]
    assert rep.run.lifecycle == "crashed"


def test_a_step_counter_that_goes_back_starts_a_launch_and_a_banner_printed_twice_does_not(tmp_path):
    # no banner the second time: the step counter going back is the relaunch
    text = "\n".join(_verl_launch(1, 12, crash=OOM) + _verl_launch(1, 40)[2:]) + "\n"
    scan = scan_text(tmp_path, text)
    assert scan.crash is None and [c.kind for c in scan.superseded_crashes] == ["oom"]
    # two processes print the banner before training starts, an error the run lives through comes between: no
    # launch ended, the error is cleared by the steps that follow
    lines = _verl_launch(1, 0) + ["Traceback (most recent call last):", '  File "/app/reward.py", line 3, in f',
                                  "ValueError: bad sample"] + _verl_launch(1, 10)
    scan = scan_text(tmp_path, "\n".join(lines) + "\n")
    assert scan.crash is None and scan.superseded_crashes == []


def test_a_rank_s_traceback_goes_on_past_the_other_ranks_lines(tmp_path):
    """torchrun prefixes each rank's lines: rank 3's traceback, interleaved with rank 0's bar and warnings, is one
    traceback of rank 3 (its frames, its exception), not a handled error nor three fragments."""
    lines = trl_log(30) + [
        "[rank3]: Traceback (most recent call last):",
        "[rank0]: [W reducer.cpp:1360] Warning: find_unused_parameters=True was specified",
        '[rank3]:   File "/app/train.py", line 88, in training_step',
        f"[rank0]: {bar(31, 100)}",
        "[rank3]:     loss.backward()",
        '[rank3]:   File "/usr/lib/python3.11/site-packages/torch/_tensor.py", line 525, in backward',
        "[rank0]: [2025-01-01 10:00:00] INFO rank0 waiting at the barrier",
        "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "E0101 10:00:01.000 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: -9) local_rank: 3 "
        "(pid: 77) of binary: /opt/venv/bin/python"]
    scan = scan_text(tmp_path, "\n".join(lines) + "\n")
    assert scan.handled_tracebacks == 0
    c = scan.crash
    assert c is not None and (c.exception, c.kind) == ("torch.OutOfMemoryError", "oom")
    assert c.frame is not None and (c.frame.file, c.frame.line) == ("/app/train.py", 88)
    assert c.message.startswith("CUDA out of memory") and c.line == len(lines) - 1
    # the launcher's SIGTERM to the other ranks follows on: the OOM is the root and the kind
    assert [e for e, _m, _n in c.cascade] == ["Killed"]


def test_a_rank_s_open_traceback_ends_when_its_rank_falls_silent(tmp_path, monkeypatch):
    monkeypatch.setattr("triage_agent.runs.console.crashes.MAX_IDLE", 5)
    lines = ["[rank3]: Traceback (most recent call last):", '[rank3]:   File "/app/train.py", line 9, in f',
             "[rank3]: ValueError: rank 3 only"] + [f"[rank0]: step:{s} - actor/entropy:0.5" for s in range(1, 30)]
    scan = scan_text(tmp_path, "\n".join(lines) + "\n")
    assert scan.crash is None and scan.metric_steps == 29  # ended after 5 lines of rank 0, then cleared by its steps


@pytest.mark.parametrize("word", ["nan", "inf"])
def test_a_nan_loss_past_the_rows_is_found_by_its_word(tmp_path, monkeypatch, word):
    monkeypatch.setattr(limits, "DETECT_LINES", 3)
    lines = trl_log(30) + [f"step 31: loss: {word}"]
    scan = scan_text(tmp_path, "\n".join(lines) + "\n")
    assert scan.crash is not None and scan.crash.kind == "nonfinite"
    assert Word(word.encode()) in Scanner("x").dialect("crashes").live(type("S", (), {"rows": 1})())  # type: ignore[arg-type]


# -- a dialect added as one module -----------------------------------------------------------------------------------

def test_deepspeed_chat_s_loss_line_and_reward_line_are_one_row_counted_on_across_epochs(tmp_path):
    lines = ["cmd = deepspeed main.py --data_path Dahoas/rm-static --actor_model_name_or_path ./sft --num_train_epochs 2",
             "***** Running training *****"]
    for epoch in (1, 2):
        lines.append(f"Beginning of Epoch {epoch}/2, Total Generation Batches 3")
        for step in range(3):
            lines += [f"Epoch: {epoch - 1} | Step: {step} | PPO Epoch: 1 | Actor Loss: 0.{step}5 | Critic Loss: 0.1 | "
                      "Unsupervised Loss: 0.0",
                      "|E2E latency=3.73s |Gather latency=0.00s (0.00%) |Generate time=2.78s (74.61%) |Training time=0.74s",
                      f"Average reward score: {epoch + step / 10}",
                      "-------------------------------------------------------------------------------------"]
    scan = scan_text(tmp_path, "\n".join(lines) + "\n")
    assert scan.trainer == "deepspeed-chat" and scan.planned_steps == 6
    assert [r["step"] for r in scan.metric_rows] == list(range(6))
    assert [r["average_reward_score"] for r in scan.metric_rows] == [1.0, 1.1, 1.2, 2.0, 2.1, 2.2]
    assert scan.metric_rows[0]["actor_loss"] == 0.05 and scan.readers == {"deepspeed-chat lines": 6}


def test_the_real_deepspeed_chat_run_reads_its_reward():
    """The real step-3 run (tests/real_runs): 477 pairs of lines, its reward -0.679 at step 0 and 4.383 at 476,
    as its label's notes count them; the reward lines were dropped before (one pair each: not a generic row)."""
    from tests.corpus import CORPUS

    [log] = (CORPUS / "deepspeed_chat_ppo_opt13b_rmstatic").glob("*.log")
    scan = scan_log(log, log.name)
    rewards = [r["average_reward_score"] for r in scan.metric_rows]
    assert len(rewards) == 477 and rewards[0] == pytest.approx(-0.6792, abs=1e-4)
    assert rewards[-1] == pytest.approx(4.3828, abs=1e-4) and scan.planned_steps == 477
