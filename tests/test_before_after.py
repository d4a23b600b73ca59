"""Did the change help? (findings-v4.md, the seeds end to end): `triage compare BEFORE AFTER`, per round and per
calibration window, the `compare_rounds` tool and `ask "did my change help?"` against the scripted server."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from tests.conftest import SAMPLES, cli
from tests.scripted_server import ScriptedServer, stream_chunks, tool_call
from triage_agent import before_after
from triage_agent.agent import tools
from triage_agent.analysis import before_after as ba
from triage_agent.findings.facts import resolve
from triage_agent.runs.load import load_run


def facts(name):
    return resolve(load_run(SAMPLES / name))


def rows(doc):
    return {r["quantity"]: r for r in doc["steps"][0]["rows"]}


def test_the_adjustment_that_helped(tmp_path):
    # boundary_collapse -> healthy: the seed's adjustments (easy 0.4 -> 1.0, format 1.5 -> 0.2, boundary 0.5 -> 1.0)
    code, out, _ = cli("compare", str(SAMPLES / "boundary_collapse"), str(SAMPLES / "healthy"), "--json")
    assert code == 0
    doc = json.loads(out)["before_after"]
    assert doc["summary"].startswith("A (before) → B (after): it helped: 4 improved")
    got = rows(doc)
    hb = pd.read_json(SAMPLES / "boundary_collapse/round_3/selector/reward_history.jsonl", lines=True)["boundary"]
    ha = pd.read_csv(SAMPLES / "healthy/selector_round3/reward_history.csv")["boundary"]
    mean = got["boundary reward mean"]
    assert (mean["before"], mean["after"]) == (round(hb.mean(), 4), round(ha.mean(), 4))
    assert mean["direction"] == "up" and mean["verdict"] == "improved"
    var = got["boundary reward variance"]
    # shown to 4 decimals with at least 3 significant digits (stats.rnd): 0.00832, not 0.0083
    assert (var["before"], var["after"]) == (pytest.approx(hb.var(ddof=0), rel=1e-3),
                                             pytest.approx(ha.var(ddof=0), rel=1e-3))
    assert var["direction"] == "down" and var["verdict"] == "improved"
    band = got["post-filter band share"]
    assert band["before"] == 0.0 and 0.25 <= band["after"] <= 0.40 and band["verdict"] == "improved"
    gen = got["generator accuracy (last 10% of steps)"]
    ga = pd.read_json(SAMPLES / "healthy/generator_round3/reward_history.jsonl", lines=True)["accuracy"]
    assert gen["after"] == round(ga.tail(30).mean(), 4) and gen["direction"] == "toward 0.5"
    code, out, _ = cli("compare", str(SAMPLES / "boundary_collapse"), str(SAMPLES / "healthy"))
    assert code == 0
    assert out.index("Did the change help? A (before) → B (after): it helped") < out.index("Config keys that differ")


def test_the_adjustment_that_did_not_help():
    # the other way round: every quantity moves the wrong way
    doc = before_after.runs(facts("healthy"), facts("boundary_collapse")).document()
    assert doc["summary"].startswith("A (before) → B (after): it did not help: 4 worse")
    assert {r["verdict"] for r in doc["steps"][0]["rows"]} == {"worse"}


def test_calibration_runs_helped_and_did_not():
    helped = before_after.runs(facts("reward_hacking"), facts("calibration_healthy"))
    got = {r.quantity: r for r in helped.steps[0].rows}
    fail = got["high-score failure share (score >= 0.80)"]
    s = pd.read_parquet(SAMPLES / "calibration_healthy/eval/solver_scores.parquet")
    high = s[s["score"] >= 0.8]
    assert fail.after == pytest.approx((~high["gold_pass"]).mean())
    assert fail.verdict == "improved" and fail.direction == "down"
    corr = got["proxy reward vs gold correlation (eval steps)"]
    e = pd.read_csv(SAMPLES / "calibration_healthy/eval/eval_history.csv")
    assert corr.after == pytest.approx(np.corrcoef(e["proxy_reward"], e["gold_pass_rate"])[0, 1])
    assert corr.verdict == "improved"
    worse = before_after.runs(facts("calibration_healthy"), facts("reward_hacking"))
    assert "did not help" in worse.summary


def test_noise_decides_unchanged():
    flat = np.tile([0.4, 0.6], 50)  # mean 0.5, step-to-step scatter 0.2 / sqrt 2
    se = np.diff(flat).std() / math.sqrt(2) / math.sqrt(100)
    assert ba.mean(flat).se == pytest.approx(se)
    near = ba.judge("m", ba.mean(flat), ba.mean(flat + 2.5 * se), ba.Direction("up"), 2.0, "x")
    far = ba.judge("m", ba.mean(flat), ba.mean(flat + 3.0 * se), ba.Direction("up"), 2.0, "x")
    assert near.verdict == "unchanged within noise"  # 2.5 se up; the difference's se is sqrt 2 se: 1.77 of it
    assert far.verdict == "improved"  # 3.0 se up: 2.12 standard errors of the difference
    assert ba.judge("m", ba.mean(flat), ba.mean(flat - 3.0 * se), ba.Direction("up"), 2.0, "x").verdict == "worse"


def test_adjacent_rounds_inside_one_run():
    code, out, _ = cli("compare", str(SAMPLES / "boundary_collapse"), "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["kind"] == "rounds"
    assert [(s["before"], s["after"]) for s in doc["steps"]] == [("round 1", "round 3"), ("round 1", "round 2"),
                                                                ("round 2", "round 3")]
    # the oscillating boundary reward does not move between rounds: unchanged within noise
    for s in doc["steps"]:
        assert rows({"steps": [s]})["boundary reward mean"]["verdict"] == "unchanged within noise"


def test_windows_between_calibration_events():
    r = before_after.within(facts("reward_hacking"))
    assert r.kind == "windows"
    assert r.steps[0].before == "steps start-500" and r.steps[0].after == "steps 7500-end"
    s = pd.read_parquet(SAMPLES / "reward_hacking/eval/solver_scores.parquet")
    first = s[s["step"] < 500]
    row = next(x for x in r.steps[0].rows if x.quantity.startswith("solver score vs gold"))
    assert row.before == pytest.approx(np.corrcoef(first["score"], first["gold_pass"].astype(float))[0, 1])
    assert row.n[0] == len(first)


def test_one_run_without_rounds_is_refused_in_one_line():
    code, _, err = cli("compare", str(SAMPLES / "trl_healthy"))
    assert code == 2 and "Traceback" not in err and "BEFORE AFTER" in err


def test_compare_rounds_tool_with_a_vs_run():
    after = facts("healthy")
    after.peers = [facts("boundary_collapse")]
    out = tools.call(after, "compare_rounds", {}).output
    assert out["summary"].startswith("A (before) → B (after): it helped")
    assert out["runs"]["runs"] == {"before": after.peers[0].run.where, "after": after.run.where}
    assert out["within_run"]["kind"] == "rounds"
    assert "compare_rounds" in tools.available(after) and "compare_rounds" not in tools.available(facts("trl_healthy"))


def test_ask_did_my_change_help_answers_from_compare_rounds(env):
    call = tool_call("compare_rounds", "{}", "h1")
    script = [{"stream": stream_chunks(tool_calls=[call])},
              {"stream": stream_chunks("Yes: the boundary mean rose and its variance fell.")}]
    with ScriptedServer(script) as srv:
        code, out, _ = cli("ask", str(SAMPLES / "healthy"), "did my change help?", "--vs",
                           str(SAMPLES / "boundary_collapse"), "--base-url", srv.base_url, "--model", "m",
                           "--no-save")
    assert code == 0 and "boundary mean rose" in out
    assert any(t["function"]["name"] == "compare_rounds" for t in srv.requests[0]["tools"])
    tool_msg = next(m for m in srv.requests[1]["messages"] if m["role"] == "tool")
    sent = json.loads(tool_msg["content"])
    assert sent["summary"].startswith("A (before) → B (after): it helped: 4 improved")
    verdicts = {r["quantity"]: r["verdict"] for r in sent["runs"]["steps"][0]["rows"]}
    assert verdicts["boundary reward variance"] == "improved"
