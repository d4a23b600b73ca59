"""Real trainer outputs: TRL, verl (console and JSONL), TensorBoard, W&B, and the shared real runs."""

import json
import time

import pandas as pd
import pytest

from tests.conftest import REAL_RUNS, finding_ids
from triage_agent.commands.inspect import inspect
from triage_agent.runs.load import load_run


def trl_state(rows):
    return {"global_step": rows[-1]["step"], "logging_steps": 1, "log_history": rows}


def test_trl_keys_are_mapped(make_run):
    rows = [{"step": s, "epoch": s / 10, "reward": 0.1 * s, "reward_std": 0.5, "frac_reward_zero_std": 0.25,
             "completions/clipped_ratio": 0.1, "completions/mean_length": 100 + s, "kl": 0.01 * s,
             "entropy": 1.0 - 0.1 * s, "rewards/format_fn/mean": 0.5, "rewards/format_fn/std": 0.1,
             "rewards/acc_fn": 0.2 * s} for s in range(1, 6)]
    rows.append({"step": 5, "eval_loss": 1.0, "eval_reward": 0.3})
    rows.append({"step": 5, "train_runtime": 100.0, "train_loss": 0.1, "total_flos": 0.0})
    run = load_run(make_run({"out/trainer_state.json": trl_state(rows)}))
    m = run.metrics.frame
    assert m["step"].tolist() == [1, 2, 3, 4, 5]  # eval and summary rows kept apart
    assert m["reward"].tolist() == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5])
    assert m["reward_std"].iloc[0] == 0.5 and m["zero_std_share"].iloc[0] == 0.25
    assert m["clipped_share"].iloc[0] == 0.1 and m["length"].tolist()[:2] == [101, 102]
    assert m["kl"].iloc[-1] == pytest.approx(0.05) and m["entropy"].iloc[-1] == pytest.approx(0.5)
    (policy,) = run.rounds
    assert sorted(c for c in policy.history.frame.columns) == ["acc_fn", "format_fn", "step", "total"]
    assert policy.history.frame["acc_fn"].tolist() == pytest.approx([0.2, 0.4, 0.6, 0.8, 1.0])
    assert any("1 eval rows" in n for n in run.notes)


def test_trl_older_completion_length_key(make_run):
    rows = [{"step": s, "completion_length": 50.0, "reward": 0.1} for s in range(1, 4)]
    run = load_run(make_run({"training_logs.json": trl_state(rows)}))
    assert run.metrics.frame["length"].tolist() == [50.0, 50.0, 50.0]


@pytest.mark.parametrize(("clipped", "zero_std", "expected"), [
    (0.29, 0.49, set()), (0.30, 0.5, {"generation.truncated", "reward.zero_variance_groups"})])
def test_any_run_findings_thresholds(make_run, clipped, zero_std, expected):
    # first 80% of steps are clean; only the last 20% (steps 9, 10) count
    rows = [{"step": s, "reward": 0.1, "completions/clipped_ratio": 0.0 if s <= 8 else clipped,
             "frac_reward_zero_std": 0.0 if s <= 8 else zero_std} for s in range(1, 11)]
    rep = inspect(make_run({"trainer_state.json": trl_state(rows)}))
    assert finding_ids(rep, "medium") == expected


def test_truncated_high_at_080(make_run):
    rows = [{"step": s, "completions/clipped_ratio": 0.8} for s in range(1, 6)]
    rep = inspect(make_run({"trainer_state.json": trl_state(rows)}))
    assert next(f for f in rep.findings if f.id == "generation.truncated").severity == "high"


VERL_LINE = ("\x1b[36m(TaskRunner pid=123)\x1b[0m step:{s} - critic/score/mean:np.float64({r}) - "
             "critic/rewards/mean:{r} - response_length/mean:{L} - response_length/clip_ratio:np.float64(0.5) - "
             "actor/entropy:0.9 - actor/kl_loss:0.01 - val-core/acc/mean:0.3 - timing_s/gen:12.5\n")


def test_verl_console_lines(make_run):
    log = "starting\n" + "".join(VERL_LINE.format(s=s, r=0.1 * s, L=100 * s) for s in (1, 2, 3)) + "done\n"
    run = load_run(make_run({"verl_demo.log": log}))
    m = run.metrics.frame
    assert m["step"].tolist() == [1, 2, 3]
    assert m["reward"].tolist() == pytest.approx([0.1, 0.2, 0.3])
    assert m["length"].tolist() == [100, 200, 300]
    assert m["clipped_share"].tolist() == [0.5] * 3
    assert m["entropy"].iloc[0] == 0.9 and m["kl"].iloc[0] == 0.01
    (scan,) = run.logs
    assert (scan.metric_steps, scan.last_step, scan.last_step_line, scan.crash) == (3, 3, 4, None)
    assert "generation.truncated" in finding_ids(inspect(run.root))


def test_verl_file_logger_jsonl(make_run):
    rows = [{"step": s, "data": {"critic/score/mean": 0.2 * s, "response_length/clip_ratio": 0.0,
                                 "actor/entropy": 1.1}} for s in (1, 2)]
    run = load_run(make_run({"logs/metrics.jsonl": rows}))
    assert run.metrics.frame["reward"].tolist() == pytest.approx([0.2, 0.4])
    assert run.metrics.frame["entropy"].tolist() == [1.1, 1.1]


def test_tensorboard_event_file(make_run, tmp_path):
    pytest.importorskip("tensorboard", reason="writes its events with tensorboard's own writer (the dev extra)")
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    root = make_run({"configs/x_config.yaml": "a: 1\n"})
    writer = EventFileWriter(str(root / "tb"))
    for s in range(1, 4):
        values = [summary_pb2.Summary.Value(tag="train/reward", simple_value=0.25 * s),
                  summary_pb2.Summary.Value(tag="train/rewards/fmt/mean", simple_value=0.5),
                  summary_pb2.Summary.Value(tag="train/completions/clipped_ratio", simple_value=0.9)]
        writer.add_event(event_pb2.Event(wall_time=time.time(), step=s, summary=summary_pb2.Summary(value=values)))
    writer.close()
    run = load_run(root)
    m = run.metrics.frame
    assert m["step"].tolist() == [1, 2, 3]
    assert m["reward"].tolist() == pytest.approx([0.25, 0.5, 0.75])
    assert m["rc:fmt"].tolist() == pytest.approx([0.5] * 3)
    assert finding_ids(inspect(root), "high") == {"generation.truncated"}


def test_wandb_run_folder(make_run):
    hist = [{"_step": s, "train/global_step": s * 10, "train/reward": 0.1 * s, "train/frac_reward_zero_std": 0.9,
             "_runtime": 1.0} for s in range(1, 5)]
    files = {
        "wandb/run-20250101_000000-abc/files/wandb-history.jsonl": hist,
        "wandb/run-20250101_000000-abc/files/wandb-summary.json": {"train/reward": 0.4, "_step": 4},
        "wandb/run-20250101_000000-abc/files/config.yaml":
            "wandb_version: 1\nbeta:\n  desc: null\n  value: 0.04\nmax_completion_length:\n  value: 256\n",
        "wandb/run-20250101_000000-abc/files/output.log": "hello\n",
        "wandb/run-20250101_000000-abc/run-abc.wandb": b"\x00binary",
    }
    run = load_run(make_run(files))
    assert run.metrics.frame["step"].tolist() == [10, 20, 30, 40]
    assert run.metrics.frame["reward"].tolist() == pytest.approx([0.1, 0.2, 0.3, 0.4])
    beta = run.config("beta")
    assert (beta.key, beta.value) == ("beta.value", 0.04)
    # the binary run file is read too (tests/test_wandb_binary.py): this one is no W&B file, and says so
    assert [(e.file, e.message) for e in run.parse_errors if e.file.endswith(".wandb")] == [
        ("wandb/run-20250101_000000-abc/run-abc.wandb", "not a W&B run file (no :W&B header) at byte 0; read up to there")]
    assert "reward.zero_variance_groups" in finding_ids(inspect(run.root))


TRACEBACK = """Traceback (most recent call last):
  File "train.py", line 10, in <module>
    main()
  File "train.py", line 5, in main
    raise {exc}
{exc_line}
"""


def test_crash_traceback_is_found_with_line_and_last_step(make_run):
    log = (VERL_LINE.format(s=7, r=0.1, L=10) + "more output\n"
           + TRACEBACK.format(exc="RuntimeError('boom')", exc_line="RuntimeError: boom"))
    rep = inspect(make_run({"train.log": log}))
    f = next(f for f in rep.findings if f.id == "log.crash")
    assert f.evidence["exception"] == "RuntimeError" and f.evidence["message"] == "boom"
    assert f.evidence["line"] == 8 and f.evidence["last_step"] == 7


def test_traceback_followed_by_progress_is_not_a_crash(make_run):
    log = (TRACEBACK.format(exc="ValueError('x')", exc_line="ValueError: x")
           + VERL_LINE.format(s=1, r=0.1, L=10))
    assert "log.crash" not in finding_ids(inspect(make_run({"train.log": log})))


def test_logged_traceback_is_a_handled_error(make_run):
    log = ("step:1 - critic/score/mean:0.5\nERROR:2026-03-26 21:59:41,526:Traceback (most recent call last):\n  File \"x.py\", line 1, in f\n"
           "TypeError: cannot unpack\nnext line\n")
    run = load_run(make_run({"w.log": log}))
    assert run.logs[0].crash is None and run.logs[0].handled_tracebacks == 1


@pytest.mark.parametrize(("line", "label"), [
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "CUDA OOM"),
    ("[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1) ran for 600000 ms", "NCCL timeout"),
    ("Loss is nan, stopping training", "NaN/inf loss"),
    ("Segmentation fault (core dumped)", "Segmentation fault"),
])
def test_fatal_lines(make_run, line, label):
    log = VERL_LINE.format(s=3, r=0.1, L=10) + line + "\n"
    rep = inspect(make_run({"run.log": log}))
    f = next(f for f in rep.findings if f.id == "log.crash")
    assert label in f.evidence["exception"] and f.evidence["line"] == 2


def test_no_progress_with_progress_bar(make_run):
    log = "loading model\nTraining Progress:   0%|          | 0/58 [07:16<?, ?it/s]\n"
    rep = inspect(make_run({"run.log": log}))
    f = next(f for f in rep.findings if f.id == "log.no_progress")
    assert f.evidence["progress"] == "0/58" and f.evidence["line"] == 2
    log = "Training Progress:   2%|          | 1/58 [07:16<?, ?it/s]\n"
    assert "log.no_progress" not in finding_ids(inspect(make_run({"run.log": log})))


REAL = {
    # clipped_ratio ends at 1.0 and the reward goes negative (SOURCES.md)
    "trl-grpo-chaos-economy-a": {"generation.truncated", "reward.collapsed", "reward.flat",
                                 "reward.component_dominates"},
    "trl-grpo-chaos-economy-b": {"generation.truncated", "reward.flat"},
    "verl-ppo-maze-crash": {"log.crash"},
    "verl-ppo-tpu-stalled": {"log.no_progress"},
    "verl-grpo-gui-cursor": {"run.stopped_early"},  # step 2 of 563,250 planned, no crash
}


@pytest.mark.skipif(not REAL_RUNS.is_dir(), reason="the unlicensed public runs of the maintainers' set are not redistributed with the repository")
@pytest.mark.parametrize("name", sorted(REAL))
def test_real_runs(name):
    rep = inspect(REAL_RUNS / name, now=time.time() + 86400)  # the copies' mtimes are recent: judge them a day on
    assert finding_ids(rep, "medium") == REAL[name]
    if name == "trl-grpo-chaos-economy-a":
        # the peak of the trailing rolling mean (window max(5, 40 // 20) = 5), computed here with pandas
        frame = pd.DataFrame(json.loads((REAL_RUNS / name / "trainer_state.json").read_text())["log_history"])
        frame = frame.dropna(subset=["reward"])
        roll = frame["reward"].rolling(5, min_periods=1).mean()
        f = next(f for f in rep.findings if f.id == "reward.collapsed")
        assert f.evidence["peak_step"] == int(frame["step"].iloc[int(roll.to_numpy().argmax())])
    if name == "verl-grpo-gui-cursor":
        f = next(f for f in rep.findings if f.id == "run.stopped_early")
        assert (f.evidence["last_step"], f.evidence["planned_steps"]) == (2, 563250)
    if name == "verl-ppo-maze-crash":
        f = rep.findings[0]
        assert f.evidence["kind"] == "other"
        assert f.evidence["frame"]["file"].endswith("verl/utils/reward_score/__init__.py")
        assert f.evidence["frame"]["function"] == "_default_compute_score"
    if name == "verl-ppo-maze-crash":
        f = rep.findings[0]
        assert f.evidence["exception"] == "NotImplementedError" and f.evidence["last_step"] is None
    if name == "verl-grpo-gui-cursor":
        assert rep.run.metrics.frame["step"].tolist() == [1, 2]
        assert rep.run.metrics.frame["reward"].tolist() == pytest.approx([0.6530305743217468, 0.6419896483421326])
    if name.startswith("trl"):
        assert rep.run.metrics.frame["clipped_share"].iloc[-1] == 1.0
    json.dumps([f.evidence for f in rep.findings])


def test_known_names_are_the_one_alternation_they_replace():
    """trainers.known: exact names in a set and globs one by one, held to the single regex alternation of every
    name's glob it replaced (issue 40), on every profile's names, their prefix-stripped forms and near misses."""
    import re

    from triage_agent.runs import trainers
    from triage_agent.runs.trainers.profile import glob

    T = trainers
    for trainer in (None, *(p.name for p in T.profiles())):
        own = T.by_name(trainer)
        mine = (*own.names, *own.raw) if own is not None else ()
        mapped = [n for p in T.profiles() for n, s in p.names.items()
                  if not T._is_glob(n) or (s not in T._NOT_ALIASED and s not in T.PREFERENCE_SERIES)]
        pats = sorted({glob(form).pattern for n in (*mine, *mapped) for form in (n, T._bare(n))})
        pattern = re.compile("|".join(f"(?:{x})" for x in pats) or r"(?!)")
        got = T.known(trainer)
        names = {n for p in T.profiles() for n in p.names} | set(mine)
        names |= {n + "x" for n in sorted(names)[:300]} | {"x/" + n for n in sorted(names)[:300]}
        names |= {T._bare(n) for n in list(names)}
        names |= {"reward/mean", "train/reward_std", "eval/loss", "a/b/c", "", "*", "{x}", "actor/pg_loss"}
        for n in names:
            assert got.fullmatch(n) == bool(pattern.fullmatch(n)), (trainer, n)
