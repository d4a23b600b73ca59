"""Gold signals by meaning (findings-v4.md, the seeds end to end; CalibForge seed: "reward up, human spot-check
pass rate flat"): human, spot-check and manual pass rates serve hacking.proxy_gold_divergence."""

import shutil

import pandas as pd
import pytest

from tests.conftest import SAMPLES, finding_ids
from triage_agent.commands.inspect import inspect

ID = "hacking.proxy_gold_divergence"


def renamed(tmp_path, to):
    run = tmp_path / "run"
    shutil.copytree(SAMPLES / "reward_hacking", run)
    path = run / "eval" / "eval_history.csv"
    frame = pd.read_csv(path)
    frame = frame.drop(columns=["gold_pass_rate"]) if to is None else frame.rename(columns={"gold_pass_rate": to})
    frame.to_csv(path, index=False)
    return run


@pytest.mark.parametrize("name", ["human_pass_rate", "human_eval", "spot_check_pass_rate", "manual_pass_rate"])
def test_a_human_pass_rate_alone_raises_the_divergence(tmp_path, name):
    rep = inspect(renamed(tmp_path, name))
    f = next(f for f in rep.findings if f.id == ID)
    assert f.evidence["gold_series"] == name and name in f.title
    gold = pd.read_csv(SAMPLES / "reward_hacking/eval/eval_history.csv")["gold_pass_rate"]
    n = max(1, len(gold) // 10)  # the first and last 10% of points
    assert f"{gold.head(n).mean():.2f} → {gold.tail(n).mean():.2f}" in f.title
    assert any(name in note for note in rep.notes)


def test_without_a_gold_series_the_report_says_the_symptom_was_not_checked(tmp_path):
    rep = inspect(renamed(tmp_path, None))
    assert ID not in finding_ids(rep)
    symptom = next(s for s in rep.troubleshooting if s.stage == "symptom")
    assert "could not be checked" in symptom.status
    assert "human_pass_rate" in symptom.status and "gold_pass_rate" in symptom.status


def test_gold_pass_rate_wins_over_a_human_column(tmp_path):
    run = renamed(tmp_path, "gold_pass_rate")
    path = run / "eval" / "eval_history.csv"
    frame = pd.read_csv(path)
    frame["human_pass_rate"] = 1.0 - frame["gold_pass_rate"]
    frame.to_csv(path, index=False)
    f = next(f for f in inspect(run).findings if f.id == ID)
    assert f.evidence["gold_series"] == "gold_pass_rate"
