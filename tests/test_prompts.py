"""What the model is told: the first message of each run kind carries that kind's numbers, checked against the
run's files read independently here; an endpoint without tool calls gets the trainer metrics inlined."""

from __future__ import annotations

import ast
import json
import re

import pandas as pd
import pytest

from tests.conftest import REPO, SAMPLES
from tests.scripted_server import ScriptedServer, completion
from triage_agent.agent import loop, prompts
from triage_agent.commands.report import report
from triage_agent.llm.capabilities import Capabilities
from triage_agent.llm.settings import Settings
from triage_agent.report import offline_report
from triage_agent.runs.load import load_run

DPO = REPO / "tests" / "real_runs" / "trl_dpo_qwen7b_cleancode_lora"


def sig4(x: float) -> float:
    """Four significant digits, as the model is sent numbers (issue 41: never 4 decimals, which read 1e-06 as 0)."""
    return float(f"{x:.4g}")


def first(run) -> str:
    return loop.first_message(offline_report(load_run(run)), "report", None)


def numbers(message: str) -> dict:
    return json.loads(re.search(r"## Numbers the findings rest on[^\n]*\n(.*?)\n\n## ", message, re.S).group(1))


def console_series(path, key: str) -> list[float]:
    """A TRL console capture's `{'key': value, ...}` lines, read with Python's own literal parser."""
    rows = [ast.literal_eval(line) for line in path.read_text().splitlines() if line.startswith("{'")]
    return [r[key] for r in rows if key in r]


def test_trainer_run_first_message_has_its_series():
    run = SAMPLES / "trl_entropy_collapse"
    msg = first(run)
    assert "- paradigm: " + load_run(run).paradigm in msg
    entropy = console_series(run / "nohup.out", "entropy")
    got = numbers(msg)["trainer_series"]["series"]["entropy"]
    n = len(entropy)
    assert n == 200 and got["first"] == sig4(entropy[0]) and got["last"] == sig4(entropy[-1])
    # head and tail: means of the first and last 20% of the steps (the rules table's head_tail_fraction)
    assert got["head_mean"] == pytest.approx(sum(entropy[:40]) / 40, abs=1e-4)
    assert got["tail_mean"] == pytest.approx(sum(entropy[-40:]) / 40, abs=1e-4)
    assert got["min"] == sig4(min(entropy))
    # the finding that rests on it comes first in the table: entropy is what policy.entropy_collapse reads
    assert list(numbers(msg)["trainer_series"]["series"])[0] == "entropy"


def test_preference_run_first_message_has_its_loss_and_log_probs():
    msg = first(DPO)
    history = json.loads((DPO / "trainer_state.json").read_text())["log_history"]
    train = [h for h in history if "loss" in h]
    series = numbers(msg)["trainer_series"]["series"]
    assert series["loss"]["first"] == sig4(train[0]["loss"]) and series["loss"]["last"] == sig4(train[-1]["loss"])
    chosen = [h["logps/chosen"] for h in train]
    # a preference run's pair statistics have canonical names (logps/chosen -> logps_chosen), never rc:* components
    assert series["logps_chosen"]["max"] == sig4(max(chosen))
    assert "- steps logged: 16, last step 160 of 160 planned" in msg


def test_selector_run_first_message_has_its_filter_and_balance():
    run = SAMPLES / "boundary_collapse"
    got = numbers(first(run))
    stats = pd.read_json(run / "data" / "filter_stats.jsonl", lines=True)
    # accuracies are k/10 (10 rollouts a question): the band [0.4, 0.6] is k in 4..6, counted on whole numbers
    in_band = (stats["accuracy"] * stats["n_rollouts"]).round().between(4, 6)
    assert got["filter"]["questions"] == len(stats) and got["filter"]["kept"] == int(stats["kept"].sum())
    assert got["filter"]["share_before"] == sig4(in_band.mean())
    assert got["filter"]["share_after"] == sig4(in_band[stats["kept"]].mean())
    assert got["reward_balance"]["weights"] == {"boundary": 0.5, "relevance": 0.5, "format": 1.5, "count": 0.25}


def test_calibration_run_first_message_has_its_high_score_failures():
    run = SAMPLES / "reward_hacking"
    got = numbers(first(run))["calibration"]
    scores = pd.read_parquet(run / "eval" / "solver_scores.parquet")
    high = scores[scores["score"] >= 0.8]  # candidate_score_threshold in the run's config
    assert got["high_score"]["candidates"] == len(high)
    assert got["high_score"]["fail_share"] == sig4((~high["gold_pass"].astype(bool)).mean())


def test_paradigm_and_life_cycle_as_the_labels_and_the_files_say():
    # the real run's label was written from its own numbers, before triage read it
    label = json.loads((REPO / "tests" / "real_runs" / "labels" / f"{DPO.name}.json").read_text())
    msg = first(DPO)
    assert f"- paradigm: {label['paradigm']} (from " in msg and f"- life cycle: {label['lifecycle']} (" in msg
    # the sample's log ends in a CUDA out-of-memory traceback; the healthy one reaches its planned 200 steps
    crash = re.search(r"- life cycle: (.*)", first(SAMPLES / "trl_oom_crash")).group(1)
    assert crash.startswith("crashed (train.log:") and "OutOfMemoryError" in crash
    assert "- life cycle: finished (" in first(SAMPLES / "trl_healthy")


def test_the_system_prompt_covers_every_paradigm():
    from triage_agent.runs.model import PARADIGMS

    text = prompts.render("system.md")
    for paradigm in PARADIGMS:
        assert f"- {paradigm}" in text, paradigm


def test_a_tools_less_endpoint_on_a_trainer_run_receives_the_trainer_metrics(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    run = SAMPLES / "trl_entropy_collapse"
    answer = {"diagnosis": [{"cause": "entropy collapsed", "findings": ["policy.entropy_collapse"], "evidence": "",
                             "confidence": 0.8}], "adjustments": []}
    with ScriptedServer([completion(json.dumps(answer))]) as srv:
        rep = report(run, Settings(base_url=srv.base_url, model="m", capabilities=Capabilities(tools=False)), save=False)
    assert rep.source["kind"] == "model"
    (req,) = srv.requests
    assert "tools" not in req
    text = req["messages"][1]["content"]
    inlined = json.loads(text[text.index("cannot call tools"):].split("\n\n", 1)[1])
    kl = console_series(run / "nohup.out", "kl")
    assert inlined["trainer_metrics"]["series"]["kl"]["last"] == sig4(kl[-1])
    assert inlined["trainer_metrics"]["series"]["kl"]["max"] == sig4(max(kl))
    assert set(inlined) == {"read_config", "trainer_metrics"}
