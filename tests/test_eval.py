"""`triage eval` scores three scripted personalities in the right order, with figures worked out by hand."""

from __future__ import annotations

import io
import json
import re
import shutil

import pytest
from rich.console import Console

from tests.conftest import SAMPLES
from tests.scripted_server import ScriptedServer, completion
from triage_agent.cli import main
from triage_agent.commands.eval import builtin_suite

SUITE = {"few_rollouts": ["rollouts.too_few"], "healthy": [], "trl_oom_crash": ["log.crash"]}


def _prompt(body) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def good(body):
    """Cites the deterministic medium/high findings and proposes the rules' own checked changes."""
    text = _prompt(body)
    findings = json.loads(re.search(r"## Deterministic findings\n(.*?)\n\n## ", text, re.S).group(1))["findings"]
    changes = json.loads(re.search(r"re-computed on this run\)\n(\[.*?\])", text, re.S).group(1))
    ids = [f["id"] for f in findings if f["severity"] in ("high", "medium")]
    return completion(json.dumps({
        "diagnosis": [{"cause": "as found", "findings": ids, "evidence": "the numbers", "confidence": 0.8}] if ids else [],
        "adjustments": [{"file": c["file"], "key": c["key"], "to": c["to"], "rationale": "checked"} for c in changes]}))


def wrong(body):
    """Cites findings that are not there and proposes a change out of range."""
    return completion(json.dumps({
        "diagnosis": [{"cause": "made up", "findings": ["made.up_finding", "reward.flat"], "evidence": "", "confidence": 0.9}],
        "adjustments": [{"file": "configs/filter_config.yaml", "key": "filter.easy_threshold", "to": 7,
                         "rationale": "more"}]}))


def broken(body):
    return completion("I looked at the run and it seems fine to me.")


def personality(reply):
    """A server that answers every request with `reply(request)` (the model's name picks the personality)."""
    return [reply] * 200


@pytest.fixture
def suite(tmp_path):
    for name, ids in SUITE.items():
        shutil.copytree(SAMPLES / name, tmp_path / "suite" / name)
        (tmp_path / "suite" / name / "expected.json").write_text(json.dumps({"findings": ids}))
    return tmp_path / "suite"


def run_eval(suite, tmp_path, monkeypatch, reply, model):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    out, err = io.StringIO(), io.StringIO()
    with ScriptedServer(personality(reply), models=[model],
                        leftover_ok="a personality answers every request; the suite decides how many") as srv:
        code = main(["eval", "--models", model, "--suite", str(suite), "--json", "--base-url", srv.base_url],
                    stdout=Console(file=out), stderr=Console(file=err))
        requests = srv.requests
    assert code == 0, err.getvalue()
    return json.loads(out.getvalue())["models"][0], requests


def test_three_personalities_score_in_order_with_hand_figures(suite, tmp_path, monkeypatch):
    g, g_requests = run_eval(suite, tmp_path, monkeypatch, good, "good")
    w, _ = run_eval(suite, tmp_path, monkeypatch, wrong, "wrong")
    b, _ = run_eval(suite, tmp_path, monkeypatch, broken, "broken")
    assert g["score"] > w["score"] > b["score"]
    # good: cites rollouts.too_few and log.crash (2 of 2 planted, 2 cited), nothing on the healthy run; the rules'
    # changes for few_rollouts (rollouts_per_question and boundary_rollouts, both meeting their target) pass:
    # score = 0.4 x 1 + 0.3 x 1 + 0.2 x 1 + 0.1 x (1 - 0) = 1.0
    assert (g["recall"], g["precision"], g["changes_pass_and_meet"], g["fallback_share"]) == (1.0, 1.0, 1.0, 0.0)
    assert g["proposed"] == 2 and g["score"] == 1.0
    few = next(r for r in g["per_run"] if r["run"] == "few_rollouts")
    assert few["cited"] == ["rollouts.too_few"] and few["met"] == 2 and few["requests"] == 1
    # wrong: 2 ids cited on each of 3 runs, none planted: recall 0/2, precision 0/6; its one change per run is out
    # of range (easy_threshold 7), rejected 3 times: score = 0.1 x (1 - 0) = 0.1
    assert (w["recall"], w["precision"], w["changes_pass_and_meet"], w["rejected"]) == (0.0, 0.0, 0.0, 3)
    assert w["cited"] == 6 and w["score"] == 0.1
    # broken: never valid JSON, repaired once per run, then the offline report: score 0
    assert (b["fallback_share"], b["repair_share"], b["score"]) == (1.0, 1.0, 0.0)
    assert all(r["fallback"] for r in b["per_run"])
    # temperature 0 is asked for; transcripts are kept for reading a bad answer
    assert all(r.get("temperature") == 0.0 for r in g_requests)
    assert len(list((tmp_path / "state" / "triage" / "transcripts").glob("*.json"))) == 9


def test_table_and_html(suite, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    out = io.StringIO()
    page = tmp_path / "eval.html"
    with ScriptedServer(personality(good), models=["good"],
                        leftover_ok="a personality answers every request; the suite decides how many") as srv:
        code = main(["eval", "--models", "good", "--suite", str(suite), "--base-url", srv.base_url, "--html", str(page),
                     "--no-save"], stdout=Console(file=out, width=200), stderr=Console(file=io.StringIO()))
    assert code == 0
    text = out.getvalue()
    assert "good" in text and "1.00" in text and "score = 0.4 x recall" in text
    # the overall table (a header and one row per model), then one row per paradigm of the suite's runs
    from triage_agent.runs.load import load_run

    paradigms = {load_run(p).paradigm for p in suite.iterdir()}
    assert page.read_text().count("<tr>") == 2 + 1 + len(paradigms)
    assert "per paradigm" in text
    assert not (tmp_path / "state" / "triage" / "transcripts").exists()  # --no-save


def test_builtin_suite_covers_every_paradigm_with_a_planted_fault(tmp_path):
    runs = builtin_suite(tmp_path)
    names = [n for n, _, _ in runs]
    assert len(runs) >= 12 and sum(1 for _, _, ids in runs if not ids) >= 2
    assert {"boundary_collapse", "reward_hacking", "trl_entropy_collapse", "verl_kl_explosion", "trl_oom_crash"} <= set(names)
    from triage_agent.commands.inspect import inspect

    for name, path, ids in runs:  # the suite's answer key is what the rules find on it
        assert {f.id for f in inspect(path).findings if f.at_least("medium")} == set(ids), name
    # every paradigm with sample runs is in it, each with a planted fault
    from triage_agent.runs.load import load_run

    planted_by_paradigm: dict[str, int] = {}
    for _, path, ids in runs:
        p = load_run(path).paradigm
        planted_by_paradigm[p] = planted_by_paradigm.get(p, 0) + len(ids)
    assert {"policy_gradient", "preference", "sft", "selector_generator", "solver_calibration"} <= set(planted_by_paradigm)
    assert all(n > 0 for n in planted_by_paradigm.values())


def test_scores_per_paradigm_with_hand_figures():
    from triage_agent.commands.eval import ModelScore, RunScore

    m = ModelScore("m", [
        RunScore("a", ["x.one", "x.two"], cited=["x.one"], proposed=2, met=1, paradigm="policy_gradient"),
        RunScore("b", [], cited=["y.made_up"], paradigm="preference"),
        RunScore("c", ["z.one"], cited=["z.one"], proposed=1, met=1, paradigm="policy_gradient"),
        RunScore("d", ["w.one"], fallback=True, paradigm="preference")])
    groups = m.by_paradigm()
    assert list(groups) == ["policy_gradient", "preference"]
    pg, pref = groups["policy_gradient"], groups["preference"]
    # policy_gradient: 2 of 3 planted cited, 2 of 2 cited correct, 2 of 3 changes meet, no fallback
    assert (pg.recall, pg.precision, pg.changes, pg.fallback_share) == (2 / 3, 1.0, 2 / 3, 0.0)
    assert pg.score == pytest.approx(0.4 * 2 / 3 + 0.3 + 0.2 * 2 / 3 + 0.1)
    # preference: 0 of 1 planted, 0 of 1 cited, no changes, 1 of 2 fell back
    assert pref.score == pytest.approx(0.1 * 0.5)
    # overall: 2 of 4 planted, 2 of 3 cited, 2 of 3 changes, 1 of 4 fell back
    assert m.score == pytest.approx(0.4 * 0.5 + 0.3 * 2 / 3 + 0.2 * 2 / 3 + 0.1 * 0.75)
    summary = m.summary()
    assert summary["paradigms"]["preference"]["runs"] == 2 and "paradigms" not in summary["paradigms"]["preference"]


def test_eval_json_groups_the_suite_by_each_runs_paradigm(suite, tmp_path, monkeypatch):
    from triage_agent.runs.load import load_run

    g, _ = run_eval(suite, tmp_path, monkeypatch, good, "good")
    expected: dict[str, int] = {}
    for name in SUITE:
        p = load_run(suite / name).paradigm
        expected[p] = expected.get(p, 0) + 1
    assert {p: s["runs"] for p, s in g["paradigms"].items()} == expected
    assert all(r["paradigm"] == load_run(suite / r["run"]).paradigm for r in g["per_run"])
    # the good personality cites every planted id: full recall wherever something is planted
    assert all(s["recall"] == (1.0 if s["planted"] else 0.0) and s["fallback_share"] == 0.0
               for s in g["paradigms"].values())
