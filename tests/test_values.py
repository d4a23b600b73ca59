"""values.parse: its fast paths (float() first, numpy's scalar repr) give what the general reader gives."""

import math

from hypothesis import given
from hypothesis import strategies as st

from triage_agent.runs.values import _parse_general, parse

number_text = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.floats(width=32).map(lambda f: f"{f:.6g}"),
    st.integers(-10**30, 10**30).map(str),
    st.sampled_from(["nan", "NaN", "-nan", "inf", "-Infinity", "+inf", "1_000", "1e-06", ".5", "5.", "45%", "'0.5'",
                     "[1., 0.]", "tensor(0.5, device='cuda:0')", "0.5, dtype=float32", "", "abc", "0x10", "1e"]),
    st.text(max_size=12),
)


def same(a: float | None, b: float | None) -> bool:
    return a == b or (a is not None and b is not None and math.isnan(a) and math.isnan(b))


@given(number_text, st.sampled_from(["", " ", "\t"]), st.sampled_from(["", " ", "\n"]),
       st.sampled_from(["{}", "np.float64({})", "np.float32({})", "np.float64({}", "tensor({})", "np.float64( {} )"]))
def test_the_fast_paths_read_what_the_general_reader_reads(text, lead, trail, shape):
    raw = lead + shape.format(text) + trail
    assert same(parse(raw), _parse_general(raw)), raw


def test_worked_examples():
    assert parse("np.float64(0.715511)") == 0.715511
    assert parse(" 1e-06 ") == 1e-06
    assert parse("45%") == 0.45
    assert parse("tensor([1., 0., 0.5])") == 0.5
    assert math.isnan(parse("np.float64(nan)"))
    assert parse("np.float64(abc)") is None and parse("step") is None


@given(st.lists(st.sampled_from(["\x1b[36m", "\x1b[0m", "(TaskRunner pid=42) ", "(raylet) ", "(main pid=1, ip=1.2.3.4)",
                                 " [repeated 3x across cluster]", "step:1 - a:1", " ", "(", "x", "\x1b]0;t\x07",
                                 "[repeated ", "\t"]), max_size=8))
def test_clean_strips_what_the_three_substitutions_strip(parts):
    from triage_agent.runs.console import text as logs

    text = "".join(parts)
    want = logs._RAY_REPEAT.sub("", logs._RAY_PREFIX.sub("", logs._ANSI.sub("", text)))
    assert logs.clean(text) == want
