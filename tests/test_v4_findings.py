"""findings-v4.md: the 2026 ids, each raised from realistic rows and silent on a near miss, onsets and causal
chains. Every expected number is worked out in the comment beside it."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import cli
from triage_agent.analysis import degenerate
from triage_agent.commands.inspect import inspect


def ids(report, at_least="info"):
    return {f.id for f in report.findings if f.at_least(at_least)}


def finding(rep, fid):
    return next(f for f in rep.findings if f.id == fid)


def state(rows, max_steps=None):
    return json.dumps({"max_steps": max_steps, "log_history": list(rows)})


def rows_of(series, start=1):
    n = len(next(iter(series.values())))
    return [{"step": start + i, **{k: float(v[i]) for k, v in series.items()}} for i in range(n)]


def alt(level, amp, n):
    """level + amp, level - amp, ...: mean exactly `level` over an even count."""
    return [level + amp * (1 if i % 2 == 0 else -1) for i in range(n)]


def ramp(a, b, n, noise=0.0):
    return np.linspace(a, b, n) + np.array(alt(0.0, noise, n))


# -- what counts as degenerate ------------------------------------------------------------------------------
def test_degenerate_kinds_by_hand():
    # "a b c d" five times: 20 words, 17 4-grams of which 4 distinct: rep-4 = 1 - 4/17 = 0.765 >= 0.5
    assert degenerate.rep4("a b c d " * 5) == pytest.approx(1 - 4 / 17)
    assert degenerate.kind("a b c d " * 5) == "loop"
    # 13 distinct words: 10 4-grams, all distinct
    assert degenerate.rep4("one two three four five six seven eight nine ten eleven twelve thirteen") == 0.0
    assert degenerate.kind("The answer is " + "!" * 40) == "symbol"  # 40 of 51 non-space characters are "!"
    assert degenerate.kind("?? -- ** ..") == "no letters"  # no letter, no digit
    assert degenerate.kind("42") is None  # a short numeric answer is an answer
    assert degenerate.kind("3 + 4 = 7, " * 8) == "no letters"  # 88 characters, no letter
    assert degenerate.kind("") is None


def _dump(make_run, bad_per_step, steps=10, per_step=10, secret=""):
    """verl rollout dumps `<step>.jsonl` for steps 1..steps (`10.jsonl` sorts before `2.jsonl` by name), the first
    `bad_per_step[step]` samples of each step a loop."""
    files = {"verl_demo.log": "".join(f"step:{s} - critic/score/mean:0.5 - actor/entropy:0.5\n"
                                      for s in range(1, steps + 1))}
    for s in range(1, steps + 1):
        lines = []
        for j in range(per_step):
            bad = j < bad_per_step.get(s, 0)
            text = ("Let me check it again " + secret + " ") * 20 if bad else f"x is {j}, so the sum of both sides is {s}."
            lines.append(json.dumps({"input": f"q{j}", "output": text, "score": 0.0 if bad else 1.0, "step": s}))
        files[f"rollouts/{s}.jsonl"] = "\n".join(lines) + "\n"
    return make_run(files)


@pytest.mark.parametrize("bad, sev", [(3, "medium"), (6, "high"), (1, None)])
def test_degenerate_share_of_the_last_fifth_of_samples(make_run, bad, sev):
    # 100 samples; the last 20% are steps 9 and 10 (in step order, not name order): `bad` of each 10 are loops ->
    # 2 x bad of 20: 30% (medium, >= 20%), 60% (high, >= 50%), 10% (silent)
    rep = inspect(_dump(make_run, {9: bad, 10: bad, 1: 10, 2: 10}))  # steps 1-2 all bad: outside the tail
    if sev is None:
        assert "generation.degenerate" not in ids(rep)
        return
    f = finding(rep, "generation.degenerate")
    assert f.severity == sev and f.evidence["share"] == pytest.approx(2 * bad / 20)
    assert f.evidence["judged"] == 20 and f.evidence["kinds"] == {"loop": 2 * bad}
    assert f.onset_step == 9  # the first degenerate sample of the tail


def test_degenerate_excerpts_are_bounded_and_masked(make_run):
    token = "sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2"
    rep = inspect(_dump(make_run, {9: 6, 10: 6}, secret=token))
    f = finding(rep, "generation.degenerate")
    assert len(f.evidence["excerpts"]) == 3 and all(len(e["text"]) <= 200 for e in f.evidence["excerpts"])
    assert token not in json.dumps(f.evidence)
    assert len(f.evidence["sample_ids"]) == 3


def test_a_logged_repetition_share_is_judged_too(make_run):
    # slime's rollout/repetition_frac: 0.02 for 40 steps, 0.35 for the last 10 -> tail (last 20% = 10) mean 0.35
    rep = inspect(make_run({"trainer_state.json": state(rows_of({
        "rollout/repetition_frac": [0.02] * 40 + [0.35] * 10, "reward": alt(0.5, 0.05, 50)}))}))
    f = finding(rep, "generation.degenerate")
    assert f.severity == "medium" and f.evidence["share"] == pytest.approx(0.35)


# -- entropy blow-up -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("tail, raised", [(1.6, True), (1.4, False)])
def test_entropy_blowup_tail_over_head(make_run, tail, raised):
    # 50 steps: 0.5 on steps 1-30, a straight rise to `tail` on 31-40, `tail` on 41-50. Head (10 points) 0.5, tail
    # 10 points = `tail`: 1.6 / 0.5 = 3.2x (>= 3, rho > 0.5: raised); 1.4 / 0.5 = 2.8x (silent, and no 5-step mean
    # reaches 5 x 0.5 = 2.5)
    entropy = [0.5] * 30 + list(np.linspace(0.5, tail, 11)[1:]) + [tail] * 10
    rep = inspect(make_run({"trainer_state.json": state(rows_of({"entropy": entropy, "reward": alt(0.5, 0.05, 50)}))}))
    assert ("policy.entropy_blowup" in ids(rep, "high")) is raised
    if raised:
        f = finding(rep, "policy.entropy_blowup")
        assert f.evidence["tail_over_head"] == pytest.approx(3.2)
        # steps 31-40 are 0.5 + 0.11 k; the first 5-step mean >= 3 x 0.5 = 1.5: steps 38-42 (1.38, 1.49, 1.6, 1.6,
        # 1.6) average 1.534, steps 37-41 1.468
        assert f.onset_step == 42


def test_entropy_blowup_from_a_spike(make_run):
    # 0.5 everywhere but steps 21-25 at 2.6: tail = head = 0.5 (no rise), but that 5-step mean is 5.2x the head
    entropy = [0.5] * 20 + [2.6] * 5 + [0.5] * 25
    rep = inspect(make_run({"trainer_state.json": state(rows_of({"entropy": entropy, "reward": alt(0.5, 0.05, 50)}))}))
    f = finding(rep, "policy.entropy_blowup")
    assert f.evidence["max_rolling_mean"] == pytest.approx(2.6) and f.onset_step == 25


# -- train/inference mismatch on every trainer ---------------------------------------------------------------
def _verl(col, values):
    n = len(values)
    return {"verl_demo.log": "".join(f"step:{i + 1} - critic/score/mean:{0.5 + 0.05 * (-1) ** i:.3f} - {col}:{v:.5f}\n"
                                     for i, v in enumerate(values)) + f"Total training steps: {n}\n"}


def test_a_kl_form_mismatch_above_its_bar_and_growing_is_high(make_run):
    # verl rollout_corr/kl: 0.002 for 40 steps, 0.012 for the last 10: tail 0.012 > 0.01 and 6x the head: high
    rep = inspect(make_run(_verl("rollout_corr/kl", [0.002] * 40 + [0.012] * 10)))
    f = finding(rep, "policy.train_inference_mismatch")
    assert f.severity == "high" and f.evidence["form"] == "kl" and f.evidence["growth"] == pytest.approx(6.0)
    assert f.onset_step == 43  # the first 3-point mean above 0.01: steps 41-43 (0.012 each); 40-42 is 0.0087


def test_a_growing_mismatch_below_its_bar_is_medium_and_a_steady_one_silent(make_run):
    # 0.001 -> 0.004 (4x, below 0.01): medium by growth alone; 0.002 -> 0.004 (2x): silent
    rep = inspect(make_run(_verl("rollout_corr/kl", [0.001] * 40 + [0.004] * 10)))
    assert finding(rep, "policy.train_inference_mismatch").severity == "medium"
    rep = inspect(make_run(_verl("rollout_corr/kl", [0.002] * 40 + [0.004] * 10)))
    assert "policy.train_inference_mismatch" not in ids(rep)


def test_forms_and_their_bars(make_run):
    # a log-prob difference of 0.15 (> 0.1) flat: medium, form logp_diff
    rep = inspect(make_run(_verl("train/train_rollout_logprob_abs_diff", [0.15] * 30)))
    f = finding(rep, "policy.train_inference_mismatch")
    assert f.evidence["form"] == "logp_diff" and f.severity == "medium"
    # Tinker's kl_sample_train_v1 at 0.065 (a healthy run's level): under its own bar of 0.1
    rep = inspect(make_run(_verl("optim/kl_sample_train_v1", alt(0.065, 0.003, 30))))
    assert "policy.train_inference_mismatch" not in ids(rep)


def test_every_mismatch_series_is_judged(make_run):
    # an exact-zero abs diff beside an IS ratio of 0.7 (outside 0.8-1.25): the ratio is what is raised
    lines = "".join(f"step:{i} - critic/score/mean:0.5 - policy/rollout_train_logprobs_abs_diff_mean:0.0 - "
                    f"policy/is_ratio_mean:0.7\n" for i in range(1, 16))
    rep = inspect(make_run({"verl_demo.log": lines}))
    f = finding(rep, "policy.train_inference_mismatch")
    assert f.evidence["logged_as"] == "policy/is_ratio_mean" and f.evidence["tail_mean"] == pytest.approx(0.7)


# -- groups too hard / too easy ------------------------------------------------------------------------------
@pytest.mark.parametrize("bad, good, hard, easy", [(0.6, 0.05, True, False), (0.05, 0.55, False, True),
                                                   (0.3, 0.15, False, False)])
def test_tied_groups_split_by_where_they_tie(make_run, bad, good, hard, easy):
    # Tinker's by_group shares, constant: the tail's shares are bad / good themselves
    rep = inspect(make_run({"trainer_state.json": state(rows_of({
        "env/all/by_group/frac_all_bad": [bad] * 30, "env/all/by_group/frac_all_good": [good] * 30,
        "env/all/reward/total": alt(0.4, 0.05, 30)}))}))
    assert ("reward.groups_too_hard" in ids(rep, "medium")) is hard
    assert ("reward.groups_too_easy" in ids(rep, "medium")) is easy
    if hard:
        f = finding(rep, "reward.groups_too_hard")
        assert f.evidence["tied_at_floor"] == pytest.approx(0.6) and f.onset_step == 1
        # the tied share (0.65 >= 0.5) is explained by where the groups tie
        assert finding(rep, "reward.zero_variance_groups").explained_by == "reward.groups_too_hard"


def test_groups_from_rollout_dumps_with_the_pass_rate_histogram(make_run):
    # 10 steps x 5 prompts x 4 samples. Tail = the last 2 steps: 10 groups; prompts q0-q3 score 0 on every sample
    # there (tied at the floor), q4 passes 2 of 4 (pass rate 0.5, in the 0.4-0.6 band): 8 of 10 at the floor = 80%
    files = {"verl_demo.log": "".join(f"step:{s} - critic/score/mean:0.1\n" for s in range(1, 11))}
    for s in range(1, 11):
        lines = [json.dumps({"input": f"q{p}", "output": f"answer {k}", "step": s,
                             "score": float(p == 4 and k < 2 or (s <= 8 and k == 0))})
                 for p in range(5) for k in range(4)]
        files[f"rollouts/{s}.jsonl"] = "\n".join(lines) + "\n"
    rep = inspect(make_run(files))
    f = finding(rep, "reward.groups_too_hard")
    assert f.evidence["tied_at_floor"] == pytest.approx(0.8) and f.evidence["groups"] == 10
    assert f.evidence["pass_rate_histogram"] == [8, 0, 0, 0, 0, 2, 0, 0, 0, 0]
    assert f.evidence["band_share"] == pytest.approx(0.2)


# -- skipped steps ---------------------------------------------------------------------------------------------
def _ds_log(steps, skipped):
    out = []
    for step in range(10, steps + 1, 10):
        out.append(f"step {step} | loss {0.69 - step / 10000:.4f} | accuracy 0.5\n")
        out.append(f"[2026-03-01 10:00:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] step={step}, "
                   f"skipped={skipped(step)}, lr=[1e-05], mom=[(0.9, 0.95)]\n")
    return "".join(out)


@pytest.mark.parametrize("skipped, sev", [(lambda s: s, "high"), (lambda s: s // 4, "medium"),
                                          (lambda s: min(s, 10), None)])
def test_deepspeed_skipped_counter(make_run, skipped, sev):
    # the counter at its furthest line, step=100: 100 of 100 (every step: high), 25 of 100 (medium), 10 of 100 (10%,
    # below 20%: silent)
    rep = inspect(make_run({"train.log": _ds_log(100, skipped)}))
    if sev is None:
        assert "optim.steps_skipped" not in ids(rep)
        return
    f = finding(rep, "optim.steps_skipped")
    assert f.severity == sev and f.evidence["steps"] == 100 and f.evidence["skipped"] == skipped(100)
    assert f.onset_step == 10


def test_skip_lines_count_against_the_steps(make_run):
    # 30 step lines, 8 "skipping" warnings: 8 / 30 = 27% (medium)
    lines = [f"step:{i} - critic/score/mean:0.5 - actor/entropy:0.4\n" for i in range(1, 31)]
    for b in (3, 7, 11, 15, 19, 23, 26, 29):
        lines.insert(b, f"__main__:713 [WARNING] No valid trajectory groups at batch {b}, skipping\n")
    rep = inspect(make_run({"verl_demo.log": "".join(lines)}))
    f = finding(rep, "optim.steps_skipped")
    assert f.evidence["skipped"] == 8 and f.evidence["steps"] == 30 and f.evidence["share"] == pytest.approx(8 / 30,
                                                                                                              abs=1e-3)


def test_steps_with_a_reward_and_no_update(make_run):
    # 20 steps with a reward; the loss on steps 1-5 only: 15 of the 20 steps from the first update have none (75%)
    rows = [{"step": i, "reward": 0.5, **({"loss": 0.1} if i <= 5 else {})} for i in range(1, 21)]
    rep = inspect(make_run({"trainer_state.json": state(rows)}))
    f = finding(rep, "optim.steps_skipped")
    assert (f.evidence["skipped"], f.evidence["steps"]) == (15, 20) and f.onset_step == 6
    # a loss logged every other step is a cadence, never on two steps in a row: no skipped step
    rows = [{"step": i, "reward": 0.5, **({"loss": 0.1} if i % 2 else {})} for i in range(1, 21)]
    assert "optim.steps_skipped" not in ids(inspect(make_run({"trainer_state.json": state(rows)})))


def test_a_per_step_skip_flag_or_count_is_read_by_its_meaning(make_run):
    # 40 steps, `update_skipped` 1 on steps 22-33 and 38 (13 of 40: 32.5% >= 20%), first at 22: medium, the name
    # resolved by meaning (no profile lists it), which the evidence says
    rows = "step,loss,update_skipped\n" + "".join(
        f"{i},{1.0 - 0.01 * i},{int(22 <= i <= 33 or i == 38)}\n" for i in range(1, 41))
    f = finding(inspect(make_run({"timeline.csv": rows})), "optim.steps_skipped")
    assert (f.evidence["skipped"], f.evidence["steps"], f.onset_step) == (13, 40, 22)
    assert f.evidence["share"] == pytest.approx(0.325) and "update_skipped" in f.evidence["inferred"]
    # steps 7, 14, 21, 28 and 35: 5 of 40 (12.5%), below the bar
    rows = "step,loss,update_skipped\n" + "".join(f"{i},{1.0 - 0.01 * i},{int(i % 7 == 0 and i < 42)}\n"
                                                   for i in range(1, 41))
    assert "optim.steps_skipped" not in ids(inspect(make_run({"timeline.csv": rows})))
    # a count of the steps skipped so far: 0 on steps 1-10, then +1 a step to 30 on step 40: 30 of the 39 steps
    # after the first (77%)
    rows = "step,loss,skipped_steps_total\n" + "".join(f"{i},{1.0 - 0.01 * i},{max(0, i - 10)}\n" for i in range(1, 41))
    f = finding(inspect(make_run({"timeline.csv": rows})), "optim.steps_skipped")
    assert (f.evidence["skipped"], f.evidence["steps"]) == (30, 39)


# -- resumes -----------------------------------------------------------------------------------------------------
def _jsonl(rows):
    return "".join(json.dumps(r) + "\n" for r in rows)


def test_a_resume_that_jumps_and_one_that_carries_on(make_run):
    # launch 1 logs steps 1-60, launch 2 (from a checkpoint at 40) logs 41-100. Reward 0.5 +- 0.01: noise =
    # std(diffs of +-0.02) / sqrt 2 = 0.0141. With launch 2 at 1.0 the 5 steps before 41 average 0.5 and the 5 from 41
    # average 1.0: 0.5 / 0.0141 = 35x > 5x (medium)
    first = [{"step": i, "reward": 0.5 + 0.01 * (-1) ** i} for i in range(1, 61)]
    second = [{"step": i, "reward": 1.0 + 0.01 * (-1) ** i} for i in range(41, 101)]
    rep = inspect(make_run({"metrics.jsonl": _jsonl(first + second)}))
    f = finding(rep, "run.resume_discontinuity")
    assert f.severity == "medium" and f.onset_step == 41 and f.evidence["furthest_before"] == 60
    assert f.evidence["noise_multiple"] == pytest.approx(0.5 / (0.02 / np.sqrt(2)), rel=0.02)
    same = [{"step": i, "reward": 0.5 + 0.01 * (-1) ** i} for i in range(41, 101)]
    rep = inspect(make_run({"metrics.jsonl": _jsonl(first + same)}))
    f = finding(rep, "run.resume_discontinuity")
    assert f.severity == "info" and "step counter went back from 60 to 41" in f.title


def test_a_trend_carried_across_a_resume_is_no_jump(make_run):
    # loss 100 - 2 * step +- 0.5 (alternating): the diffs alternate -3, -1, noise = std 1 / sqrt 2 = 0.7071. Launch 2
    # (from a checkpoint at 10) logs 11-30. The 5 steps before 11 (6-10: 88.5 85.5 84.5 81.5 80.5) average 84.1.
    # On the same line, steps 11-15 average 73.9: a move of -10.2 that the shared slope, -2 a step over the 5 steps
    # between the windows' centres (drift -10), explains: |-10.2 + 10| / 0.7071 = 0.28x, an info note (the window means
    # alone, 10.2 / 0.7071 = 14.4x, would have called it a jump: batch J's verl export across two restarts)
    def line(steps, offset):
        return [{"step": i, "loss": 100 - 2 * i + 0.5 * (-1) ** i + offset} for i in steps]
    rep = inspect(make_run({"metrics.jsonl": _jsonl(line(range(1, 21), 0) + line(range(11, 31), 0))}))
    f = finding(rep, "run.resume_discontinuity")
    assert f.severity == "info" and f.onset_step == 11
    # launch 2 resumed 10 above the line: steps 11-15 average 83.9, move -0.2, beyond the trend +9.8. The noise from
    # the 28 diffs inside the launches (steps 1-10 kept of launch 1, 11-30 of launch 2): 15 of -1 and 13 of -3, std
    # 2 sqrt(15/28 * 13/28) = 0.99745, noise 0.70530: 9.8 / 0.70530 = 13.895x
    rep = inspect(make_run({"metrics.jsonl": _jsonl(line(range(1, 21), 0) + line(range(11, 31), 10))}))
    f = finding(rep, "run.resume_discontinuity")
    assert f.severity == "medium" and f.evidence["trend_drift"] == pytest.approx(-10.0)
    assert f.evidence["move"] == pytest.approx(-0.2) and f.evidence["noise_multiple"] == pytest.approx(13.895, abs=1e-3)


def test_two_runs_writing_one_file_at_once_are_told_apart_from_ranks(make_run):
    # run A logs steps 6-14 and run B steps 0-7, their rows alternating as batch J's two Tinker runs did: A's 6, 7,
    # then B's 0, A's 8, B's 1, ... Each row joins the run whose last step is the greatest below its own: A = 6-14
    # (9 rows), B = 0-7 (8 rows); they share steps 6 and 7, 2 of B's 8 (25% <= 50%): two writers, B's first row
    # (step 0) after a furthest step of 7
    a = [{"step": i, "reward": 0.0} for i in range(6, 15)]
    b = [{"step": i, "reward": 0.6} for i in range(0, 8)]
    rows = [a[0], a[1]] + [r for pair in itertools.zip_longest(b, a[2:]) for r in pair if r is not None]
    assert [r["step"] for r in rows] == [6, 7, 0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7]
    f = finding(inspect(make_run({"metrics.jsonl": _jsonl(rows)})), "run.resume_discontinuity")
    assert f.severity == "medium" and f.evidence["writers"] == 2
    assert (f.evidence["resume_step"], f.evidence["furthest_before"]) == (0, 7)
    assert "steps 6-14, steps 0-7" in f.title
    # two ranks of one run, the second a step behind: 0, 1, 0, 2, 1, 3, 2, ...: the step goes back on every other
    # row, but the two chains (0-19 and 0-18) share all 19 of the smaller one's steps: how the file is written
    ranks = [{"step": 0, "reward": 0.5}] + [{"step": s, "reward": 0.5} for i in range(1, 20) for s in (i, i - 1)]
    assert [r["step"] for r in ranks[:7]] == [0, 1, 0, 2, 1, 3, 2]
    assert "run.resume_discontinuity" not in ids(inspect(make_run({"metrics.jsonl": _jsonl(ranks)})))


def test_an_epoch_that_goes_back_is_a_resume_and_rows_logged_twice_by_design_are_not(make_run):
    rows = [{"step": 10 * i, "loss": 2.0 - 0.01 * i, "epoch": 0.25 * i} for i in range(1, 41)]
    rows[30:] = [{**r, "epoch": r["epoch"] - 6.0} for r in rows[30:]]  # step 310: epoch 7.5 -> 1.75
    f = finding(inspect(make_run({"trainer_state.json": state(rows)})), "run.resume_discontinuity")
    assert f.onset_step == 310 and "epoch counter went back from 7.5 to 1.75" in f.title
    # every step logged twice with the same keys (a loop logging per batch at its epoch's step): a habit, not 40 resumes
    twice = [{"step": i // 2, "loss": 1.0 - 0.001 * i} for i in range(80)]
    assert "run.resume_discontinuity" not in ids(inspect(make_run({"metrics.jsonl": _jsonl(twice)})))


# -- staleness, agents -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("late, raised", [(2.0, True), (1.1, False)])
def test_staleness_that_keeps_growing(make_run, late, raised):
    # 0 for 5 steps (the pipeline fills), 1.0 to step 30, then a rise to `late` by step 50. Middle 20% (steps 21-30)
    # mean 1.0; tail (41-50) `late`: 2.0 >= 1.5 x 1.0 and rising over the second half (raised); 1.1 (silent)
    stale = [0.0] * 5 + [1.0] * 25 + list(np.linspace(1.0, late, 11)[1:]) + [late] * 10
    rep = inspect(make_run({"trainer_state.json": state(rows_of({
        "training/off_policy/trajectory_staleness/mean": stale, "reward": alt(0.5, 0.05, 50)}))}))
    assert ("policy.off_policy_stale" in ids(rep, "medium")) is raised


def test_staleness_above_its_configured_cap(make_run):
    rep = inspect(make_run({"trainer_state.json": state(rows_of({
        "training/off_policy/trajectory_staleness/mean": [3.0] * 30, "reward": alt(0.5, 0.05, 30)})),
        "config.yaml": "async_training:\n  staleness_threshold: 2\n"}))
    f = finding(rep, "policy.off_policy_stale")
    assert f.evidence["configured_max"] == {"key": "staleness_threshold", "value": 2.0}


def test_turns_collapse_and_tool_failures_form_a_chain(make_run):
    # turns 3.0 -> 1.0, tool failures 0.05 -> 0.35 (tails of 10 points): turns 1.0 <= 50% of 3.0; failures >= 30%
    rep = inspect(make_run({"trainer_state.json": state(rows_of({
        "num_turns/mean": [3.0] * 25 + [1.0] * 25, "tools/failure_frequency": [0.05] * 25 + [0.35] * 25,
        "reward": alt(0.5, 0.05, 50)}))}))
    turns, tools = finding(rep, "agent.turns_collapsed"), finding(rep, "agent.tool_failures")
    assert turns.evidence["tail_over_head"] == pytest.approx(1 / 3, abs=1e-3) and tools.evidence["tail_mean"] == pytest.approx(0.35)
    assert turns.explained_by == "agent.tool_failures" and tools.explains == ["agent.turns_collapsed"]
    # the cause comes first, its consequence right after it
    order = [f.id for f in rep.findings]
    assert order.index("agent.turns_collapsed") == order.index("agent.tool_failures") + 1
    near = inspect(make_run({"trainer_state.json": state(rows_of({
        "num_turns/mean": [3.0] * 25 + [2.0] * 25, "tools/failure_frequency": [0.05] * 25 + [0.12] * 25,
        "reward": alt(0.5, 0.05, 50)}))}))
    assert not ids(near, "medium") & {"agent.turns_collapsed", "agent.tool_failures"}


# -- onsets and chains in every view ---------------------------------------------------------------------------
def test_every_finding_in_json_has_an_onset_and_chains_nest(make_run):
    # entropy falls 0.9 -> 0.1 and length 300 -> 50 at step 26: entropy collapse explains the length collapse
    run = make_run({"trainer_state.json": state(rows_of({
        "entropy": [0.9] * 25 + [0.1] * 25, "completions/mean_length": [300.0] * 25 + [50.0] * 25,
        "reward": alt(0.5, 0.05, 50)}))})
    code, out, _ = cli("inspect", str(run), "--json")
    doc = json.loads(out)
    assert all("onset_step" in f for f in doc["findings"])
    by_id = {f["id"]: f for f in doc["findings"]}
    assert by_id["generation.length_collapse"]["explained_by"] == "policy.entropy_collapse"
    assert by_id["policy.entropy_collapse"]["explains"] == ["generation.length_collapse"]
    # the first 5-step mean <= 0.25 x 0.9 = 0.225: steps 26-30 (all 0.1); 25-29 average 0.26
    assert by_id["policy.entropy_collapse"]["onset_step"] == 30
    diag = doc["diagnosis"][0]
    assert diag["findings"] == ["policy.entropy_collapse", "generation.length_collapse"]
    _, text, _ = cli("inspect", str(run), width=200)
    assert "↳ generation.length_collapse" in text
    _, _, _ = cli("inspect", str(run), "--html", str(run / "r.html"))
    assert "↳ generation.length_collapse" in (run / "r.html").read_text()


def test_a_cause_that_starts_after_its_consequence_explains_nothing(make_run):
    # length collapses at step 11, entropy only at step 41: 30 steps later, beyond 10% of 50 steps
    rep = inspect(make_run({"trainer_state.json": state(rows_of({
        "entropy": [0.9] * 40 + [0.1] * 10, "completions/mean_length": [300.0] * 10 + [50.0] * 40,
        "reward": alt(0.5, 0.05, 50)}))}))
    assert finding(rep, "generation.length_collapse").explained_by is None


# -- the misjudgements of issue 36 ---------------------------------------------------------------------------
def test_a_flat_reward_beside_a_rising_validation_score_is_info(make_run):
    rows = rows_of({"reward": alt(0.4, 0.05, 40)})
    evals = [{"step": s, "eval_reward": v} for s, v in ((10, 0.30), (20, 0.34), (30, 0.36), (40, 0.41))]
    f = finding(inspect(make_run({"trainer_state.json": state(rows + evals)})), "reward.flat")
    assert f.severity == "info" and f.evidence["validation_rho"] == pytest.approx(1.0)


def test_a_discrete_reward_without_a_trend_is_flat(make_run):
    # levels 0, 0.5, 1: head (steps 1-10) mean 0.25, a high block (11-20), a low one (21-40), tail (41-50) mean 0.6.
    # Tail over head is significant by Welch's z (computed here), but the rank trend over all 50 steps is weak
    reward = [0, 0.5] * 5 + [1, 0.5] * 5 + [0, 0.5] * 10 + [0.5, 1, 0.5, 0.5, 0, 1, 0.5, 0.5, 0.5, 1]
    head, tail = np.array(reward[:10]), np.array(reward[-10:])
    z = (tail.mean() - head.mean()) / np.sqrt(tail.var(ddof=1) / 10 + head.var(ddof=1) / 10)
    assert z > 1.645
    rho = pd.Series(reward).rank().corr(pd.Series(range(50), dtype=float))  # Spearman: Pearson of ranks
    assert rho * np.sqrt(48 / (1 - rho**2)) < 1.645  # rho 0.10: t 0.70
    f = finding(inspect(make_run({"trainer_state.json": state(rows_of({"reward": reward}))})), "reward.flat")
    assert f.severity == "medium" and f.evidence["rho_step"] == pytest.approx(rho, abs=1e-3)


def test_prose_metric_lines_are_read(make_run):
    lines = "".join(f"Step {i}/40: reward = {0.3:.3f}, kl is {0.01 * 1.2 ** i:.4f}\n" for i in range(1, 41))
    rep = inspect(make_run({"train.log": lines}))
    assert rep.run.metric_sources.get("kl") == "kl" and "policy.kl_explosion" in ids(rep, "high")


# -- completions tables ----------------------------------------------------------------------------------------
def test_completions_tables_of_swift_wandb_and_trl(make_run, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    # 100 samples, 20 per step; the last 20 (step 5) hold 6 loops: 6 / 20 = 30%
    prose = "x = 4, so the answer is 4."
    samples = [(s, prose) for s in range(1, 5) for _ in range(20)] + \
        [(5, "again and again and again " * 10)] * 6 + [(5, prose)] * 14
    swift = "".join(json.dumps({"step": s, "prompt": "p", "completion": c, "reward": 0.1}) + "\n" for s, c in samples)
    wandb = json.dumps({"columns": ["step", "prompt", "completion"], "data": [[s, "p", c] for s, c in samples]})
    # W&B: the run folder as the user gives it (wandb/run-<id>/): files/media/table is at depth 3 of the 4 searched
    for rel, content in (("output/completions.jsonl", swift),
                         ("files/media/table/completions_5_abc.table.json", wandb)):
        run = make_run({"trainer_state.json": state(rows_of({"reward": alt(0.4, 0.05, 20)})), rel: content})
        f = finding(inspect(run), "generation.degenerate")
        assert f.evidence["share"] == pytest.approx(0.3) and f.evidence["judged"] == 20, rel  # 6 of 20
    run = make_run({"trainer_state.json": state(rows_of({"reward": alt(0.4, 0.05, 20)}))})
    (run / "completions").mkdir()
    pq.write_table(pa.table({"step": [s for s, _ in samples], "prompt": ["p"] * 100,
                             "completion": [c for _, c in samples]}),
                   run / "completions" / "completions_00005.parquet")
    assert finding(inspect(run), "generation.degenerate").evidence["share"] == pytest.approx(0.3)


def test_the_models_first_message_carries_onsets_chains_and_masked_excerpts():
    from tests.conftest import SAMPLES
    from triage_agent.agent.loop import first_message
    from triage_agent.report import offline_report
    from triage_agent.runs.load import load_run

    msg = first_message(offline_report(load_run(SAMPLES / "verl_entropy_blowup")), "report", None)
    payload = json.loads(msg.split("## Deterministic findings\n", 1)[1].split("\n\n## ", 1)[0])
    by_id = {f["id"]: f for f in payload["findings"]}
    assert by_id["generation.degenerate"]["explained_by"] == "policy.entropy_blowup"
    assert by_id["policy.entropy_blowup"]["onset_step"] is not None
    excerpts = by_id["generation.degenerate"]["evidence"]["excerpts"]
    assert len(excerpts) == 3 and all(len(e["text"]) <= 200 for e in excerpts)


def test_a_length_at_one_value_to_the_token_is_the_cap(make_run):
    # no clipped share logged; the batch-mean length rises to exactly 4096.0 and stays on steps 21-30 (tail = 6
    # points, all 4096): every completion is at the cap from step 21
    length = list(np.linspace(900, 4000, 20)) + [4096.0] * 10
    rep = inspect(make_run({"trainer_state.json": state(rows_of({"completions/mean_length": length,
                                                                  "reward": alt(0.4, 0.05, 30)}))}))
    f = finding(rep, "generation.truncated")
    assert f.severity == "high" and f.evidence["at_one_length"] == 4096 and f.onset_step == 21
    # a length that only sits near one value is no cap
    near = list(np.linspace(900, 4000, 20)) + alt(4090.0, 3.0, 10)
    rep = inspect(make_run({"trainer_state.json": state(rows_of({"completions/mean_length": near,
                                                                  "reward": alt(0.4, 0.05, 30)}))}))
    assert "generation.truncated" not in ids(rep)


def test_printed_samples_are_judged_and_a_block_without_an_end_closes(make_run):
    # verl's reward manager prints [prompt] / [response] / [ground_truth] / [score]; 10 of the 20 responses loop
    lines = ["step:1 - critic/score/mean:0.5\n"]
    for i in range(20):
        text = "again and again and again " * 10 if i % 2 else f"x is {i}, so the sum of both sides is {i + 1}."
        lines += [f"[prompt] question {i}\n", f"[response] {text}\n", "[ground_truth] 4\n", "[score] 0.0\n"]
    lines += [f"step:{s} - critic/score/mean:0.5\n" for s in range(2, 12)]
    rep = inspect(make_run({"verl_demo.log": "".join(lines)}))
    assert rep.run.rollouts is not None and list(rep.run.rollouts.frame["degenerate"]).count("loop") == 10
    # a [Model Response] block that never ends is judged on its first 200 lines; the step lines after it are read
    block = "[Model Response]\n" + "the same words said again and again\n" * 5000
    steps = "".join(f"step:{s} - critic/score/mean:0.5\n" for s in range(1, 31))
    rep = inspect(make_run({"verl_demo.log": block + steps}))
    assert rep.run.logs[0].last_step == 30 and len(rep.run.logs[0].samples) == 1


def test_printed_samples_past_the_budget_are_judged_at_a_doubling_stride(make_run):
    # 3,000 printed samples, every one a loop: samples 1-512 all judged (512), 513-1536 every 2nd (512), then
    # 1537-3000 every 4th: the (seen - 1) in 1536..2999 that are multiples of 4, 366 -> 1,390 judged, the last
    # one sample 2,997 (so the log's end is judged too), every one a loop
    lines = ["step:1 - critic/score/mean:0.5\n"]
    for i in range(3000):
        lines += [f"[response] {'again and again and again ' * 10}\n", "[score] 0.0\n"]
        if i % 300 == 299:
            lines.append(f"step:{i // 300 + 2} - critic/score/mean:0.5\n")
    rep = inspect(make_run({"verl_demo.log": "".join(lines)}))
    samples = rep.run.logs[0].samples
    assert len(samples) == 1390 and {s["degenerate"] for s in samples} == {"loop"}
    assert samples[-1]["step"] == 10  # after the step line printed after sample 2,700 (step 2699 // 300 + 2 = 10)


def _kind_by_list(text: str) -> str | None:
    """degenerate.kind as it was written before issue 40: the non-blank characters listed, then counted."""
    from collections import Counter

    t = text[:degenerate.MAX_CHARS].strip()
    if not t:
        return None
    if not any(c.isalnum() for c in t) or (len(t) >= degenerate.LETTERLESS_CHARS and not any(c.isalpha() for c in t)):
        return "no letters"
    chars = [c for c in t if not c.isspace()]
    top, n = Counter(chars).most_common(1)[0]
    if not top.isalnum() and n >= degenerate.SYMBOL_SHARE * len(chars) and n >= 8:
        return "symbol"
    if degenerate.rep4(t) >= degenerate.REP4:
        return "loop"
    return None


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(["!", "?", "_", " ", "\n", "\t", "\u2003", "a", "7", "é", "word ", "!!!!!!!!", "? ? ",
                                 "the cat sat down ", "\u00a0", "."]), max_size=120))
def test_degenerate_kind_counts_as_the_listing_did(parts):
    text = "".join(parts)
    assert degenerate.kind(text) == _kind_by_list(text)
