import numpy as np
import pandas as pd
import pytest

from triage_agent.analysis import filter as filt
from triage_agent.analysis import whatif

# Ten questions worked out on paper, band [0.4, 0.6]:
#   accuracies 0.0 0.1 0.2 0.4 0.5 0.5 0.6 0.7 0.9 1.0 -> in band: 0.4 0.5 0.5 0.6 = 4 of 10 = 0.40
#   rule easy >= 0.5, unsolvable <= 0.1 keeps 0.2 0.4 -> 1 of 2 in band = 0.50
ACC = [0.0, 0.1, 0.2, 0.4, 0.5, 0.5, 0.6, 0.7, 0.9, 1.0]


def table(kept):
    return pd.DataFrame({"qid": [f"q{i}" for i in range(10)], "accuracy": ACC, "kept": kept})


def test_band_shares_by_hand():
    kept = [False, False, True, True, False, False, False, False, False, False]
    a = filt.audit(table(kept), (0.4, 0.6))
    assert a.share_before == pytest.approx(0.4)
    assert a.band_before == 4
    assert a.n_kept == 2 and a.band_after == 1
    assert a.share_after == pytest.approx(0.5)
    assert sum(a.hist_before) == 10
    assert a.hist_before[5] == 2  # 0.5, 0.5


def test_rule_check_counts_disagreements():
    rule = filt.expected_kept(np.array(ACC), 0.5, 0.1)
    assert rule.tolist() == [False, False, True, True, False, False, False, False, False, False]
    kept = rule.tolist()
    kept[4] = True  # q4 (0.5) kept although 0.5 >= easy
    kept[2] = False  # q2 (0.2) dropped although the rule keeps it
    check = filt.rule_check(table(kept), 0.5, 0.1)
    assert check.n_mismatch == 2
    assert check.rate == pytest.approx(0.2)
    assert check.kept_but_should_drop == 1 and check.dropped_but_should_keep == 1
    assert check.examples == ["q2", "q4"]


def test_whatif_filter_outcome_by_hand():
    # easy 0.95 / unsolvable 0.05 keep 0.1..0.9 = 8 questions, 4 in band -> 0.5
    out = whatif.filter_outcome(np.array(ACC), (0.4, 0.6), 0.95, 0.05)
    assert out.kept == 8
    assert out.band_share_after_filter == pytest.approx(0.5)


def test_search_thresholds_keeps_most_within_target():
    acc = np.array(ACC)
    best = whatif.search_thresholds(acc, (0.4, 0.6), 0.5, 0.1, (0.25, 0.35))
    # Independent check: brute force over the same grid.
    grid = [round(x * 0.05, 2) for x in range(21)]
    feasible = []
    for e in grid:
        for u in grid:
            if u >= e:
                continue
            o = whatif.filter_outcome(acc, (0.4, 0.6), e, u)
            if o.kept and 0.25 <= o.band_share_after_filter <= 0.35:
                feasible.append(o.kept)
    assert best.kept == max(feasible)
    assert 0.25 <= best.band_share_after_filter <= 0.35
