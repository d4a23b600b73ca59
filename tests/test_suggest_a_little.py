"""Suggestions move "a little" (BAR-RAG seed 5.4; issue 37): a threshold suggestion keeps at least half of the
boundary-band questions the current thresholds keep, and its what-if states the band counts before and after."""

import numpy as np

from tests.conftest import finding_ids
from triage_agent.agent import tools
from triage_agent.commands.inspect import inspect
from triage_agent.findings.facts import resolve
from triage_agent.runs.load import load_run

FILTER_CFG = "filter:\n  easy_threshold: {e}\n  unsolvable_threshold: {u}\n  rollouts_per_question: 10\n"
# accuracies k/10 and how many questions sit at each: 17 in the band [0.4, 0.6] of 36 kept (47%: overloaded).
# unsolvable 0.0 -> 0.5 would reach a 33% share by keeping only the six 0.6s: 6 of 17 band questions.
VALUES = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
COUNTS = [3, 0, 1, 6, 5, 6, 6, 7, 2, 3, 4]


def overloaded(make_run, easy=1.0, uns=0.0):
    acc = np.repeat(VALUES, COUNTS)
    rows = [{"qid": f"q{i}", "accuracy": float(a), "kept": bool(uns < a < easy)} for i, a in enumerate(acc)]
    return make_run({"configs/filter.yaml": FILTER_CFG.format(e=easy, u=uns), "filter_stats.jsonl": rows})


def test_the_overloaded_filter_is_not_told_to_drop_most_of_its_band(make_run):
    rep = inspect(overloaded(make_run))
    assert "filter.boundary_overloaded" in finding_ids(rep)
    f = next(f for f in rep.findings if f.id == "filter.boundary_overloaded")
    assert f.evidence["band_after"] == 17 and f.evidence["kept"] == 36
    # no pair of thresholds on the grid keeps 9 or more of the 17 and gets nearer 25-35%: nothing is offered
    assert f.suggestion is None
    assert not [a for a in rep.adjustments if a.key.startswith("filter.")]


def test_a_proposed_big_cut_misses_its_target_and_says_the_band_counts(make_run):
    facts = resolve(load_run(overloaded(make_run)))
    out = tools.simulate_adjustment(facts, {"unsolvable_threshold": 0.5})
    (res,) = out["results"]
    # kept: 0.6 x6, 0.7 x7, 0.8 x2, 0.9 x3 = 18; band 6 -> share 1/3, inside 25-35%, but 6 < 17 / 2
    assert res["predicted"]["band_share_after_filter"] == round(6 / 18, 3)
    assert res["predicted"]["band_questions_before"] == 17 and res["predicted"]["band_questions_after"] == 6
    assert res["meets_target"] is False


def test_an_offered_suggestion_states_the_band_counts_and_keeps_most_of_the_band(make_run):
    # starved: easy 0.4 drops the whole band; loosening it brings the band back (0 before)
    rep = inspect(overloaded(make_run, easy=0.4, uns=0.0))
    adj = next(a for a in rep.adjustments if a.key == "filter.easy_threshold")
    assert adj.predicted["band_questions_before"] == 0
    assert adj.predicted["band_questions_after"] > 0
    assert adj.meets_target is True
