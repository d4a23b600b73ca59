"""Rounds from names as well as folders (findings-v4.md, the seeds end to end; BAR-RAG seed 3.1): the seed's own
`debug_artifacts/{logs,rewards,configs}` layout is the same run as the round-folder layout."""

import shutil

import pandas as pd
import pytest

from tests.conftest import SAMPLES, write
from triage_agent.commands.inspect import inspect
from triage_agent.runs import round_names
from triage_agent.runs.load import load_run

SAMPLE = SAMPLES / "boundary_collapse"


def step_log(history: pd.DataFrame, suffix: str) -> str:
    """A training log of step lines, as a custom loop prints them, from a round's history."""
    cols = [c for c in history.columns if c != "step"]
    return "".join(f"step {int(r['step'])} | " + " | ".join(f"{c}{suffix}: {r[c]:.6f}" for c in cols) + "\n"
                   for _, r in history.iterrows())


def seed_layout(root, with_logs=True):
    """debug_artifacts/ exactly as the write-up's 3.1 builds it: `cp outputs/{role}_round*/reward_history.jsonl
    debug_artifacts/rewards/` under round-prefixed names, the train logs under logs/, and
    `configs/filter_config.yaml`, `configs/reward_config.yaml` (the sample keeps its reward weights in
    train_config.yaml); the filter's before/after statistics beside the logs."""
    d = root / "debug_artifacts"
    for n in (1, 2, 3):
        for role in ("selector", "generator"):
            src = SAMPLE / f"round_{n}" / role
            write(d, f"rewards/{role}_round{n}_reward_history.jsonl", (src / "reward_history.jsonl").read_text())
            if with_logs:
                hist = pd.read_json(src / "reward_history.jsonl", lines=True)
                write(d, f"logs/{role}_round{n}/train.log", step_log(hist, "_reward" if role == "selector" else ""))
    shutil.copy(SAMPLE / "round_3/selector/reward_samples.parquet", d / "rewards/selector_round3_reward_samples.parquet")
    write(d, "configs/filter_config.yaml", (SAMPLE / "configs/filter_config.yaml").read_text())
    write(d, "configs/reward_config.yaml", (SAMPLE / "configs/train_config.yaml").read_text())
    write(d, "logs/filter_stats.jsonl", (SAMPLE / "data/filter_stats.jsonl").read_text())
    return d


def findings(report):
    return {(f.id, f.severity) for f in report.findings}


def test_the_seed_layout_is_the_round_folder_run(tmp_path):
    folders, seed = inspect(SAMPLE), inspect(seed_layout(tmp_path))
    planted = {("filter.boundary_starved", "high"), ("reward.boundary_suppressed", "high"),
               ("reward.boundary_oscillating", "medium"), ("generator.accuracy_off_target", "medium")}
    assert planted <= findings(seed)
    assert findings(seed) == findings(folders)  # and no metrics.not_logged
    assert not any(f.id == "metrics.not_logged" for f in seed.findings)
    rounds = [(r.role, r.index) for r in seed.run.rounds]
    assert rounds == [(r.role, r.index) for r in folders.run.rounds] == [
        ("generator", 1), ("generator", 2), ("generator", 3), ("selector", 1), ("selector", 2), ("selector", 3)]
    # the same numbers: the tables win over the logs of the same rounds
    swing = {r.id: r.evidence for r in seed.findings}["reward.boundary_oscillating"]["swing_ratio"]
    assert swing == {r.id: r.evidence for r in folders.findings}["reward.boundary_oscillating"]["swing_ratio"]
    assert seed.run.metrics is None


def test_round_folders_holding_only_a_train_log_give_the_rounds(tmp_path):
    d = seed_layout(tmp_path)
    shutil.rmtree(d / "rewards")  # only logs/{role}_round{n}/train.log of step lines are left
    run = load_run(d)
    assert [(r.role, r.index) for r in run.rounds] == [("generator", i) for i in (1, 2, 3)] + [
        ("selector", i) for i in (1, 2, 3)]
    hist = pd.read_json(SAMPLE / "round_2/selector/reward_history.jsonl", lines=True)
    got = next(r for r in run.rounds if (r.role, r.index) == ("selector", 2)).history
    assert got.source == "logs/selector_round2/train.log"
    assert got.frame["boundary"].to_numpy() == pytest.approx(hist["boundary"].to_numpy(), abs=1e-9)
    ids = {f.id for f in inspect(d).findings}
    assert {"reward.boundary_oscillating", "generator.accuracy_off_target", "filter.boundary_starved"} <= ids
    assert "metrics.not_logged" not in ids


def test_round_numbers_in_log_file_names(tmp_path):
    hist = pd.read_json(SAMPLE / "round_1/generator/reward_history.jsonl", lines=True)
    write(tmp_path, "logs/generator_round1_train.log", step_log(hist, ""))
    write(tmp_path, "logs/generator_round2.log", step_log(hist, ""))
    run = load_run(tmp_path)
    assert [(r.role, r.index, r.history.source) for r in run.rounds] == [
        ("generator", 1, "logs/generator_round1_train.log"), ("generator", 2, "logs/generator_round2.log")]


def test_a_files_manifest_keeps_the_rounds_its_names_give(tmp_path):
    d = seed_layout(tmp_path, with_logs=False)
    write(d, "triage.toml", '[files]\nreward_history = ["rewards/*_reward_history.jsonl"]\n')
    run = load_run(d)
    assert sorted((r.role, r.index) for r in run.rounds) == [(role, i) for role in ("generator", "selector")
                                                              for i in (1, 2, 3)]


@pytest.mark.parametrize(("name", "expected"), [
    ("selector_round1_reward_history.jsonl", ("selector", 1, "reward_history")),
    ("generator_round12_reward_samples.parquet", ("generator", 12, "reward_samples")),
    ("generator_round2.log", ("generator", 2, "")),
    ("round2_reward_history.jsonl", None),
    ("selector_round" + "9" * 40 + "_x.log", None),
])
def test_names(name, expected):
    assert round_names.from_file(name) == expected


@pytest.mark.parametrize(("key", "expected"), [("boundary_reward", "boundary"), ("reward/boundary", "boundary"),
                                               ("train/format_reward_mean", "format"), ("acc", "accuracy"),
                                               ("lr", None), ("loss", None), ("reward", None)])
def test_components_by_name(key, expected):
    assert round_names.component(key) == expected
