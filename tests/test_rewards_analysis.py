import numpy as np
import pandas as pd
import pytest

from triage_agent.analysis import rewards, whatif


def test_contribution_shares_two_components_by_hand():
    # r1 = [0, 2] per step pair, r2 = [0, 1]; independent within steps?  Take one step with 4 rollouts:
    # r1 = [1, -1, 1, -1], r2 = [1, 1, -1, -1]: Var(r1) = Var(r2) = 1, Cov(r1, r2) = 0.
    # weights w1 = 2, w2 = 1: R = 2 r1 + r2, Var(R) = 4 + 1 = 5,
    # share1 = 2 * Cov(r1, R) / 5 = 2 * 2 / 5 = 0.8 ; share2 = 1 * 1 / 5 = 0.2
    frame = pd.DataFrame({"step": [0, 0, 0, 0], "a": [1, -1, 1, -1], "b": [1, 1, -1, -1]})
    shares = rewards.contribution_shares(frame, {"a": 2.0, "b": 1.0}, within_step=True)
    assert shares["a"] == pytest.approx(0.8)
    assert shares["b"] == pytest.approx(0.2)


def test_within_step_ignores_between_step_shifts():
    # Step means differ a lot for `a` (0 vs 100) but within each step only `b` varies:
    # within-step, all of Var(R) comes from b.
    frame = pd.DataFrame({"step": [0, 0, 1, 1], "a": [0, 0, 100, 100], "b": [1, -1, 1, -1]})
    within = rewards.contribution_shares(frame, {"a": 1.0, "b": 1.0}, within_step=True)
    assert within == pytest.approx({"a": 0.0, "b": 1.0})
    across = rewards.contribution_shares(frame, {"a": 1.0, "b": 1.0}, within_step=False)
    # across rows: Var(a) = 2500, Var(b) = 1, Cov = 0 -> a: 2500/2501
    assert across["a"] == pytest.approx(2500 / 2501)


def test_correlated_components_shares_add_up():
    rng = np.random.default_rng(0)
    a = rng.normal(size=400)
    frame = pd.DataFrame({"step": np.repeat(np.arange(20), 20), "a": a, "b": a * 0.5 + rng.normal(size=400),
                          "c": rng.normal(size=400)})
    shares = rewards.contribution_shares(frame, {"a": 1.0, "b": 2.0, "c": 0.5}, within_step=True)
    assert sum(shares.values()) == pytest.approx(1.0)


def test_weight_search_finds_smallest_relative_change():
    # independent components with variances 1 (boundary) and 1 (format); weights 1 and 3:
    # boundary share = 1 / (1 + 9) = 0.1. Raising boundary to x: x^2/(x^2+9) >= 0.4 -> x >= 2.449 (+145%).
    # Lowering format to y: 1/(1+y^2) >= 0.4 -> y <= 1.2247 (-59%), ratio y/1 < 3 -> the smaller change.
    cov = np.eye(2)
    change = whatif.search_boundary_weight(cov, ["boundary", "format"], {"boundary": 1.0, "format": 3.0},
                                           "boundary", 0.40, 3.0, "format")
    assert change.key == "format"
    assert change.to <= 1.2247 and change.to > 1.2247 - 3 * 0.05
    assert change.shares["boundary"] >= 0.40


def test_series_stats_trend_and_swing():
    steps = np.arange(100, dtype=float)
    st = rewards.series_stats("x", steps, steps / 100)
    assert st.rho_step == pytest.approx(1.0)
    assert st.first == pytest.approx(np.mean(np.arange(10) / 100))
    assert st.last == pytest.approx(np.mean(np.arange(90, 100) / 100))
