"""What the corpus's last misses taught (issue 35), each from rows shaped like the real run that showed it and
silent on its near miss. Every expected number is worked out in the comment beside it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from triage_agent.commands.inspect import inspect
from triage_agent.runs.trainers import meaning


def ids(report, at_least="info"):
    return {f.id for f in report.findings if f.at_least(at_least)}


def finding(rep, fid):
    return next(f for f in rep.findings if f.id == fid)


def jsonl(rows):
    return "".join(json.dumps(r) + "\n" for r in rows)


def alt(level, amp, n):
    return [level + amp * (1 if i % 2 == 0 else -1) for i in range(n)]


# -- groups a tie filter dropped -------------------------------------------------------------------------------
def test_dropped_and_kept_group_counts_give_the_tied_share(make_run):
    # 20 steps of 32 groups: 30 dropped, 2 kept on steps 0-15 (30/32 = 0.9375), 31 and 1 on 16-19 (31/32 = 0.96875).
    # The last 20% of 20 shares is the last 4: 0.96875 >= 0.5 -> medium
    rows = [{"step": s, "train/groups_filtered": 30.0 if s < 16 else 31.0, "train/groups_kept": 2.0 if s < 16 else 1.0,
             "env/all/reward/total": 0.5} for s in range(20)]
    rep = inspect(make_run({"metrics.jsonl": jsonl(rows)}))
    f = finding(rep, "reward.zero_variance_groups")
    assert f.severity == "medium"
    assert f.evidence["mean_share_groups_dropped"] == pytest.approx(31 / 32, abs=1e-3)
    assert f.evidence["logged_as"] == ["train/groups_filtered", "train/groups_kept"]
    # near miss: 8 dropped, 24 kept (8/32 = 0.25 < 0.5) -> silent
    calm = [{**r, "train/groups_filtered": 8.0, "train/groups_kept": 24.0} for r in rows]
    assert "reward.zero_variance_groups" not in ids(inspect(make_run({"metrics.jsonl": jsonl(calm)})))


def test_a_drop_with_nothing_kept_is_every_group(make_run):
    # a DAPO loop: `dapo/groups_filtered` 0 with 24 samples kept on steps 0-4 (share 0: nothing dropped), then 1
    # with no samples kept on steps 5-24 (share 1: all dropped); kept samples say only whether any was dropped.
    # The last 20% of 25 is 5 steps, all 1.0; the share first reaches 0.5 at step 5. Names no profile lists: inferred
    rows = [{"step": s, "reward/mean": 1.2 if s < 5 else 0.0, "dapo/groups_filtered": 0.0 if s < 5 else 1.0,
             **({"dapo/samples_kept": 24.0} if s < 5 else {})} for s in range(25)]
    rep = inspect(make_run({"metrics.jsonl": jsonl(rows)}))
    f = finding(rep, "reward.zero_variance_groups")
    assert f.evidence["mean_share_groups_dropped"] == 1.0 and f.evidence["start_step"] == 5
    assert "inferred" in f.evidence
    assert rep.facts.run.metric_inferred["groups_filtered"] == "dapo/groups_filtered"


def test_names_of_dropped_and_kept_groups_by_meaning():
    assert meaning.infer("dapo/groups_filtered")[0] == "groups_filtered"
    assert meaning.infer("train/num_groups_dropped")[0] == "groups_filtered"
    assert meaning.infer("dapo/samples_kept")[0] == "groups_kept"
    assert meaning.infer("groups_kept_max") is None  # a max of the batch, not the count
    # EOS: ended with one is its own share; "no EOS" is the share cut at the cap
    assert meaning.infer("env/all/format_eos")[0] == "eos_share"
    assert meaning.infer("ppo_actor/no_eos_ratios/avg")[0] == "clipped_share"
    assert meaning.infer("val/num_eos_tokens") is None


# -- displacement from the log-ratio to the reference ------------------------------------------------------------
def _dpo_csv(chosen_ratio, margin):
    """A hand-written DPO loop's CSV: summed log-probs of policy and reference per batch; the reference swings with
    each batch's lengths (-100 / -160), so the raw policy log-prob swings as much, the ratio does not."""
    lines = ["step,train_loss,train_reward_margin,train_reward_accuracy,policy_chosen_logprobs,"
             "policy_rejected_logprobs,reference_chosen_logprobs,reference_rejected_logprobs"]
    for i, (r, m) in enumerate(zip(chosen_ratio, margin)):
        ref = -100.0 if i % 2 == 0 else -160.0
        lines.append(f"{i * 5},{0.69 - 0.02 * i},{m},1.0,{ref + r},{ref - 20 - 10 * m},{ref},{ref - 20}")
    return "\n".join(lines) + "\n"


def test_displacement_is_judged_on_the_chosen_log_ratio(make_run):
    # chosen log-ratio +1 on rows 0-4, then -2 - i on rows 5-14 (-7 ... -16): head (3 rows, 20% of 15) +1,
    # tail (rows 12-14) -14, -15, -16 -> -15; the margin rises 0.1 i: rho +1. The raw policy log-prob swings by
    # 60 with the reference, so on its own its fall is lost in the swing
    ratio = [1.0] * 5 + [-2.0 - i for i in range(5, 15)]
    rep = inspect(make_run({"results/sum.csv": _dpo_csv(ratio, [0.1 * i for i in range(15)])}))
    f = finding(rep, "preference.likelihood_displacement")
    assert f.evidence["logged_as"] == "policy_chosen_logprobs - reference_chosen_logprobs"
    assert f.evidence["head_mean"] == pytest.approx(1.0) and f.evidence["tail_mean"] == pytest.approx(-15.0)
    # near miss: the ratio holds at +1 while the margin grows -> silent
    rep = inspect(make_run({"results/sum.csv": _dpo_csv([1.0] * 15, [0.1 * i for i in range(15)])}))
    assert "preference.likelihood_displacement" not in ids(rep)


# -- a task signal that never fires ----------------------------------------------------------------------------
def test_a_success_rate_at_zero_beside_a_moving_shaped_reward(make_run):
    # 6 rows (fewer than a trend needs): train/success_rate 0.0 on all 6 (>= 3 points, all at 0), while the
    # shaped reward moves 0.42, 0.02, 0.23, 0.17, 0.46, -0.11 -> high task_signal_dead
    reward = [0.42, 0.02, 0.23, 0.17, 0.46, -0.11]
    rows = [{"iteration": 5 * i, "train/mean_reward": r, "train/max_reward": 1.0, "train/success_rate": 0.0}
            for i, r in enumerate(reward)]
    rep = inspect(make_run({"logs/metrics.jsonl": jsonl(rows)}))
    assert rep.facts.run.paradigm != "reward_model"  # `max_reward` alone is no reward model's
    f = finding(rep, "reward.task_signal_dead")
    assert f.severity == "high" and f.evidence["stuck"][0]["name"] == "train/success_rate"
    assert f.evidence["stuck"][0]["share_at_value"] == 1.0 and f.evidence["stuck"][0]["steps"] == 6
    # near miss: one success among the 6 rows (5/6 at 0 on fewer than 10 rows) -> silent
    rows[3]["train/success_rate"] = 0.125
    assert "reward.task_signal_dead" not in ids(inspect(make_run({"logs/metrics.jsonl": jsonl(rows)})))


@pytest.mark.parametrize("zeros, raised", [(85, True), (75, False)])
def test_the_only_reward_at_zero_on_most_steps(make_run, zeros, raised):
    # 100 steps: the reward is exactly 0 on `zeros` of them and 0.5 on the rest (spread through the run): 85% >= 80%
    # is a dead signal; 75% is not
    reward = [0.5 if i % (100 // (100 - zeros)) == 0 and i // (100 // (100 - zeros)) < 100 - zeros else 0.0
              for i in range(100)]
    assert reward.count(0.0) == zeros
    log = "".join(f"step {i + 1}/100 | reward={r:.4f} | loss={0.1:.4f}\n" for i, r in enumerate(reward))
    rep = inspect(make_run({"train.log": log}))
    got = [f for f in rep.findings if f.id == "reward.task_signal_dead"]
    assert bool(got) is raised
    if raised:
        assert got[0].severity == "high" and got[0].evidence["share_at_zero"] == pytest.approx(0.85)


# -- zero gradients in any paradigm ---------------------------------------------------------------------------
def test_a_gradient_norm_of_zero_on_every_row_of_a_short_dpo_log(make_run):
    # three printed dicts of a DPO run, grad_norm exactly 0 on each: 3 of 3 >= 3 points -> zero_grad, whatever the
    # paradigm; a fourth row with 0.4 makes it 3 of 4 over fewer than 10 rows -> silent
    rows = [{"loss": 0.4741, "grad_norm": 0.0, "learning_rate": 1e-06, "epoch": 0.07},
            {"loss": 0.9741, "grad_norm": 0.0, "learning_rate": 9.77e-07, "epoch": 0.13},
            {"loss": 0.6931, "grad_norm": 0.0, "learning_rate": 2.22e-08, "epoch": 3.0}]
    log = "".join(f"{r}\n" for r in rows)
    rep = inspect(make_run({"logs/training_log.txt": log}))
    f = finding(rep, "optim.zero_grad")
    assert f.evidence["zero_steps"] == 3 and f.evidence["zero_share"] == 1.0
    rows.append({"loss": 0.69, "grad_norm": 0.4, "learning_rate": 1e-08, "epoch": 3.1})
    rep = inspect(make_run({"logs/training_log.txt": "".join(f"{r}\n" for r in rows)}))
    assert "optim.zero_grad" not in ids(rep)


# -- truncation from the share that ended with EOS -------------------------------------------------------------
def test_truncation_is_one_minus_the_share_ending_with_eos(make_run):
    # Tinker RLVR: env/all/format_eos 0.46 on every step -> 1 - 0.46 = 54% cut at the cap over the tail: >= 30%
    # and < 80%, medium
    rows = [{"step": s, "env/all/reward/total": 0.2, "env/all/format_eos": 0.46, "progress/done_frac": (s + 1) / 20}
            for s in range(20)]
    rep = inspect(make_run({"metrics.jsonl": jsonl(rows)}))
    f = finding(rep, "generation.truncated")
    assert f.evidence["mean_clipped_ratio"] == pytest.approx(0.54) and f.evidence["logged_as"] == "env/all/format_eos"
    assert f.severity == "medium"
    calm = [{**r, "env/all/format_eos": 0.9} for r in rows]  # 10% cut -> silent
    assert "generation.truncated" not in ids(inspect(make_run({"metrics.jsonl": jsonl(calm)})))


# -- importance ratios that swing either side of 1 -------------------------------------------------------------
def test_ratios_either_side_of_one_are_judged_step_by_step(make_run):
    # three updating steps: 1.111, 1.743, 0.728 -> mean 1.194 (inside 0.8-1.25), but the distances from 1 are
    # 0.111, 0.743, 0.272: mean 0.3753 > 0.25 -> mismatch. Near miss 1.1, 0.9, 1.05: distances average 0.0833
    def run(ratios):
        rows = [{"step": s, "reward/mean": 1.0, "policy/is_ratio_mean": r} for s, r in enumerate(ratios)]
        return inspect(make_run({"metrics.jsonl": jsonl(rows)}))
    f = finding(run([1.111, 1.743, 0.728]), "policy.train_inference_mismatch")
    assert f.evidence["tail_mean_distance_from_1"] == pytest.approx((0.111 + 0.743 + 0.272) / 3, abs=1e-4)
    assert "policy.train_inference_mismatch" not in ids(run([1.1, 0.9, 1.05]))


def test_a_profile_module_imports_first_without_a_cycle():
    # the console wing reads every profile when imported, and a profile with a dialect (Tinker's, AReaL's, slime's)
    # imports the wing: importing any profile module first works
    import pkgutil

    from triage_agent.runs import trainers

    # the profile modules that import the console wing (their dialects): the others cannot meet it half-read
    firsts = [f"triage_agent.runs.trainers.{m.name}" for m in pkgutil.iter_modules(trainers.__path__)
              if "runs.console" in (Path(trainers.__path__[0]) / f"{m.name}.py").read_text()]
    assert len(firsts) >= 3
    for first in (*firsts, "triage_agent.runs.trainers"):
        code = f"import {first}; import triage_agent.runs.trainers as t; print(len(t.profiles()))"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-500:]
        assert int(out.stdout) >= 21
