"""Issue 39: a remote sweep split as its listing streams gives the runs, and each run's files, that the split of the
whole listing gives (`split_listing` + `remote.by_run`, an independent method); the driver keeps a bounded ranking."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from triage_agent.runs import remote
from triage_agent.runs.sweep import Misspeculated, StreamSplit, split_listing


def _whole(rels: list[str]) -> dict[str, dict]:
    files = {r: {"name": r} for r in rels}
    split = split_listing(Path("/r"), list(files))
    return remote.by_run(files, [r.name for r in split.runs])


def _streamed(rels: list[str], speculate: bool = True) -> tuple[dict[str, dict], int]:
    got: dict[str, dict] = {}
    most = [0]
    s = StreamSplit(Path("/r"), lambda n, f: got.__setitem__(n, f), speculate)
    for r in sorted(rels):  # S3's own order: by the key's bytes
        s.add(r, {"name": r})
        most[0] = max(most[0], sum(len(o.files) for o in s.stack))
    s.end()
    return got, most[0]


def test_tricky_prefixes_give_the_same_runs_as_the_whole_listing():
    # `a-b/` sorts before `a/` by bytes ('-' < '/') but after it by folder; `a.b` between; a sweep's own config;
    # a `wandb/` of two W&B runs; part folders (checkpoint-*, configs) that never make a run
    rels = ["a/train.log", "a-b/train.log", "a.b/trainer_state.json", "sweep_config.yaml", "a/configs/x.yaml",
            "c/checkpoint-5/trainer_state.json", "c/config.yaml", "w/wandb/run-1/files/wandb-history.jsonl",
            "w/wandb/run-2/files/wandb-history.jsonl", "w/wandb/run-1/files/config.yaml"]
    got, _ = _streamed(rels)
    assert got == _whole(rels)
    assert sorted(got) == ["a", "a-b", "a.b", "c", "w/wandb/run-1", "w/wandb/run-2"]
    assert sorted(got["c"]) == ["checkpoint-5/trainer_state.json", "config.yaml"]


def test_a_trainer_log_listed_after_the_runs_makes_the_folder_one_run():
    rels = ["a/train.log", "b/train.log", "train.log"]  # the root's own log sorts after its runs
    with pytest.raises(Misspeculated):
        _streamed(rels)
    got, _ = _streamed(rels, speculate=False)
    assert got == _whole(rels) == {".": {r: {"name": r} for r in rels}}


def test_random_listings_agree_with_the_whole_listing():
    names = ["a", "a-b", "a.b", "run1", "wandb", "configs", "logs", "run-1", "run-2", "checkpoint-5"]
    leaves = ["train.log", "trainer_state.json", "config.yaml", "notes.md", "metrics.jsonl", "model.safetensors",
              "triage.toml"]
    rng = random.Random(39)
    for _ in range(1500):
        rels = sorted({"/".join([rng.choice(names) for _ in range(rng.randint(0, 3))] + [rng.choice(leaves)])
                       for _ in range(rng.randint(1, 30))})
        try:
            got, _ = _streamed(rels)
        except Misspeculated:
            got, _ = _streamed(rels, speculate=False)
        assert got == _whole(rels), rels


def test_a_sweep_of_many_runs_is_handed_on_run_by_run():
    # 10 learning rates x 300 seeds, two files a run: the split never holds more than a few runs' files
    rels = sorted(f"lr{i % 10}/seed{i // 10:05d}/{f}" for i in range(3000)
                  for f in ("checkpoint-50/trainer_state.json", "grpo_config.yaml"))
    got, most = _streamed(rels)
    assert len(got) == 3000 and got == _whole(rels)
    assert most <= 6  # at most the first run of the root and of its first folder, held until a second ends


def test_the_driver_keeps_a_bounded_ranking():
    from triage_agent.commands.sweep import Kept

    kept = Kept(5, "lr", None, None, {}, None)
    for i in range(1000):
        kept.add({"name": f"r{i:04d}", "path": "p", "worst": "high" if i % 100 == 7 else None,
                  "ids": ["x"] if i % 100 == 7 else [], "by": str(i % 2), "cached": True})
        assert len(kept.ranked) < 10
    rows = kept.rows()
    assert [r.name for r in rows] == ["r0007", "r0107", "r0207", "r0307", "r0407"]  # 10 high, by name
    assert kept.runs == 1000 and kept.tally == {"high": 10, "clean": 990}
    assert {v: g.runs for v, g in kept.groups.items()} == {"0": 500, "1": 500}
    assert kept.groups["1"].counts == {"x": 10}  # 7, 107, ... are odd
