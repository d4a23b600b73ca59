"""Each finding of trainer-findings.md raised from realistic log lines and silent on a near miss.

Series are built so that head and tail means (first/last 20% of steps, at least 3 points) are exact:
constant blocks at both ends, so every threshold below is checked by hand.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np
import pytest

from tests.conftest import REPO
from triage_agent.commands.inspect import inspect
from triage_agent.errors import TriageError
from triage_agent.samples import synth


def ids(report, at_least="info"):
    return {f.id for f in report.findings if f.at_least(at_least)}


def state(rows, max_steps=None):
    return json.dumps({"max_steps": max_steps, "log_history": rows})


def blocks(head, tail, n=20, k=4):
    """n values: k at `head`, k at `tail`, a straight line between: head/tail means are exactly head and tail."""
    mid = np.linspace(head, tail, n - 2 * k + 2)[1:-1]
    return [head] * k + list(mid) + [tail] * k


def trl(make_run, series, extra=None, **files):
    n = len(next(iter(series.values())))
    rows = [{"step": i + 1, **{k: v[i] for k, v in series.items()}} for i in range(n)]
    return make_run({"trainer_state.json": state(rows, extra), **files})


def finding(rep, fid):
    return next(f for f in rep.findings if f.id == fid)


# -- reward ------------------------------------------------------------------------------------------
def test_reward_flat_and_near_misses(make_run):
    wiggle = [0.5 + (0.01 if i % 2 else -0.01) for i in range(40)]  # no trend, tail - head = 0
    assert "reward.flat" in ids(inspect(trl(make_run, {"reward": wiggle})))
    assert "reward.flat" not in ids(inspect(trl(make_run, {"reward": wiggle[:29]})))  # fewer than 30 steps
    assert "reward.flat" not in ids(inspect(trl(make_run, {"reward": list(np.linspace(0, 1, 40))})))  # rho 1


def test_reward_collapsed_and_near_miss(make_run):
    up = list(np.linspace(0.0, 1.0, 20))
    # window 5 (trailing); the rolling mean peaks at step 22: (18/19 + 17/19... ) = (0.8947 + 0.9474 + 1 + 1 +
    # 0.9273) / 5 = 0.9539; rolling minimum 0 (the first point); tail 0.2: (0.954 - 0.2) / 0.954 = 0.79 >= 0.5
    rep = inspect(trl(make_run, {"reward": up + list(np.linspace(1.0, 0.2, 12)) + [0.2] * 8}))
    f = finding(rep, "reward.collapsed")
    assert f.severity == "high" and f.evidence["peak_step"] == 22 and f.evidence["tail_mean"] == pytest.approx(0.2)
    assert f.evidence["peak_rolling_mean"] == pytest.approx(0.9539, abs=1e-4)
    # falling back only to 0.7: (0.954 - 0.7) / 0.954 = 0.27 < 0.5
    near = inspect(trl(make_run, {"reward": up + list(np.linspace(1.0, 0.7, 12)) + [0.7] * 8}))
    assert "reward.collapsed" not in ids(near)


# -- policy ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("tail", "severity"), [(0.2, "medium"), (0.1, "high"), (0.3, None)])
def test_entropy_collapse(make_run, tail, severity):
    rep = inspect(trl(make_run, {"entropy": blocks(1.0, tail)}))
    if severity is None:
        assert "policy.entropy_collapse" not in ids(rep)
    else:
        f = finding(rep, "policy.entropy_collapse")
        assert f.severity == severity and f.evidence["tail_over_head"] == pytest.approx(tail)


@pytest.mark.parametrize(("tail", "severity"), [(0.6, "medium"), (2.5, "high"), (0.45, None)])
def test_kl_explosion(make_run, tail, severity):
    rep = inspect(trl(make_run, {"kl": blocks(0.01, tail)}))
    got = {f.id: f.severity for f in rep.findings}.get("policy.kl_explosion")
    assert got == severity


def test_kl_spike_in_a_five_step_window(make_run):
    # head and tail 0.01; steps 11-15 at 0.8: the 5-step rolling mean is (0.02 + 3 x 0.8) / 5 = 0.484 at step 13,
    # (0.01 + 4 x 0.8) / 5 = 0.642 >= 0.5 at step 14, and 0.8 at step 15
    kl = [0.01] * 10 + [0.8] * 5 + [0.01] * 10
    f = finding(inspect(trl(make_run, {"kl": kl})), "policy.kl_explosion")
    assert f.evidence["max_rolling_mean"] == pytest.approx(0.8) and f.evidence["start_step"] == 14
    one = [0.01] * 10 + [0.8] + [0.01] * 14  # one step: rolling mean (0.8 + 4 x 0.01) / 5 = 0.168 < 0.5
    assert "policy.kl_explosion" not in ids(inspect(trl(make_run, {"kl": one})))


@pytest.mark.parametrize(("key", "tail", "raised"), [
    ("token_mult_prob_error", 1.1, True), ("token_mult_prob_error", 1.04, False),
    ("sampling/importance_sampling_ratio/mean", 0.7, True), ("sampling/importance_sampling_ratio/mean", 0.85, False)])
def test_train_inference_mismatch(make_run, key, tail, raised):
    rep = inspect(trl(make_run, {key: blocks(1.0, tail)}))
    assert ("policy.train_inference_mismatch" in ids(rep)) is raised


# -- optimisation ------------------------------------------------------------------------------------
def test_nonfinite_from_a_console_log_and_absent_is_not_nan(make_run):
    s = synth.healthy(30, 5)
    text = synth.trl_console(s).replace("'loss': ", "'loss': nan, 'x': ", 1)  # the first logged loss is nan
    f = finding(inspect(make_run({"train.log": text})), "optim.nonfinite")
    assert f.evidence["start_step"] == 1 and f.evidence["series"]["loss"]["steps"] == 1
    rows = [{"step": i, "loss": 0.1} for i in range(1, 13)]
    del rows[6]["loss"]  # a step without a loss is missing, not NaN
    assert "optim.nonfinite" not in ids(inspect(make_run({"trainer_state.json": state(rows)})))


@pytest.mark.parametrize(("values", "severity"), [
    ({15: 6.0}, "info"),  # median of the 14 before is 0.5: 6.0 > 10 x 0.5 and > 1.0, but 12x, one step, recovered
    ({15: 6.0, 16: 6.0}, "medium"),  # sustained: step 16 is 6.0 > 10 x 0.5 too (two spikes, under three)
    ({15: 10.0}, "medium"),  # isolated but 20x the median of 0.5: at the grad_spike_isolated_ratio bar
    ({15: 9.9}, "info"),  # 19.8x: under it
    ({15: 4.9}, None),  # 4.9 < 5.0
    ({12: 6.0, 15: 6.0, 18: 6.0}, "high"),  # three spikes
])
def test_grad_norm_spike(make_run, values, severity):
    grad = [0.5] * 20
    for step, v in values.items():
        grad[step - 1] = v
    got = {f.id: f.severity for f in inspect(trl(make_run, {"grad_norm": grad})).findings}
    assert got.get("optim.grad_norm_spike") == severity


def test_small_spike_below_one_is_not_a_spike(make_run):
    grad = [0.05] * 20
    grad[14] = 0.9  # 18 x the median but not above 1.0
    assert "optim.grad_norm_spike" not in ids(inspect(trl(make_run, {"grad_norm": grad})))


@pytest.mark.parametrize(("zeros", "raised"), [(4, True), (3, False)])  # 4/20 = 20%, 3/20 = 15%
def test_zero_grad(make_run, zeros, raised):
    grad = [0.0] * zeros + [0.4] * (20 - zeros)
    assert ("optim.zero_grad" in ids(inspect(trl(make_run, {"grad_norm": grad})))) is raised


# -- generation --------------------------------------------------------------------------------------
@pytest.mark.parametrize(("tail", "raised"), [(100.0, True), (101.0, False)])
def test_length_collapse(make_run, tail, raised):
    rep = inspect(trl(make_run, {"completions/mean_length": blocks(400.0, tail)}))
    assert ("generation.length_collapse" in ids(rep)) is raised


@pytest.mark.parametrize(("series", "raised"), [
    ({"completions/mean_length": blocks(100.0, 300.0)}, True),
    ({"completions/mean_length": blocks(100.0, 299.0)}, False),
    ({"completions/clipped_ratio": blocks(0.04, 0.30)}, True),
    ({"completions/clipped_ratio": blocks(0.05, 0.30)}, False),  # the head is not below 0.05
])
def test_length_explosion(make_run, series, raised):
    assert ("generation.length_explosion" in ids(inspect(trl(make_run, series)))) is raised


# -- reward components -------------------------------------------------------------------------------
@pytest.mark.parametrize(("b_scale", "severity"), [(0.3, "high"), (0.5, "medium"), (0.7, None)])
def test_component_dominates(make_run, b_scale, severity):
    # a = +1,-1,... and b = s x (+1,+1,-1,-1,...) are uncorrelated over 20 steps, so a's share is
    # Var(a) / (Var(a) + Var(b)) = 1 / (1 + s^2): 0.917 (high), 0.8 (medium), 0.671 (< 0.70)
    a = [1.0 if i % 2 == 0 else -1.0 for i in range(20)]
    b = [b_scale if i % 4 < 2 else -b_scale for i in range(20)]
    rep = inspect(trl(make_run, {"rewards/a/mean": a, "rewards/b/mean": b, "rewards/dead/mean": [0.0] * 20}))
    got = {f.id: f for f in rep.findings}.get("reward.component_dominates")
    assert (got.severity if got else None) == severity
    if got:
        assert got.evidence["shares"]["a"] == pytest.approx(1 / (1 + b_scale**2), abs=1e-3)
        assert got.evidence["dead"] == ["dead"] and got.evidence["stagnant"] == ["b"]


def test_a_component_constant_at_a_value_like_0_7_is_dead_not_live(make_run):
    # twenty logs of 0.7: their mean is not exactly 0.7 in floating point, so a standard deviation came out at
    # 1.1e-16 and the constant component counted as live; a constant is a constant (max == min)
    a = [1.0 if i % 2 == 0 else -1.0 for i in range(20)]
    b = [0.3 if i % 4 < 2 else -0.3 for i in range(20)]
    rep = inspect(trl(make_run, {"rewards/a/mean": a, "rewards/b/mean": b, "rewards/fmt/mean": [0.7] * 20}))
    got = finding(rep, "reward.component_dominates")
    assert got.evidence["dead"] == ["fmt"] and set(got.evidence["shares"]) == {"a", "b"}
    assert got.evidence["shares"]["a"] == pytest.approx(1 / (1 + 0.3**2), abs=1e-3)  # 0.917


def test_proxy_gold_divergence_on_verl_and_trl(make_run):
    rising, flat = list(np.linspace(0.1, 0.9, 20)), [0.5 + (0.01 if i % 2 else -0.01) for i in range(20)]
    rows = [{"step": i + 1, "critic/rewards/mean": rising[i], "critic/score/mean": flat[i]} for i in range(20)]
    root = make_run({"metrics.jsonl": "".join(json.dumps({"step": r.pop("step"), "data": r}) + "\n" for r in rows)})
    f = finding(inspect(root), "hacking.proxy_gold_divergence")
    assert f.evidence["optimized"] == "critic/rewards/mean" and f.evidence["check"] == "critic/score/mean"
    both = [{"step": i + 1, "critic/rewards/mean": rising[i], "critic/score/mean": rising[i]} for i in range(20)]
    root = make_run({"metrics.jsonl": "".join(json.dumps({"step": r.pop("step"), "data": r}) + "\n" for r in both)})
    assert "hacking.proxy_gold_divergence" not in ids(inspect(root))
    # TRL: eval rows (kept apart from training rows) are the validation series
    rows = [{"step": i + 1, "reward": rising[i]} for i in range(20)] + \
        [{"step": i + 1, "eval_reward": flat[i]} for i in range(20)]
    f = finding(inspect(make_run({"trainer_state.json": state(rows)})), "hacking.proxy_gold_divergence")
    assert f.evidence["check"] == "eval_reward"


# -- run state ---------------------------------------------------------------------------------------
def test_stopped_early_in_progress_and_finished(make_run):
    rows = [{"step": i, "loss": 0.1} for i in range(1, 51)]
    root = make_run({"trainer_state.json": state(rows, 100)})
    mtime = os.path.getmtime(root / "trainer_state.json")
    f = finding(inspect(root, now=mtime + 3600), "run.stopped_early")
    assert f.evidence["last_step"] == 50 and f.evidence["planned_steps"] == 100 and f.severity == "medium"
    g = finding(inspect(root, now=mtime + 60), "run.in_progress")
    assert g.severity == "info" and "run.stopped_early" not in ids(inspect(root, now=mtime + 60))
    done = make_run({"trainer_state.json": state([{"step": i, "loss": 0.1} for i in range(1, 91)], 100)})
    assert not {"run.stopped_early", "run.in_progress"} & ids(inspect(done, now=time.time() + 3600))  # 90% done


def test_stopped_early_reads_verl_and_progress_bar_totals(make_run):
    s = synth.truncate(synth.healthy(60, 7), 20)
    root = make_run({"verl_demo.log": synth.verl_console(s, 58)})
    f = finding(inspect(root, now=time.time() + 3600), "run.stopped_early")
    assert (f.evidence["last_step"], f.evidence["planned_steps"]) == (20, 58)


def test_a_crash_is_not_a_silent_stop(make_run):
    s = synth.truncate(synth.healthy(60, 7), 20)
    log = synth.trl_console(s, 60, "Traceback (most recent call last):\n  File \"t.py\", line 1, in <module>\n"
                                   "RuntimeError: boom\n")
    rep = inspect(make_run({"train.log": log}), now=time.time() + 3600)
    assert "log.crash" in ids(rep) and "run.stopped_early" not in ids(rep)


def test_metrics_not_logged_names_the_reason(make_run):
    root = trl(make_run, {"reward": list(np.linspace(0, 1, 12))}, **{"grpo_config.yaml": "beta: 0\n"})
    f = finding(inspect(root), "metrics.not_logged")
    assert f.severity == "info" and "grpo_config.yaml:beta is 0" in f.evidence["series"]["kl"]
    assert "entropy" in f.evidence["series"] and "reward" not in f.evidence["series"]


# -- crashes -----------------------------------------------------------------------------------------
TB = 'Traceback (most recent call last):\n  File "/work/train.py", line 12, in main\n    step()\n{line}\n'


@pytest.mark.parametrize(("line", "kind"), [
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "oom"),
    ("torch.distributed.DistBackendError: [Rank 3] Watchdog caught collective operation timeout", "nccl_timeout"),
    ("vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue", "engine_dead"),
    ("ImportError: /x/flash_attn_2_cuda.so: undefined symbol: _ZN3c104cuda9SetDeviceEi", "import"),
    ("OSError: [Errno 28] No space left on device", "disk"),
    ("AssertionError: loss is nan", "nonfinite"),
    ("omegaconf.errors.ConfigAttributeError: Key 'rollout_n' is not in struct", "config"),
    ("KeyError: 'answer'", "other"),
])
def test_crash_kinds_with_the_training_frame(make_run, line, kind):
    log = "step:3 - critic/score/mean:0.5\n" + TB.format(line=line)
    f = finding(inspect(make_run({"train.log": log})), "log.crash")
    assert f.evidence["kind"] == kind and f.evidence["frame"] == {"file": "/work/train.py", "line": 12,
                                                                  "function": "main"}
    assert f.evidence["last_step"] == 3 and f.fix


def test_killed_is_a_signal(make_run):
    f = finding(inspect(make_run({"train.log": "step:3 - critic/score/mean:0.5\nKilled\n"})), "log.crash")
    assert f.evidence["kind"] == "signal"


def test_cascade_reports_the_root_import_error(make_run):
    log = ("(TaskRunner pid=1) actor_rollout_ref: {}\n"
           "(WorkerDict pid=7) Traceback (most recent call last):\n"
           '(WorkerDict pid=7)   File "/usr/lib/python3.10/site-packages/ray/_private/worker.py", line 5, in f\n'
           '(WorkerDict pid=7)   File "/code/verl/workers/fsdp_workers.py", line 40, in <module>\n'
           "(WorkerDict pid=7) ImportError: /env/flash_attn_2_cuda.so: undefined symbol: _ZN3c10\n"
           "The actor with name WorkerDict failed to import on the worker.\n"
           "Traceback (most recent call last):\n"
           '  File "/code/verl/trainer/main_ppo.py", line 90, in main\n'
           "AssertionError: failed to get register_center_actor\n")
    f = finding(inspect(make_run({"grpo.log": log})), "log.crash")
    assert (f.evidence["kind"], f.evidence["exception"], f.evidence["line"]) == ("import", "ImportError", 5)
    assert f.evidence["frame"]["file"] == "/code/verl/workers/fsdp_workers.py"
    assert f.evidence["followed_by"][-1]["exception"] == "AssertionError"


def test_a_log_with_no_training_in_it_is_nothing_recognisable(make_run):
    java = "Exception in thread main java.lang.NullPointerException\n\tat org.x.Main.main(Main.java:5)\n"
    with pytest.raises(TriageError, match="nothing recognisable") as err:
        inspect(make_run({"app.log": java}))
    assert err.value.exit_code == 2
    # beside a config it is read, but a log without training output cannot have stalled training
    assert "log.no_progress" not in ids(inspect(make_run({"app.log": java, "configs/c.yaml": "a: 1\n"})))


def test_a_launch_command_echoed_by_its_script_is_configuration_not_metrics(make_run):
    # a script under `set -x` echoes its command with its overrides (as a Logic-RL log of batch J does, six times):
    # three lines holding loss/kl/lr pairs, the same shape each time, and no step ever logged: no progress
    cmd = ("python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.optim.lr=5e-7 "
           "actor_rollout_ref.actor.kl_loss_coef=0.001 algorithm.kl_ctrl.kl_coef=0.001 trainer.total_epochs=2")
    log = (f"+ COMMAND='{cmd}'\n+ echo Executing command: {cmd}\nExecuting command: {cmd}\n+ {cmd}\n"
           "(main_task pid=4) Total training steps: 560\n(main_task pid=4) wandb: Tracking run with wandb\n")
    rep = inspect(make_run({"train.log": log}))
    assert "log.no_progress" in ids(rep) and rep.run.metrics is None
    # the same lines beside three real ones: the three steps are the rows, the commands are not
    rows = "".join(f"step:{i} - actor/kl_loss:0.00{i} - actor/pg_loss:0.{i}\n" for i in (1, 2, 3))
    rep = inspect(make_run({"train.log": log + rows}))
    assert rep.run.metrics is not None and list(rep.run.metrics.data.column("step")) == [1, 2, 3]


# -- formats -----------------------------------------------------------------------------------------
FORMATS = [*sorted(synth.WRITERS), "tensorboard"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_healthy_run_raises_nothing_in_every_format(make_run, fmt, tmp_path):
    root = make_run({})
    synth.write(root, fmt, synth.healthy(200, 9))
    rep = inspect(root, now=time.time() + 3600)
    assert rep.run.metrics is not None and len(rep.run.metrics.frame) == 200
    assert ids(rep, "medium") == set()


@pytest.mark.parametrize("fmt", FORMATS)
def test_entropy_collapse_in_every_format(make_run, fmt):
    root = make_run({})
    synth.write(root, fmt, synth.entropy_collapse(200, 9))
    assert "policy.entropy_collapse" in ids(inspect(root), "medium")


def test_nemo_rl_tensorboard_and_rollout_dumps_give_the_zero_variance_what_if(make_run):
    pytest.importorskip("tensorboard", reason="writes its events with tensorboard's own writer (the dev extra)")
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    s = synth.zero_variance(40, 4)
    root = make_run({"config.yaml": "grpo:\n  num_generations_per_prompt: 4\npolicy:\n  generation:\n"
                                    "    num_generations: 4\n"})
    writer = EventFileWriter(str(root / "logs" / "exp_001" / "tensorboard"))
    for i, step in enumerate(s.steps):
        # percentages, as NeMo-RL's grpo.py logs them (100 * (baseline == 0).mean()): half the tied share each
        row = s.row(i, "nemo") | {"baseline_reward/pct_0": s.values["zero_std_share"][i] * 50,
                                  "baseline_reward/pct_1": s.values["zero_std_share"][i] * 50}
        values = [summary_pb2.Summary.Value(tag=f"train/{k}", simple_value=v) for k, v in row.items()]
        writer.add_event(event_pb2.Event(wall_time=time.time(), step=int(step), summary=summary_pb2.Summary(value=values)))
    writer.close()
    # prompt A passes 2 of 4, prompt B 4 of 4: with 8 generations the tied share is
    # ((0.5^8 + 0.5^8) + (1 + 0)) / 2 = 0.50390625; with 4 it is ((0.0625 + 0.0625) + 1) / 2 = 0.5625
    dump = [{"content": ["A", f"a{i}"], "rewards": float(i < 2)} for i in range(4)] + \
        [{"content": ["B", f"b{i}"], "rewards": 1.0} for i in range(4)]
    (root / "logs" / "exp_001" / "train_data_step40.jsonl").write_text("".join(json.dumps(d) + "\n" for d in dump))
    rep = inspect(root)
    assert rep.run.metrics.frame["zero_std_share"].iloc[-1] == pytest.approx(s.values["zero_std_share"][-1], abs=1e-6)
    adj = next(a for a in rep.adjustments if a.key == "policy.generation.num_generations")
    assert adj.to == 8 and adj.predicted["zero_variance_share"] == pytest.approx(0.50390625, abs=1e-4)
    assert adj.predicted["zero_variance_share_now"] == pytest.approx(0.5625) and adj.meets_target is False


def test_ms_swift_string_values_and_planned_total(make_run):
    lines = [{"loss": 0.1, "reward": 0.5, "global_step/max_steps": f"{i}/500", "elapsed_time": "4m 52s",
              "train_speed(s/it)": 1.2} for i in range(1, 13)]
    root = make_run({"output/logging.jsonl": "".join(json.dumps(x) + "\n" for x in lines)})
    rep = inspect(root)
    assert rep.run.metrics.frame["step"].tolist() == list(range(1, 13))
    assert rep.run.planned_steps == (500, "output/logging.jsonl") and rep.run.trainer == "ms-swift"


def test_openrlhf_postfix_rows(make_run):
    bar = ("\rEpisode [1/1]:  10%|█         | {s}/20 [00:10<01:30,  1.00s/it, act_loss=0.1{s}, reward=0.{s}, "
           "kl=0.00{s}]")
    root = make_run({"train.txt": "openrlhf starting\n" + "".join(bar.format(s=s) for s in range(1, 10)) + "\n"})
    m = inspect(root).run.metrics.frame
    assert m["step"].tolist() == list(range(1, 10)) and m["reward"].tolist() == pytest.approx([s / 10 for s in range(1, 10)])
    assert m["loss"].iloc[0] == pytest.approx(0.11)


def test_markdown_prose_is_not_a_log_but_a_pasted_console_is(make_run):
    prose = "# Notes\n\nTraceback (most recent call last) appears when verl fails.\n"
    pasted = "# run 7\n```\n" + synth.trl_console(synth.healthy(12, 1)) + "```\n"
    root = make_run({"notes.md": prose, "run7.md": pasted})
    assert [s.path for s in inspect(root).run.logs] == ["run7.md"]


# -- the licensed real runs the maintainers shared ("Added later"), copied into tests/real_runs -----------------
ADDED = {
    "trl_unsloth_llama31_8b_gsm8k_healthy": (set(), None),
    "verl_opd_qwen25_3b_length_growth": ({"generation.length_explosion", "generation.truncated"}, None),
    "verl_logicrl_startup_flashattn_crash": ({"log.crash"}, "import"),
}


@pytest.mark.parametrize("name", sorted(ADDED))
def test_real_runs_added_later(name):
    expected, kind = ADDED[name]
    rep = inspect(REPO / "tests" / "real_runs" / name, now=time.time() + 86400)
    assert expected <= ids(rep, "medium")
    if name.endswith("healthy"):
        assert ids(rep, "medium") == set()
    if kind:
        assert finding(rep, "log.crash").evidence["kind"] == kind


RAY_CASCADE = """(main_task pid=21) {'actor_rollout_ref': {'actor': {'clip_ratio': 0.2}}}
(main_task pid=21) Total training steps: 560
(raylet) Traceback (most recent call last):
  File "python/ray/_raylet.pyx", line 2276, in ray._raylet.task_execution_handler
  File "/env/lib/python3.9/site-packages/ray/_private/function_manager.py", line 608, in temporary_actor_method
    raise RuntimeError(
RuntimeError: The actor with name WorkerDict failed to import on the worker. Dependencies may be missing:

Traceback (most recent call last):
  File "/env/lib/python3.9/site-packages/flash_attn/flash_attn_interface.py", line 15, in <module>
    import flash_attn_2_cuda as flash_attn_gpu
ImportError: /env/lib/python3.9/site-packages/flash_attn_2_cuda.so: undefined symbol: _ZNK3c1011StorageImpl

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/env/lib/python3.9/site-packages/ray/_private/function_manager.py", line 647, in _load_actor_class
    actor_class = pickle.loads(pickled_class)
  File "/home/u/Logic-RL/verl/workers/fsdp_workers.py", line 37, in <module>
    from verl.utils.model import compute_position_id_with_mask
  File "/home/u/Logic-RL/verl/utils/model.py", line 24, in <module>
    from transformers import AutoConfig
RuntimeError: Failed to import transformers.models.mistral.modeling_mistral because of the following error:
/env/lib/python3.9/site-packages/flash_attn_2_cuda.so: undefined symbol: _ZNK3c1011StorageImpl

An unexpected internal error occurred while the worker was executing a task.
(raylet) [2025-02-25 19:42:36,213 E 20 21] file_system_monitor.cc:116: /tmp/ray is over 95% full
Error executing job with overrides: ['algorithm.adv_estimator=grpo']
Traceback (most recent call last):
  File "/home/u/Logic-RL/verl/trainer/main_ppo.py", line 105, in main
    ray.get(main_task.remote(config))
  File "/env/lib/python3.9/site-packages/ray/_private/worker.py", line 919, in get_objects
    raise value.as_instanceof_cause()
ray.exceptions.RayTaskError(AssertionError): ray::main_task() (pid=21, ip=10.0.0.7)
  File "/home/u/Logic-RL/verl/single_controller/ray/base.py", line 274, in _init_with_resource_pool
    assert register_center_actor is not None
AssertionError: failed to get register_center_actor: V9_register_center in []

Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.
"""


def test_ray_worker_import_cascade_points_at_the_import_error(make_run):
    # the shape of verl_logicrl_startup_flashattn_crash (SOURCES.md): a Ray worker's ImportError, the
    # RuntimeError it causes, then the driver's AssertionError; the root is the ImportError on line 11
    f = finding(inspect(make_run({"grpo.log": RAY_CASCADE})), "log.crash")
    assert (f.evidence["kind"], f.evidence["exception"], f.evidence["line"]) == ("import", "ImportError", 12)
    assert f.evidence["frame"] == {"file": "/home/u/Logic-RL/verl/utils/model.py", "line": 24, "function": "<module>"}
    assert f.evidence["followed_by"][-1]["exception"] == "AssertionError" and f.evidence["last_step"] is None


def test_columns_in_the_manifest_map_a_custom_name(make_run):
    rows = [{"step": i + 1, "my/h": v} for i, v in enumerate(blocks(1.0, 0.05))]
    root = make_run({"trainer_state.json": state(rows), "triage.toml": '[columns]\nentropy = "my/h"\n'})
    rep = inspect(root)
    assert rep.run.metric_sources["entropy"] == "my/h"
    assert finding(rep, "policy.entropy_collapse").severity == "high"
    # without the mapping a name that means nothing is kept under its own name and no rule reads it
    plain = inspect(make_run({"trainer_state.json": state(rows)}))
    assert "my/h" in plain.run.metrics.frame.columns and "policy.entropy_collapse" not in ids(plain)
    # ... while `ent`, as OpenRLHF's `ent_loss` and many a custom loop abbreviate it, is entropy by meaning
    abbreviated = inspect(make_run({"trainer_state.json": state([{"step": r["step"], "my/ent": r["my/h"]}
                                                                   for r in rows])}))
    assert abbreviated.run.metric_inferred["entropy"] == "my/ent"


def test_facts_columns_taken_at_once_or_one_by_one_are_the_same_read_only_floats(monkeypatch):
    import pandas as pd

    from triage_agent.findings import facts as facts_mod
    from triage_agent.findings.facts import resolve
    from triage_agent.runs.load import load_run
    from triage_agent.runs.model import Table

    run = load_run(REPO / "sample_runs" / "trl_entropy_collapse")
    frame = run.metrics.frame
    assert frame.size <= 1_000_000
    at_once = {name: resolve(run).column(name) for name in frame.columns}
    monkeypatch.setattr(facts_mod, "SMALL_TABLE", 0)  # every table "big": column by column
    one_by_one = resolve(run)
    for name in frame.columns:
        a, b = at_once[name], one_by_one.column(name)
        assert a.dtype == b.dtype == np.float64 and a.flags.c_contiguous and not a.flags.writeable
        assert np.array_equal(a, b, equal_nan=True) and np.array_equal(a, frame[name].to_numpy(dtype=float),
                                                                        equal_nan=True)
    # a column that is not numbers: the numbers still come, each on its own
    monkeypatch.setattr(facts_mod, "SMALL_TABLE", 1_000_000)
    mixed = Table(pd.DataFrame({"step": [1, 2], "x": [0.5, 1.5], "note": ["a", "b"]}), "m.jsonl")
    fresh = resolve(run)
    assert fresh.column("x", mixed).tolist() == [0.5, 1.5] and fresh.column("step", mixed).tolist() == [1.0, 2.0]
