"""CalibForge's input stage (seed 003, 5.1 step 2 and 3.3; findings-v4.md): enough candidates, drawn as the config
says, several solvers' disagreement, behaviour drift against early training."""

import numpy as np
import pandas as pd
import pytest

from tests.conftest import SAMPLES, finding_ids
from triage_agent.commands.inspect import inspect
from triage_agent.findings.calibration_inputs import ks_statistic

CFG = "calibration:\n  calibrate_every_steps: 2500\n  candidate_score_threshold: 0.8\n  score_range: [0.0, 1.0]\n"


def by_id(rep, fid):
    return next(f for f in rep.findings if f.id == fid)


def scores(n=200, seed=0, **extra):
    rng = np.random.default_rng(seed)
    score = rng.uniform(0, 1, n)
    frame = pd.DataFrame({"step": np.arange(n) * 10, "sample_id": [f"s{i}" for i in range(n)], "score": score,
                          "gold_pass": rng.random(n) < score})
    for k, v in extra.items():
        frame[k] = v
    return frame


def test_too_few_candidates_per_event(make_run):
    events = [{"step": 2500, "n_candidates": 120, "n_confirmed": 60}, {"step": 5000, "n_candidates": 49,
                                                                         "n_confirmed": 20},
              {"step": 7500, "n_candidates": 12, "n_confirmed": 6}]
    rep = inspect(make_run({"configs/calibration_config.yaml": CFG, "calibration_events.jsonl": events,
                            "solver_scores.parquet": scores()}))
    f = by_id(rep, "calibration.too_few_candidates")
    assert f.evidence["events_below"] == 2 and f.evidence["events"] == 3
    assert f.evidence["low_events"] == [{"step": 5000, "n_candidates": 49}, {"step": 7500, "n_candidates": 12}]
    assert f.stage == "inputs"
    inputs = next(s for s in rep.troubleshooting if s.stage == "inputs")
    assert "calibration.too_few_candidates" in inputs.findings
    events[1]["n_candidates"], events[2]["n_candidates"] = 50, 80
    rep = inspect(make_run({"configs/calibration_config.yaml": CFG, "calibration_events.jsonl": events,
                            "solver_scores.parquet": scores()}))
    assert "calibration.too_few_candidates" not in finding_ids(rep)


@pytest.mark.parametrize(("sampling", "fires"), [("stratified", True), ("top", False)])
def test_candidates_from_the_top_only_when_the_config_says_otherwise(make_run, sampling, fires):
    s = scores()
    s["candidate"] = s["score"] >= s["score"].quantile(0.95)  # the top 5%: inside the top decile
    cfg = CFG + f"  candidate_sampling: {sampling}\n"
    rep = inspect(make_run({"configs/calibration_config.yaml": cfg, "solver_scores.parquet": s}))
    assert ("calibration.candidates_top_only" in finding_ids(rep)) is fires
    if fires:
        f = by_id(rep, "calibration.candidates_top_only")
        assert f.evidence["candidates"] == int(s["candidate"].sum())
        assert f.evidence["lowest_candidate_score"] == round(s.loc[s["candidate"], "score"].min(), 3)


def test_candidates_from_the_middle_too_are_fine(make_run):
    s = scores()
    s["candidate"] = (s["score"] >= 0.95) | s["score"].between(0.45, 0.55)
    rep = inspect(make_run({"configs/calibration_config.yaml": CFG + "  candidate_sampling: stratified\n",
                            "solver_scores.parquet": s}))
    assert "calibration.candidates_top_only" not in finding_ids(rep)


def test_several_solvers_disagreeing(make_run):
    s = scores(n=100)
    other = s["score"].to_numpy().copy()
    flip = np.arange(100) % 4 == 0  # a quarter of the samples: the second solver says the opposite
    other[flip] = 1 - other[flip]
    s["score_solver_b"] = other
    split = ((s["score"] >= 0.5) != (s["score_solver_b"] >= 0.5)).mean()
    rep = inspect(make_run({"configs/calibration_config.yaml": CFG, "solver_scores.parquet": s}))
    f = by_id(rep, "calibration.solvers_disagree")
    assert f.evidence["solvers"] == ["score", "score_solver_b"]
    assert f.evidence["disagree_share"] == pytest.approx(split, abs=1e-3)
    assert len(f.evidence["most_disputed"]) == 5
    s["score_solver_b"] = s["score"]  # they agree
    rep = inspect(make_run({"configs/calibration_config.yaml": CFG, "solver_scores.parquet": s}))
    assert "calibration.solvers_disagree" not in finding_ids(rep)


def test_behaviour_drift_in_length(make_run):
    s = scores(n=300)
    s["length"] = np.where(s["step"] <= 598, 200, np.where(s["step"] >= 2392, 420, 300))  # first/last 20%
    f = by_id(inspect(make_run({"configs/calibration_config.yaml": CFG, "solver_scores.parquet": s})),
              "calibration.behavior_drift")
    assert f.evidence["length"]["early_median"] == 200 and f.evidence["length"]["late_median"] == 420
    assert f.evidence["length"]["ratio"] == pytest.approx(2.1)
    s["length"] = 300
    assert "calibration.behavior_drift" not in finding_ids(
        inspect(make_run({"configs/calibration_config.yaml": CFG, "solver_scores.parquet": s})))


def test_ks_statistic_by_hand():
    assert ks_statistic(np.array([0.1, 0.2, 0.3]), np.array([0.6, 0.7, 0.8])) == 1.0
    assert ks_statistic(np.array([0.1, 0.2, 0.3, 0.4]), np.array([0.3, 0.4, 0.5, 0.6])) == pytest.approx(0.5)


@pytest.mark.parametrize("name", ["reward_hacking", "calibration_healthy"])
def test_the_calibration_samples_keep_their_findings(name):
    ids = finding_ids(inspect(SAMPLES / name), "medium")
    assert not ids & {"calibration.too_few_candidates", "calibration.candidates_top_only",
                      "calibration.solvers_disagree", "calibration.behavior_drift"}
