"""Numbers keep their significant digits wherever they are shown or sent (issue 41): an lr of 1e-06 never reads
0; and the step window answers "why at step N?" with every series around a step and the findings near it."""

from __future__ import annotations

import json
import math

import pytest

from tests.conftest import SAMPLES, cli
from triage_agent import numbers
from triage_agent.agent import context, tools
from triage_agent.commands.inspect import inspect, inspect_window
from triage_agent.errors import BadInput
from triage_agent.report import Report


def _rows(n: int = 40, lr: float = 1e-6) -> list[dict]:
    # entropy 1.0 for 20 steps, then 0.05 (a collapse at step 21); lr constant; kl a small, varying number
    return [{"step": i, "data": {"actor/lr": lr, "actor/entropy": 1.0 if i <= 20 else 0.05,
                                 "actor/kl_loss": 0.00012 * i, "critic/score/mean": 0.5 + 0.001 * i}}
            for i in range(1, n + 1)]


def _run(make_run, rows):
    return make_run({"metrics.jsonl": "".join(json.dumps(r) + "\n" for r in rows)})


@pytest.mark.parametrize(("value", "shown"), [
    (1e-06, "1e-06"), (1.5e-05, "1.5e-05"), (0.0012345, "0.001234"), (0.5, "0.5"), (-0.25, "-0.25"),
    (12.3456, "12.35"), (123.456, "123.5"), (4980.2, "4,980"), (0.0, "0"), (-0.0, "0"), (float("nan"), "nan")])
def test_text_keeps_significant_digits(value, shown):
    assert numbers.text(value) == shown


def test_rounding_never_makes_a_nonzero_zero():
    for v in (1e-6, -3e-9, 2.5e-12, 7e-300):
        assert numbers.significant(v) == v  # one significant digit: exact
        assert numbers.rounded(v, 4) == v
        assert numbers.sent(v) != 0
    assert numbers.significant(0.123456) == 0.1235 and numbers.significant(12345.678) == 12346.0
    assert numbers.rounded(0.123456, 3) == 0.123 and numbers.rounded(0.000123456, 3) == 0.000123
    assert numbers.significant(float("inf")) is None and numbers.rounded(None) is None


def test_a_small_learning_rate_reaches_the_model_tools_and_terminal(make_run):
    rep = inspect(_run(make_run, _rows()))
    assert isinstance(rep, Report)
    got = tools.call(rep.facts, "trainer_metrics", {"series": "lr"}).output
    assert got is not None
    assert got["first"] == 1e-06 and got["last"] == 1e-06 and got["head_mean"] == 1e-06  # was 0.0
    assert set(got["curve_40pt"]) == {1e-06}
    every = tools.call(rep.facts, "trainer_metrics", {}).output
    assert every is not None and every["series"]["lr"]["min"] == 1e-06
    assert context.series_table(rep)["series"]["lr"]["tail_mean"] == 1e-06  # the first message
    code, out, _ = cli("inspect", str(rep.run.root), width=200)
    assert code == 0
    lr_row = next(line for line in out.splitlines() if line.strip("│ ").startswith("lr "))
    assert "1e-06 → 1e-06" in lr_row


def test_curves_carry_their_step_axis(make_run):
    rep = inspect(_run(make_run, _rows(n=80)))
    assert isinstance(rep, Report)
    got = tools.call(rep.facts, "trainer_metrics", {"series": "entropy"}).output
    assert got is not None
    # 80 steps in 40 buckets of 2: the buckets start at steps 1, 3, 5, ..., 79
    assert got["curve_steps"] == list(range(1, 80, 2))
    assert got["curve_40pt"][:10] == [1.0] * 10 and got["curve_40pt"][10:] == [0.05] * 30  # steps 1-20 at 1.0


def test_a_constant_series_is_drawn_around_its_value():
    pytest.importorskip("plotly")
    from triage_agent.render import plots

    fig = plots.line_chart("lr", {"lr": ([1, 2, 3], [1e-6, 1e-6, 1e-6])})
    lo, hi = fig.layout.yaxis.range
    assert 0 < lo < 1e-6 < hi < 2e-6  # Plotly's own range for a constant is [v - 1, v + 1]: the line at 0
    varying = plots.line_chart("kl", {"kl": ([1, 2, 3], [1e-6, 2e-6, 3e-6])})
    assert varying.layout.yaxis.range is None  # Plotly's autorange is right for a varying series


def test_the_step_window_gives_every_series_and_the_findings_near(make_run):
    root = _run(make_run, _rows())
    w = inspect_window(root, 21, 2)
    assert w.steps == [19, 20, 21, 22, 23] and w.logged
    by = {s.name: s.values for s in w.series}
    assert by["entropy"] == [1.0, 1.0, 0.05, 0.05, 0.05]
    assert by["lr"] == [1e-6] * 5
    assert [round(v, 6) for v in by["kl"]] == [0.00228, 0.0024, 0.00252, 0.00264, 0.00276]  # 0.00012 x step
    rep = inspect(root)
    assert isinstance(rep, Report)
    near = {f.id for f in rep.findings if f.onset_step is not None and 19 <= f.onset_step <= 23}
    assert {f.id for f in w.findings} == near
    assert all(f.onset_step is not None and 19 <= f.onset_step <= 23 for f in w.findings)
    far = inspect_window(root, 3, 1)
    assert far.steps == [2, 3, 4] and {f.id for f in far.findings} == {
        f.id for f in rep.findings if f.onset_step is not None and 2 <= f.onset_step <= 4}


def test_a_step_that_was_not_logged_gets_the_logged_steps_around_it(make_run):
    rows = [r for r in _rows() if r["step"] % 10 == 0]  # steps 10, 20, 30, 40
    w = inspect_window(_run(make_run, rows), 25, 1)
    assert w.steps == [20, 30] and not w.logged
    edge = inspect_window(_run(make_run, rows), 1000, 2)
    assert edge.steps == [30, 40]


def test_the_window_is_bounded_and_refuses_in_one_line(make_run):
    root = _run(make_run, _rows())
    with pytest.raises(BadInput):
        inspect_window(root, 5, 51)
    code, _, err = cli("inspect", str(root), "--at", "5", "--window", "999")
    assert code == 2 and len(err.strip().splitlines()) == 1
    code, _, err = cli("inspect", str(SAMPLES / "boundary_collapse"), "--at", "5")
    assert code == 2 and "no per-step metrics" in err and len(err.strip().splitlines()) == 1


def test_the_window_tool_and_the_cli_agree(make_run):
    root = _run(make_run, _rows())
    rep = inspect(root)
    assert isinstance(rep, Report)
    got = tools.call(rep.facts, "series_window", {"around_step": 21, "k": 2}).output
    assert got is not None and got["steps"] == [19, 20, 21, 22, 23]
    assert got["series"]["lr"]["values"] == [1e-06] * 5
    assert tools.call(rep.facts, "series_window", {"around_step": 21, "k": 21}).error is not None
    code, out, _ = cli("inspect", str(root), "--at", "21", "--window", "2", "--json")
    assert code == 0 and json.loads(out)["series"] == got["series"]
    code, out, _ = cli("inspect", str(root), "--at", "21", "--window", "2", width=200)
    assert code == 0 and "▶21" in out and "1e-06" in out
    assert not any(math.isnan(v) for v in got["series"]["entropy"]["values"])


def test_fail_on_offers_exactly_the_severities_findings_have(make_run):
    from tests.conftest import SAMPLES
    from triage_agent.findings.model import RAISED

    seen = set()
    for run in sorted(p for p in SAMPLES.iterdir() if p.is_dir()):
        rep = inspect(run)
        seen |= {f.severity for f in getattr(rep, "findings", [])}
    assert seen == set(RAISED) == {"high", "medium", "info"}  # what the rules raise over the samples
    with pytest.raises(SystemExit) as exited:  # no rule raises `low`: not offered (argparse's usage error)
        cli("inspect", str(SAMPLES / "trl_healthy"), "--fail-on", "low")
    assert exited.value.code == 2
    rep = inspect(SAMPLES / "trl_healthy")
    assert isinstance(rep, Report)
    code, _, _ = cli("inspect", str(SAMPLES / "trl_healthy"), "--fail-on", "info")
    assert code == (1 if rep.findings else 0)
