"""The outputs real-run batch E showed triage could not read or judge at first sight (tests/real_runs/README.md), each
from a small hand-made file of the same shape, with its near miss. Expected numbers are worked out beside them."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from triage_agent.commands.inspect import inspect
from triage_agent.runs.trainers.meaning import infer


def ids(report, at_least="info"):
    return {f.id for f in report.findings if f.at_least(at_least)}


def finding(rep, fid):
    return next(f for f in rep.findings if f.id == fid)


def age(root: Path, days: float = 30) -> Path:
    """Every file of the run as old as a finished copy (the life cycle reads files' age last)."""
    when = time.time() - days * 86400
    for p in root.rglob("*"):
        os.utime(p, (when, when))
    return root


# -- a metrics document keyed by metric, then step (NeMo-RL's test-suite dumps) --------------------------------
def test_a_document_of_metrics_by_step_is_read(make_run):
    # 12 steps: train/reward 0.5 on step 1, then exactly 0 (11 of 12 = 92% >= 80%: the reward is dead); grad_norm
    # 1.0 throughout; "_meta" is no metric, "n/a" no step: skipped and said
    reward = {str(s): (0.5 if s == 1 else 0.0) for s in range(1, 13)}
    doc = {"train/reward": reward, "train/grad_norm": {str(s): 1.0 for s in range(1, 13)},
           "train/loss": {**{str(s): 0.1 for s in range(1, 13)}, "n/a": 3.0}, "_meta": "nemo"}
    rep = inspect(make_run({"metrics.json": json.dumps(doc)}))
    assert rep.run.metrics is not None and rep.run.metrics.frame["step"].tolist() == list(range(1, 13))
    assert rep.run.metric_sources["reward"] == "train/reward"
    f = finding(rep, "reward.task_signal_dead")
    assert f.evidence["share_at_zero"] == pytest.approx(11 / 12, abs=1e-3)
    assert any("1 entries were no step and number" in n for n in rep.run.notes)


@pytest.mark.parametrize("doc", [{"train/loss": [0.5, 0.4]}, {"lr": 1e-5, "steps": {"a": 1}},
                                 {"model": {"name": "x"}}])
def test_a_json_document_of_another_shape_is_not_taken_for_one(tmp_path, doc):
    from triage_agent.runs.formats import by_metric

    path = tmp_path / "metrics.json"
    path.write_text(json.dumps(doc))
    assert not by_metric._sniff(path, "metrics.json")


# -- a launch whose command line argparse refused --------------------------------------------------------------
def test_an_argparse_refusal_is_the_launch_s_crash(make_run):
    usage = ("usage: train_bash.py [-h] [--model_name_or_path MODEL_NAME_OR_PATH]\n"
             "                     [--learning_rate LEARNING_RATE] [--fp16 [FP16]]\n")
    err = "train_bash.py: error: argument --fp16: Truthy value expected: got s but expected one of yes/no\n"
    rep = inspect(make_run({"nohup.out": usage + err}))
    f = finding(rep, "log.crash")
    assert f.severity == "high" and rep.run.logs[0].crash.kind == "config"
    assert rep.run.logs[0].crash.line == 3
    # usage text alone (a `--help`) is no training output and no crash
    with pytest.raises(Exception, match="nothing recognisable"):
        inspect(make_run({"nohup.out": usage}))


# -- a container runtime's timestamps before each line ---------------------------------------------------------
def test_lines_with_a_container_timestamp_are_read_as_without(make_run):
    stamp = "2025-11-23T17:14:34.972623407Z "
    lines = ["Total steps: 50", "Traceback (most recent call last):",
             '  File "/workspace/AReaL/areal/reward/math_parser.py", line 378',
             "IndentationError: expected an indented block after 'if' statement on line 377"]
    rep = inspect(make_run({"train.log": "".join(stamp + line + "\n" for line in lines)}))
    crash = rep.run.logs[0].crash
    assert crash is not None and crash.exception == "IndentationError" and crash.line == 4


# -- AReaL's stats tables ------------------------------------------------------------------------------------
def _areal_table(step: int, reward: float, grad: float) -> str:
    top = "╒══════════════════════╤═════════════╤══════════════════════╤═════════════╕\n"
    row1 = f"│ grpo_actor/task_reward/avg │ {reward:.4e} │ grpo_actor/grad_norm │ {grad:.4e} │\n"
    sep = "├──────────────────────┼─────────────┼──────────────────────┼─────────────┤\n"
    row2 = "│ grpo_actor/entropy/avg │  5.0000e-01 │ timeperf/rollout     │  7.7673e+00 │\n"
    bottom = "╘══════════════════════╧═════════════╧══════════════════════╧═════════════╛\n"
    return (f"20251123-17:23:03.392 StatsLogger INFO: Epoch 1/1 Step {step}/12 Train step {step}/12 done.\n"
            "20251123-17:23:03.393 StatsLogger INFO: Stats (1/1):\n20251123-17:23:03.402 StatsLogger INFO:\n"
            + top + row1 + sep + row2 + bottom)


def test_areal_stats_tables_are_one_row_a_step(make_run):
    # 12 tables: task reward 0 on all, grad_norm 0 on all -> dead task signal and zero gradients; two pairs a row
    log = "".join(_areal_table(s, 0.0, 0.0) for s in range(1, 13))
    rep = inspect(make_run({"logs.txt": log}))
    run = rep.run
    assert run.trainer == "areal" and run.paradigm == "policy_gradient"
    assert run.metrics.frame["step"].tolist() == list(range(1, 13))
    assert run.metric_sources["entropy"] == "grpo_actor/entropy/avg"
    assert run.metrics.frame["entropy"].tolist() == [0.5] * 12
    assert {"reward.task_signal_dead", "optim.zero_grad"} <= ids(rep)
    assert run.planned_steps[0] == 12  # `Train step g/12 done.`


# -- slime's rollout and step lines ---------------------------------------------------------------------------
def _slime(rollouts: int, crash_in_last: bool = False) -> str:
    out = []
    for r in range(rollouts):
        out.append(f"(MegatronTrainRayActor pid=1) [2026-04-04 07:39:09] log_utils.py:53 - rollout {r}: "
                   f"{{'rollout/raw_reward': 0.1, 'rollout/truncated': 0.9, 'rollout/response_lengths': 8100.0}}")
        if crash_in_last and r == rollouts - 1:
            out += ["Traceback (most recent call last):",
                    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.46 GiB."]
            break
        for k in range(2):  # two train steps a rollout, each printed by two loggers
            loss = 1.0 if k == 0 else 3.0
            for where in ("log_utils.py:443", "model.py:670"):
                out.append(f"(MegatronTrainRayActor pid=1) [2026-04-04 07:42:32] {where} - step {2 * r + k}: "
                           f"{{'train/loss': {loss}, 'train/pg_loss': {loss}, 'train/kl_loss': 0.0, 'train/grad_norm': 0.2}}")
    return "\n".join(out) + "\n"


def test_slime_rows_are_rollouts_with_their_train_steps_averaged(make_run):
    rep = inspect(make_run({"train.log": _slime(10)}))
    run = rep.run
    assert run.trainer == "slime" and run.paradigm == "policy_gradient"  # train/kl_loss is slime's reference KL
    frame = run.metrics.frame
    assert frame["step"].tolist() == list(range(10))
    assert frame["loss"].tolist() == [2.0] * 10  # (1 + 3) / 2: the two train steps, each counted once
    assert frame["clipped_share"].tolist() == [0.9] * 10
    assert "generation.truncated" in ids(rep, "medium")
    assert "data.unread" not in ids(rep)


def test_a_crash_in_a_rollout_s_first_update_stays_a_crash(make_run):
    rep = inspect(make_run({"train.log": _slime(4, crash_in_last=True)}))
    assert rep.run.logs[0].crash is not None and rep.run.logs[0].crash.kind == "oom"
    assert rep.run.metrics.frame["step"].tolist() == [0, 1, 2, 3]  # rollout 3's own metrics are kept


# -- a progress bar drawn once at zero with no description is no plan -------------------------------------------
def test_a_bare_bar_at_zero_is_no_plan(make_run):
    log = ("step:1 - critic/score/mean:0.5 - actor/entropy:0.5\n"
           "  0%|          | 0/67 [00:00<?, ?it/s]\n"
           "Capturing batches (bs=512 avail_mem=37.22 GB):   1%|▏         | 1/67 [00:01<01:47,  1.62s/it]\n"
           + "".join(f"step:{s} - critic/score/mean:0.5 - actor/entropy:0.5\n" for s in range(2, 20)))
    rep = inspect(age(make_run({"train.log": log})))
    assert rep.run.planned_steps is None or rep.run.planned_steps[0] != 67


# -- TensorBoard: one event file per launch ----------------------------------------------------------------------
def test_event_files_of_launches_that_start_again_are_a_resume(make_run, tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    root = make_run({})
    (root / "tb").mkdir()
    for stamp, steps in ((1753063526, 5), (1753081751, 31)):  # a launch that reached step 4, then one from 0
        tmp = tmp_path / f"w{stamp}"
        writer = EventFileWriter(str(tmp))
        for s in range(steps):
            writer.add_event(event_pb2.Event(wall_time=stamp + s, step=s, summary=summary_pb2.Summary(value=[
                summary_pb2.Summary.Value(tag="critic/score/mean", simple_value=0.1 * (s % 3))])))
        writer.close()
        (src,) = tmp.iterdir()
        src.rename(root / "tb" / f"events.out.tfevents.{stamp}.node.1.0")
    rep = inspect(root)
    f = finding(rep, "run.resume_discontinuity")
    assert f.evidence["resume_step"] == 0 and f.evidence["furthest_before"] == 4
    assert f.evidence["source"] == "tb/events.out.tfevents.1753081751.node.1.0"


# -- several eval sets' losses (transformers: eval_<set>_loss) ----------------------------------------------------
def test_an_eval_set_s_loss_rising_while_training_falls_is_overfitting(make_run):
    # 10 epochs: training loss 1.0 -> 0.1 (0.1 a step down); eval_g0_loss 1.1 at epoch 1, then +0.2 an epoch: 2.9
    rows = []
    for e in range(1, 11):
        rows.append({"step": 100 * e, "epoch": float(e), "loss": round(1.1 - 0.1 * e, 3), "learning_rate": 1e-5})
        rows.append({"step": 100 * e, "epoch": float(e), "eval_g0_loss": round(0.9 + 0.2 * e, 3),
                     "eval_g1_loss": 2.0})
    state = {"global_step": 1000, "max_steps": 1000, "log_history": rows}
    rep = inspect(make_run({"trainer_state.json": json.dumps(state)}))
    f = finding(rep, "train.overfitting")
    assert f.evidence is not None and rep.run.eval_loss is not None
    assert rep.run.eval_loss.frame["eval_loss"].tolist() == pytest.approx([0.9 + 0.2 * e for e in range(1, 11)])


# -- crashes: a launcher's exception after the worker's own error -------------------------------------------------
def test_areal_s_launcher_exception_follows_the_worker_s_oom(make_run):
    log = ("Total steps: 50\n[rank0]: Traceback (most recent call last):\n"
           "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.23 GiB.\n"
           "Traceback (most recent call last):\n"
           '  File "/workspace/AReaL/areal/launcher/local.py", line 235, in wait\n'
           "areal.utils.launcher.JobException: Job gsm8k:trainer JobState.COMPLETED at node local\n")
    crash = inspect(make_run({"train.log": log})).run.logs[0].crash
    assert crash.kind == "oom" and crash.line == 3


def test_an_async_task_runner_is_no_verl_launch(make_run):
    log = ("20251122-16:41:46.150 [Remote Inference Engine Rank 0] ERROR: AsyncTaskRunner: Task 8 failed\n"
           "20251123-17:23:03.392 StatsLogger INFO: Epoch 1/1 Step 1/5 Train step 1/5 done.\n")
    assert inspect(make_run({"train.log": log})).run.trainer == "areal"


# -- names ---------------------------------------------------------------------------------------------------
def test_names_of_penalties_and_flags_are_no_series():
    assert infer("grpo_actor/kl_rewards/avg") is None  # -kl_ctl x KL, paid as reward
    assert infer("grpo_actor/update_successful") is None  # an optimiser step's flag
    assert infer("grpo_actor/task_reward/avg")[0] == "reward"


# -- an event at the second point ----------------------------------------------------------------------------
@pytest.mark.parametrize("after, raised", [(11.0, True), (0.9, False)])
def test_entropy_that_blows_up_at_the_second_step(make_run, after, raised):
    # 30 steps: 0.2 at step 1, then `after` (+-0.01) on every later step: 11 / 0.2 = 55x >= 5x the first value;
    # 0.9 / 0.2 = 4.5x is short of it (and the head mean, 0.78, hides it either way)
    ent = [0.2] + [after + (0.01 if i % 2 else -0.01) for i in range(29)]
    state = {"global_step": 30, "max_steps": 30, "log_history": [
        {"step": i + 1, "entropy": e, "reward": 0.5, "loss": 0.1} for i, e in enumerate(ent)]}
    rep = inspect(make_run({"trainer_state.json": json.dumps(state)}))
    got = [f for f in rep.findings if f.id == "policy.entropy_blowup"]
    assert bool(got) is raised
    if raised:
        assert got[0].evidence["judged_against"] == "first" and got[0].evidence["head_mean"] == pytest.approx(0.2)


# -- tied groups from the advantage bounds -------------------------------------------------------------------------
@pytest.mark.parametrize("zeros, raised", [(12, True), (8, False)])
def test_advantages_all_zero_say_the_groups_tie(make_run, zeros, raised):
    # 20 steps; on the first `zeros` of them the batch's advantages/max and /min are both 0: 12/20 = 60% >= 50%
    rows = [{"step": s + 1, "critic/score/mean": 0.3, "actor/entropy": 0.5,
             "critic/advantages/max": 0.0 if s < zeros else 1.2, "critic/advantages/min": 0.0 if s < zeros else -1.1}
            for s in range(20)]
    rep = inspect(make_run({"metrics.jsonl": "".join(json.dumps(r) + "\n" for r in rows)}))
    got = [f for f in rep.findings if f.id == "reward.zero_variance_groups"]
    assert bool(got) is raised
    if raised:
        assert got[0].evidence["zero_advantage_share"] == pytest.approx(0.6)
