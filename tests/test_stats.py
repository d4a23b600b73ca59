import math

import numpy as np
import pytest

from triage_agent.analysis import stats
from triage_agent.analysis.rollouts import reliability


def test_swing_ratio_by_hand():
    # diffs |1-0|,|0-1|,|1-0|,|0-1| -> mean 1; p95-p5 of [0,1,0,1,0] = 1-0 = 1
    assert stats.swing_ratio([0, 1, 0, 1, 0]) == pytest.approx(1.0)
    # a straight line 0..10: mean |diff| = 1; p5 = 0.5, p95 = 9.5 (numpy linear) -> 1/9
    assert stats.swing_ratio(list(range(11))) == pytest.approx(1 / 9)


def test_spearman_ties_and_monotone():
    assert stats.spearman([1, 2, 3, 4], [10, 20, 30, 1000]) == pytest.approx(1.0)
    assert stats.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # ranks x: 1,2,3,4 ; y = [1,1,2,2] -> ranks 1.5,1.5,3.5,3.5 ; pearson = 0.894427...
    assert stats.spearman([1, 2, 3, 4], [1, 1, 2, 2]) == pytest.approx(2 / math.sqrt(5))
    assert stats.spearman([1, 2, 3], [5, 5, 5]) is None


def test_tail_and_histogram():
    assert list(stats.tail(range(10), 0.2)) == [8, 9]
    assert list(stats.tail(range(3), 0.1)) == [2]  # at least one point
    assert stats.histogram([0.0, 0.05, 0.5, 1.0], bins=10) == [2, 0, 0, 0, 0, 1, 0, 0, 0, 1]


def test_rollout_reliability_by_hand():
    # n = 4: only k = 2 (0.5) is inside [0.4, 0.6]; P = C(4,2)/16 = 6/16
    rel = reliability(4, (0.4, 0.6))
    assert rel.standard_error == pytest.approx(0.25)
    assert rel.p_outside_band == pytest.approx(1 - 6 / 16)
    assert rel.attainable == [0.5]
    # n = 10: k = 4, 5, 6 inside: (210 + 252 + 210) / 1024
    assert reliability(10, (0.4, 0.6)).p_outside_band == pytest.approx(1 - 672 / 1024)
    # n = 3: no attainable value inside the band
    assert reliability(3, (0.4, 0.6)).p_outside_band == pytest.approx(1.0)


def test_downsample_bucket_means():
    assert stats.downsample(np.arange(8), 4) == [0.5, 2.5, 4.5, 6.5]


def test_rank_matches_pandas_average_ranks_with_and_without_ties():
    import pandas as pd
    from hypothesis import given
    from hypothesis import strategies as st

    from triage_agent.analysis.stats import rank

    @given(st.lists(st.one_of(st.integers(-3, 3).map(float), st.floats(-1e6, 1e6, allow_nan=False)), max_size=80))
    def check(values: list[float]) -> None:
        a = np.array(values, dtype=float)
        assert np.allclose(rank(a), pd.Series(a).rank(method="average").to_numpy(dtype=float))

    check()


def _spikes_with_heaps(values, ratio, floor, min_history):
    """The former running median (two heaps), kept as the reference for the vectorised one."""
    import heapq

    low, high, out = [], [], []
    for i, v in enumerate(values.astype(float)):
        if i >= min_history:
            median = -low[0] if len(low) > len(high) else (-low[0] + high[0]) / 2
            if v > ratio * median and v > floor:
                out.append(i)
        if not low or v <= -low[0]:
            heapq.heappush(low, -v)
        else:
            heapq.heappush(high, v)
        if len(low) > len(high) + 1:
            heapq.heappush(high, -heapq.heappop(low))
        elif len(high) > len(low):
            heapq.heappush(low, -heapq.heappop(high))
    return out


@pytest.mark.parametrize("seed", range(20))
def test_spikes_agree_with_the_two_heap_running_median(seed):
    from triage_agent.analysis.trends import spikes_and_medians

    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 400))
    values = np.abs(rng.standard_cauchy(n)) if seed % 2 else rng.integers(0, 5, n).astype(float)  # ties too
    for ratio, floor, history in ((3.0, 0.5, 10), (1.5, 0.0, 1), (5.0, 2.0, 50)):
        assert spikes_and_medians(values, ratio, floor, history)[0] == _spikes_with_heaps(values, ratio, floor, history)


def test_spikes_worked_example():
    from triage_agent.analysis.trends import spikes_and_medians

    # medians before index 3: of [1, 1, 2] = 1; index 3 (10) > 3 x 1; index 4: median of [1, 1, 2, 10] = 1.5,
    # 4 < 4.5; index 5: median of [1, 1, 2, 10, 4] = 2, 7 > 6
    assert spikes_and_medians(np.array([1.0, 1.0, 2.0, 10.0, 4.0, 7.0]), 3.0, 0.5, 3)[0] == [3, 5]


@pytest.mark.parametrize("seed", range(10))
def test_running_medians_are_the_prefix_medians_without_zeros(seed):
    """grad_norm_spike reads each spike's median from spikes_and_medians: it must be exactly what np.median of
    the non-zero values before the spike gives (the per-spike computation it replaced)."""
    from triage_agent.analysis.trends import spikes_and_medians

    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 400))
    values = np.abs(rng.standard_cauchy(n)) if seed % 2 else rng.integers(0, 5, n).astype(float)  # ties, zeros
    values[rng.integers(0, n, n // 5)] = 0.0
    idx, medians = spikes_and_medians(values, 1.5, 0.0, 3, skip_zero=True)
    assert idx
    for i in range(n):
        prior = values[:i][values[:i] != 0.0]
        assert (np.isnan(medians[i]) if len(prior) == 0 else medians[i] == np.median(prior)), i


def test_running_medians_worked_example():
    from triage_agent.analysis.trends import spikes_and_medians

    # zeros skipped: before index 4 the values are [2, 4] -> 3; before index 5, [2, 4, 30] -> 4; 30 > 3 x 3
    idx, medians = spikes_and_medians(np.array([2.0, 0.0, 4.0, 0.0, 30.0, 5.0]), 3.0, 0.0, 2, skip_zero=True)
    assert idx == [4]
    assert medians[4] == 3.0 and medians[5] == 4.0 and np.isnan(medians[0])


@pytest.mark.parametrize("seed", range(30))
def test_expanding_median_in_a_sorted_list_is_pandas_expanding_median(seed, monkeypatch):
    import pandas as pd

    from triage_agent.analysis import trends

    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 300))
    values = rng.choice([rng.standard_normal(n), rng.integers(-3, 3, n).astype(float)], axis=0) if n else np.zeros(0)
    for special in (np.nan, np.inf, -np.inf, 0.0, -0.0):  # NaN is skipped; infinities and signed zeros are values
        values[rng.integers(0, max(n, 1), n // 8)] = special
    want = pd.Series(values, dtype=float).expanding().median().to_numpy()
    got = trends.expanding_median(values)
    assert np.array_equal(got, want, equal_nan=True), (values, got, want)
    monkeypatch.setattr(trends, "SHORT_SERIES", 0)  # the long way: pandas itself
    assert np.array_equal(trends.expanding_median(values), want, equal_nan=True)
