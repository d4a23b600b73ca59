"""reward.boundary_variance_dominates (findings-v4.md; BAR-RAG seed 4.2) and the components side by side."""

import json

import numpy as np
import pandas as pd
import pytest

from tests.conftest import SAMPLES, cli, finding_ids
from triage_agent.agent import tools
from triage_agent.commands.inspect import inspect
from triage_agent.findings.facts import resolve
from triage_agent.runs.load import load_run

ID = "reward.boundary_variance_dominates"
TRAIN_CFG = "reward:\n  weights:\n    boundary: 1.0\n    format: 0.2\n"


def history(boundary_amp, format_amp, n=40):
    # a square wave each: population variance = amp^2 exactly
    sign = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    return pd.DataFrame({"step": np.arange(n), "boundary": 0.5 + boundary_amp * sign,
                         "format": 0.5 + format_amp * sign[::-1]})


@pytest.mark.parametrize(("ratio", "fires"), [(5.0, True), (4.9, False), (9.0, True)])
def test_fires_at_five_times_the_format_variance(make_run, ratio, fires):
    run = make_run({"configs/train.yaml": TRAIN_CFG,
                    "selector_round1/reward_history.csv": history(0.1 * np.sqrt(ratio), 0.1)})
    rep = inspect(run)
    assert (ID in finding_ids(rep)) is fires
    if fires:
        f = next(f for f in rep.findings if f.id == ID)
        assert f.severity == "medium"
        assert f.evidence["variance_ratio"] == pytest.approx(ratio, abs=0.01)
        assert f.evidence["variance"]["format"] == pytest.approx(0.01)


def test_a_format_reward_that_never_moves_gives_no_ratio(make_run):
    run = make_run({"configs/train.yaml": TRAIN_CFG, "selector_round1/reward_history.csv": history(0.2, 0.0)})
    assert ID not in finding_ids(inspect(run))


def test_fires_on_boundary_collapse_with_the_std_ratio_squared():
    rep = inspect(SAMPLES / "boundary_collapse")
    f = next(f for f in rep.findings if f.id == ID)
    h = pd.read_json(SAMPLES / "boundary_collapse/round_3/selector/reward_history.jsonl", lines=True)
    expected = (h["boundary"].std() / h["format"].std()) ** 2  # sample stds: their ratio squared is the same
    assert f.evidence["variance_ratio"] == pytest.approx(expected, abs=0.01)
    assert f.evidence["variance_ratio"] == pytest.approx(9.7, abs=0.05)


def test_silent_on_the_near_miss_sample():
    rep = inspect(SAMPLES / "boundary_variance_near_miss")
    assert ID not in finding_ids(rep)
    h = pd.read_csv(SAMPLES / "boundary_variance_near_miss/selector_round3/reward_history.csv")
    ratio = h["boundary"].var() / h["format"].var()
    assert 4.0 < ratio < 5.0  # a near miss: it would fire at a 4x threshold
    run_dir = SAMPLES / "boundary_variance_near_miss"
    code, out, _ = cli("inspect", str(run_dir), "--json")
    assert code == 0 and ID not in {x["id"] for x in json.loads(out)["findings"]}


def test_reward_balance_puts_mean_variance_and_share_side_by_side():
    facts = resolve(load_run(SAMPLES / "boundary_collapse"))
    out = tools.reward_balance(facts)
    h = pd.read_json(SAMPLES / "boundary_collapse/round_3/selector/reward_history.jsonl", lines=True)
    by = out["mean_variance"]
    assert set(by) == set(out["shares"]) == {"boundary", "relevance", "format", "count"}
    for name, (mean, variance) in by.items():
        assert mean == pytest.approx(h[name].mean(), abs=1e-4)
        assert variance == pytest.approx(h[name].var(ddof=0), abs=1e-6)
    assert out["shares"]["format"] > 0.9 > 0.1 > out["shares"]["boundary"]  # the shares point the other way ...
    assert out["variance_ratio_boundary_format"] == pytest.approx(9.69, abs=0.01)
    assert "share" in out["variance_vs_share"] and "variance" in out["variance_vs_share"]  # ... and it says why


def test_the_report_shows_the_components_table():
    code, out, _ = cli("inspect", str(SAMPLES / "boundary_collapse"), width=200)
    assert code == 0
    assert "Reward components (selector_round3)" in out
    assert "variance ratio 9.7x" in out
    code, out, _ = cli("inspect", str(SAMPLES / "boundary_collapse"), "--json")
    doc = json.loads(out)["reward_components"]
    assert doc["variance_ratio_boundary_format"] == pytest.approx(9.69, abs=0.01)
    assert [c["name"] for c in doc["components"]] == ["boundary", "relevance", "format", "count"]
