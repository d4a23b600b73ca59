"""Each selector/generator finding on both sides of its threshold, on small hand-built runs."""

import json

import numpy as np
import pandas as pd
import pytest

from tests.conftest import finding_ids
from triage_agent.commands.inspect import inspect

FILTER_CFG = "filter:\n  easy_threshold: {e}\n  unsolvable_threshold: {u}\n  rollouts_per_question: {n}\n"
TRAIN_CFG = "reward:\n  weights:\n    boundary: {wb}\n    format: {wf}\n  boundary_rollouts: {br}\n"


def filter_rows(acc, easy, uns):
    return [{"qid": f"q{i}", "accuracy": a, "kept": bool(uns < a < easy)} for i, a in enumerate(acc)]


def by_id(report, fid):
    return next(f for f in report.findings if f.id == fid)


# 20 questions: 0.0 x4, 0.1 x2, 0.2 x2, 0.3 x2, 0.5 x4, 0.8 x2, 1.0 x4 -> band [0.4, 0.6] holds the four 0.5s.
ACC20 = [0.0] * 4 + [0.1] * 2 + [0.2] * 2 + [0.3] * 2 + [0.5] * 4 + [0.8] * 2 + [1.0] * 4


def test_boundary_starved_fires_when_filter_drops_the_band(make_run):
    # easy 0.5 drops the 0.5s: before 4/20 = 0.20, after 0/6 -> starved
    run = make_run({"configs/filter.yaml": FILTER_CFG.format(e=0.5, u=0.1, n=10),
                    "filter_stats.jsonl": filter_rows(ACC20, 0.5, 0.1)})
    rep = inspect(run)
    f = by_id(rep, "filter.boundary_starved")
    assert f.severity == "high"
    assert f.evidence["share_before"] == pytest.approx(0.2)
    assert f.evidence["share_after"] == 0.0
    assert f.suggestion["key"] == "filter.easy_threshold"


def test_boundary_not_starved_when_share_is_enough(make_run):
    # easy 0.9, unsolvable 0.05 keep 0.1 0.1 0.2 0.2 0.3 0.3 0.5x4 0.8 0.8 = 12; 4/12 = 0.333 -> fine
    run = make_run({"configs/filter.yaml": FILTER_CFG.format(e=0.9, u=0.05, n=10),
                    "filter_stats.jsonl": filter_rows(ACC20, 0.9, 0.05)})
    ids = finding_ids(inspect(run))
    assert "filter.boundary_starved" not in ids and "filter.boundary_overloaded" not in ids


def test_low_share_not_caused_by_filter_is_not_starved(make_run):
    # a filter that keeps everything cannot have lowered the share (0.2 before and after)
    run = make_run({"configs/filter.yaml": FILTER_CFG.format(e=1.01, u=-0.01, n=10),
                    "filter_stats.jsonl": filter_rows(ACC20, 1.01, -0.01)})
    assert "filter.boundary_starved" not in finding_ids(inspect(run))


def test_boundary_overloaded_above_040(make_run):
    # keep only 0.3 0.3 0.5x4 0.8 0.8 (u = 0.25, e = 0.9) -> 4/8 = 0.5 > 0.40
    run = make_run({"configs/filter.yaml": FILTER_CFG.format(e=0.9, u=0.25, n=10),
                    "filter_stats.jsonl": filter_rows(ACC20, 0.9, 0.25)})
    f = by_id(inspect(run), "filter.boundary_overloaded")
    assert f.severity == "medium" and f.evidence["share_after"] == pytest.approx(0.5)


def test_rule_mismatch_above_one_percent(make_run):
    acc = [i / 100 for i in range(200)]
    acc = [a % 1.0 for a in acc]
    rows = filter_rows(acc, 0.8, 0.2)
    rows[0]["kept"] = not rows[0]["kept"]  # 1 of 200 = 0.5% -> no finding
    run = make_run({"configs/filter.yaml": FILTER_CFG.format(e=0.8, u=0.2, n=10), "filter_stats.jsonl": rows})
    assert "filter.rule_mismatch" not in finding_ids(inspect(run))
    for r in rows[1:3]:
        r["kept"] = not r["kept"]  # 3 of 200 = 1.5% -> finding
    run = make_run({"configs/filter.yaml": FILTER_CFG.format(e=0.8, u=0.2, n=10), "filter_stats.jsonl": rows})
    f = by_id(inspect(run), "filter.rule_mismatch")
    assert f.evidence["mismatch"] == 3 and f.evidence["rate"] == pytest.approx(0.015)


def selector_files(wb, wf, boundary, fmt, br=8, samples=None):
    steps = np.arange(len(boundary))
    files = {"configs/train.yaml": TRAIN_CFG.format(wb=wb, wf=wf, br=br),
             "selector_round1/reward_history.csv": pd.DataFrame({"step": steps, "boundary": boundary, "format": fmt})}
    if samples is not None:
        files["selector_round1/reward_samples.jsonl"] = samples
    return files


RISING = np.linspace(0.2, 0.8, 50)


def samples_with_variances(var_b, var_f, steps=5):
    # each step: boundary takes +-sqrt(var_b), format +-sqrt(var_f), uncorrelated (2x2 pattern)
    sb, sf = np.sqrt(var_b), np.sqrt(var_f)
    rows = []
    for s in range(steps):
        for db, df in ((1, 1), (-1, 1), (1, -1), (-1, -1)):
            rows.append({"step": s, "boundary": 0.5 + db * sb, "format": 0.5 + df * sf})
    return rows


def test_boundary_suppressed_by_weight_ratio(make_run):
    # ratio 3.0 -> fires even though the boundary carries most variance
    run = make_run(selector_files(1.0, 3.0, RISING, RISING * 0, samples=samples_with_variances(0.04, 0.0)))
    f = by_id(inspect(run), "reward.boundary_suppressed")
    assert f.evidence["format_boundary_ratio"] == pytest.approx(3.0)
    run = make_run(selector_files(1.0, 2.9, RISING, RISING * 0, samples=samples_with_variances(0.04, 0.0)))
    assert "reward.boundary_suppressed" not in finding_ids(inspect(run))


def test_boundary_suppressed_by_share(make_run):
    # weights 1/1; var_b = 0.01, var_f = 0.0144: share_b = 0.01 / 0.0244 = 0.41 -> no finding
    run = make_run(selector_files(1.0, 1.0, RISING, RISING, samples=samples_with_variances(0.01, 0.0144)))
    rep = inspect(run)
    assert "reward.boundary_suppressed" not in finding_ids(rep)
    # var_f = 0.0169: share_b = 0.01 / 0.0269 = 0.372 -> finding, with a weight change that fixes it
    run = make_run(selector_files(1.0, 1.0, RISING, RISING, samples=samples_with_variances(0.01, 0.0169)))
    rep = inspect(run)
    f = by_id(rep, "reward.boundary_suppressed")
    assert f.evidence["boundary_share"] == pytest.approx(0.01 / 0.0269, abs=1e-3)
    assert f.evidence["approximate"] is False
    adj = next(a for a in rep.adjustments if a.key.startswith("reward.weights."))
    assert adj.meets_target is True and adj.predicted["boundary_share"] >= 0.40


def test_boundary_oscillating(make_run):
    flat_zigzag = 0.4 + 0.1 * np.where(np.arange(50) % 2 == 0, 1, -1)
    run = make_run(selector_files(1.0, 0.1, flat_zigzag, RISING))
    f = by_id(inspect(run), "reward.boundary_oscillating")
    assert f.evidence["swing_ratio"] == pytest.approx(1.0)
    # the same zigzag on a strong upward trend is learning, not oscillation
    run = make_run(selector_files(1.0, 0.1, flat_zigzag * 0.1 + RISING, RISING))
    assert "reward.boundary_oscillating" not in finding_ids(inspect(run))


@pytest.mark.parametrize(("rpq", "br", "severity"), [(2, 8, "high"), (4, 8, "medium"), (5, 5, None), (8, 3, "medium")])
def test_rollouts_too_few(make_run, rpq, br, severity):
    run = make_run({"configs/filter.yaml": FILTER_CFG.format(e=0.9, u=0.1, n=rpq),
                    "configs/train.yaml": TRAIN_CFG.format(wb=1, wf=0.1, br=br)})
    rep = inspect(run)
    if severity is None:
        assert "rollouts.too_few" not in finding_ids(rep)
    else:
        assert by_id(rep, "rollouts.too_few").severity == severity


def meta(role, n, **kw):
    return json.dumps({"round": n, "role": role, **kw})


def test_generator_frozen_from_checkpoints(make_run):
    files = {f"generator_round{n}/round.json": meta("generator", n, checkpoint_in=f"g{n - 1}", checkpoint_out=f"g{n}")
             for n in (1, 2)}
    run = make_run(files)
    assert "rounds.generator_frozen" not in finding_ids(inspect(run))
    files["generator_round2/round.json"] = meta("generator", 2, checkpoint_in="g1", checkpoint_out="g1")
    assert "rounds.generator_frozen" in finding_ids(inspect(make_run(files)))
    files = {f"selector_round{n}/round.json": meta("selector", n, generator_checkpoint="g1") for n in (1, 2)}
    assert "rounds.generator_frozen" in finding_ids(inspect(make_run(files)))


def test_selector_stale(make_run):
    base = pd.DataFrame({"step": np.arange(50), "boundary": RISING, "format": RISING[::-1]})
    same = base.copy()
    same["boundary"] = same["boundary"] * 1.01  # 1% higher: within 2%
    run = make_run({"selector_round1/reward_history.csv": base, "selector_round2/reward_history.csv": same})
    assert "rounds.selector_stale" in finding_ids(inspect(run))
    moved = base.copy()
    moved["boundary"] = moved["boundary"] * 1.03  # 3% higher: moved on
    run = make_run({"selector_round1/reward_history.csv": base, "selector_round2/reward_history.csv": moved})
    assert "rounds.selector_stale" not in finding_ids(inspect(run))


def gen_files(*ends, target=0.5, n=20):
    files = {"configs/train.yaml": f"reward:\n  target_accuracy: {target}\n"}
    for i, (start, end) in enumerate(ends, start=1):
        acc = [start] * (n - 2) + [end] * 2  # last 10% of 20 steps = 2 steps at `end`
        files[f"generator_round{i}/reward_history.jsonl"] = [{"step": s, "accuracy": a} for s, a in enumerate(acc)]
    return files


def test_accuracy_off_target(make_run):
    # ends 0.41 then 0.42: gap 0.08 > 0.05, moved 0.01 < 0.02 -> finding
    assert "generator.accuracy_off_target" in finding_ids(inspect(make_run(gen_files((0.4, 0.41), (0.41, 0.42)))))
    # ends 0.40 then 0.43: moved 0.03 toward target -> no finding
    assert "generator.accuracy_off_target" not in finding_ids(inspect(make_run(gen_files((0.4, 0.40), (0.40, 0.43)))))
    # ends at 0.46: within 0.05 of target -> no finding
    assert "generator.accuracy_off_target" not in finding_ids(inspect(make_run(gen_files((0.4, 0.46), (0.46, 0.46)))))
    # a single flat round away from target -> finding
    assert "generator.accuracy_off_target" in finding_ids(inspect(make_run(gen_files((0.3, 0.3)))))


def test_accuracy_regressed(make_run):
    assert "generator.accuracy_regressed" in finding_ids(inspect(make_run(gen_files((0.4, 0.50), (0.50, 0.47)))))
    assert "generator.accuracy_regressed" not in finding_ids(inspect(make_run(gen_files((0.4, 0.50), (0.50, 0.48)))))


def test_rules_override_from_manifest(make_run):
    files = {"configs/filter.yaml": FILTER_CFG.format(e=0.9, u=0.1, n=6),
             "configs/train.yaml": TRAIN_CFG.format(wb=1, wf=0.1, br=8)}
    assert "rollouts.too_few" not in finding_ids(inspect(make_run(files)))
    files["triage.toml"] = "[rules]\nmin_rollouts = 8\n"
    assert "rollouts.too_few" in finding_ids(inspect(make_run(files)))
