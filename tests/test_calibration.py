"""Solver-calibration analyses pinned by hand, and each finding on both sides of its threshold."""

import numpy as np
import pandas as pd
import pytest

from tests.conftest import finding_ids
from triage_agent.analysis import calibration as cal
from triage_agent.commands.inspect import inspect


def test_ece_on_twenty_samples_by_hand():
    # 10 samples at 0.95 (bin 0.9-1.0), 6 pass: |0.95 - 0.6| = 0.35
    # 10 samples at 0.15 (bin 0.1-0.2), 1 pass:  |0.15 - 0.1| = 0.05
    # ECE = 0.5 * 0.35 + 0.5 * 0.05 = 0.20
    scores = np.array([0.95] * 10 + [0.15] * 10)
    gold = np.array([1] * 6 + [0] * 4 + [1] + [0] * 9, dtype=bool)
    rel = cal.reliability(scores, gold, (0.0, 1.0))
    assert rel.ece == pytest.approx(0.20)
    assert [(b["lo"], b["n"], b["gold_rate"]) for b in rel.bins] == [(0.1, 10, 0.1), (0.9, 10, 0.6)]
    # the same on a 0..10 score range
    assert cal.reliability(scores * 10, gold, (0.0, 10.0)).ece == pytest.approx(0.20)


def test_divergence_point_on_a_short_series():
    # proxy rises throughout. Suffix from step 1: rho(step, gold) = 12/sqrt(728) = 0.445 > 0.1 (worked by hand);
    # from step 2: 1.5/sqrt(17.5 * 15.5) = 0.091 <= 0.1 -> divergence at step 2.
    frame = pd.DataFrame({"step": range(8), "proxy_reward": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8],
                          "gold_pass_rate": [0.1, 0.2, 0.3, 0.4, 0.4, 0.39, 0.4, 0.38]})
    pg = cal.proxy_gold(frame)
    assert pg.divergence_step == 2
    assert pg.rho_proxy == pytest.approx(1.0)


def test_high_score_failures_top_decile_and_examples():
    frame = pd.DataFrame({"sample_id": [f"s{i}" for i in range(20)], "score": np.arange(20) / 20,
                          "gold_pass": [True] * 18 + [False, True]})
    hs = cal.high_score_failures(frame, None)
    # top decile: quantile 0.9 of 0..0.95 = 0.855 -> scores 0.90, 0.95 -> one fails (s18)
    assert hs.n_candidates == 2 and hs.n_failing == 1 and hs.fail_share == 0.5
    assert hs.examples == ["s18"]


def test_cadence_intervals_and_range_move():
    ev = pd.DataFrame({"step": [1000, 2500, 3000], "n_candidates": [10, 10, 20], "n_confirmed": [2, 3, 4],
                       "flip_rate": [0.1, 0.2, 0.3], "score_min": [0.0, 0.0, -0.1], "score_max": [1.0, 1.05, 1.0]})
    c = cal.cadence(ev, 2000)
    assert c.event_intervals == [1500, 500] and c.min_interval == 500
    assert c.mean_flip_rate == pytest.approx(0.2)
    assert c.confirmed_ratio == pytest.approx(9 / 40)
    assert c.range_move == pytest.approx(0.1)


def test_perturbation_sensitivity_per_kind():
    frame = pd.DataFrame({"perturbation": ["a", "a", "b"], "score": [0.5, 0.5, 0.5],
                          "perturbed_score": [0.6, 0.4, 0.5]})
    mean, by_kind = cal.perturbation_sensitivity(frame, (0.0, 2.0))
    assert mean == pytest.approx((0.05 + 0.05 + 0) / 3)
    assert by_kind == pytest.approx({"a": 0.05, "b": 0.0})


CFG = "calibration:\n  calibrate_every_steps: {i}\n  candidate_score_threshold: {t}\n  score_range: [0, 1]\n"


def ids(make_run, files):
    return finding_ids(inspect(make_run(files)), "medium")


def test_proxy_gold_divergence_both_sides(make_run):
    steps = list(range(0, 100, 10))
    up = [0.1 * i for i in range(10)]
    flat = [0.3, 0.31, 0.29, 0.3, 0.3, 0.31, 0.29, 0.3, 0.3, 0.3]
    assert "hacking.proxy_gold_divergence" in ids(make_run, {"eval_history.csv": pd.DataFrame(
        {"step": steps, "proxy_reward": up, "gold_pass_rate": flat})})
    assert "hacking.proxy_gold_divergence" not in ids(make_run, {"eval_history.csv": pd.DataFrame(
        {"step": steps, "proxy_reward": up, "gold_pass_rate": [0.05 * i for i in range(10)]})})


def scores_frame(n_high_fail, n_high=20):
    # 100 samples: 80 low (score 0.3, half pass), 20 high (score 0.9) of which n_high_fail fail
    return pd.DataFrame({"sample_id": [f"s{i}" for i in range(100)], "score": [0.3] * 80 + [0.9] * n_high,
                         "gold_pass": [i % 2 == 0 for i in range(80)] + [False] * n_high_fail + [True] * (n_high - n_high_fail)})


@pytest.mark.parametrize(("fails", "severity"), [(3, None), (4, "medium"), (6, "medium"), (7, "high")])
def test_high_score_failures_thresholds(make_run, fails, severity):
    # shares 0.15, 0.20, 0.30, 0.35 against 0.20 (medium) and 0.35 (high)
    rep = inspect(make_run({"configs/c.yaml": CFG.format(i=5000, t=0.8), "solver_scores.csv": scores_frame(fails)}))
    f = [x for x in rep.findings if x.id == "hacking.high_score_failures"]
    assert (f[0].severity if f else None) == severity


def test_miscalibrated_threshold(make_run):
    # all scores 0.5: ECE = |0.5 - pass rate|. 0.41 -> 0.09 (no), 0.40 -> 0.10 (yes)
    for passes, fires in ((41, False), (40, True)):
        frame = pd.DataFrame({"score": [0.5] * 100, "gold_pass": [True] * passes + [False] * (100 - passes)})
        assert ("calibration.miscalibrated" in ids(make_run, {"solver_scores.jsonl": frame})) is fires


def events(steps, flip, cands=(10, 10), conf=(5, 5), smax=(1.0, 1.0)):
    return pd.DataFrame({"step": steps, "n_candidates": cands, "n_confirmed": conf, "flip_rate": flip,
                         "score_min": [0.0, 0.0], "score_max": smax})


def test_too_frequent_both_sides(make_run):
    files = {"configs/c.yaml": CFG.format(i=1000, t=0.8), "calibration_events.csv": events([1000, 2000], [0.1, 0.1])}
    rep = inspect(make_run(files))
    assert "calibration.too_frequent" in finding_ids(rep)
    adj = next(a for a in rep.adjustments if a.key == "calibration.calibrate_every_steps")
    assert (adj.from_, adj.to, adj.meets_target) == (1000, 2000, True)
    files = {"configs/c.yaml": CFG.format(i=2000, t=0.8), "calibration_events.csv": events([2000, 4000], [0.3, 0.3])}
    assert "calibration.too_frequent" not in ids(make_run, files)
    files = {"configs/c.yaml": CFG.format(i=1000, t=0.8), "calibration_events.csv": events([1000, 2000], [0.09, 0.1])}
    assert "calibration.too_frequent" not in ids(make_run, files)


def test_interface_changed_both_sides(make_run):
    assert "calibration.interface_changed" in ids(make_run, {"calibration_events.csv": events(
        [0, 5000], [0, 0], smax=(1.0, 1.11))})
    assert "calibration.interface_changed" not in ids(make_run, {"calibration_events.csv": events(
        [0, 5000], [0, 0], smax=(1.0, 1.1))})


def test_candidates_too_loose_with_predicted_threshold(make_run):
    # 80 low-score samples that all pass, 20 at 0.9 of which 6 fail: at 0.3 the failing share is 0.06,
    # at 0.9 it is 6/20 = 0.30 -> the threshold to suggest is 0.9
    frame = scores_frame(6)
    frame.loc[:79, "gold_pass"] = True
    files = {"configs/c.yaml": CFG.format(i=5000, t=0.3), "solver_scores.csv": frame,
             "calibration_events.csv": events([0, 5000], [0, 0], cands=(10, 10), conf=(2, 3))}
    rep = inspect(make_run(files))
    f = next(x for x in rep.findings if x.id == "calibration.candidates_too_loose")
    assert f.evidence["ratio"] == pytest.approx(0.25)
    adj = next(a for a in rep.adjustments if a.key == "calibration.candidate_score_threshold")
    assert adj.to == pytest.approx(0.9) and adj.predicted["confirmed_share"] == pytest.approx(0.3)
    assert adj.meets_target is True
    files["calibration_events.csv"] = events([0, 5000], [0, 0], cands=(10, 10), conf=(3, 3))
    assert "calibration.candidates_too_loose" not in ids(make_run, files)


def test_surface_sensitive_both_sides(make_run):
    def pert(delta):
        return pd.DataFrame({"sample_id": ["a", "b"], "perturbation": ["rename_vars"] * 2, "score": [0.5, 0.5],
                             "perturbed_score": [0.5 + delta, 0.5 - delta]})
    assert "calibration.surface_sensitive" in ids(make_run, {"perturbations.csv": pert(0.1)})
    assert "calibration.surface_sensitive" not in ids(make_run, {"perturbations.csv": pert(0.09)})


def test_findings_name_stage_and_concern():
    from tests.conftest import SAMPLES

    rep = inspect(SAMPLES / "reward_hacking")
    by = {f.id: f for f in rep.findings}
    assert by["hacking.proxy_gold_divergence"].concerns == "signal use"
    assert by["hacking.high_score_failures"].concerns == "signal generation"
    assert [s.stage for s in rep.troubleshooting] == ["symptom", "inputs", "candidate filter", "update magnitude",
                                                       "validation"]
