"""The agent against a scripted OpenAI-compatible server over real HTTP on 127.0.0.1."""

import io
import json
import re

import pytest

from tests.conftest import SAMPLES, cli
from tests.scripted_server import ScriptedServer, completion, error, stream_chunks, tool_call
from triage_agent.agent import tools
from triage_agent.commands.ask import ask
from triage_agent.commands.report import report
from triage_agent.errors import TriageError
from triage_agent.findings.facts import resolve
from triage_agent.llm.settings import Settings

KEY = "sk-test-SECRET-0123456789"
RUN = SAMPLES / "boundary_collapse"

GOOD_ANSWER = {
    "diagnosis": [{"cause": "The filter starves the band and format outweighs boundary.",
                   "findings": ["filter.boundary_starved", "reward.boundary_suppressed", "not.a.finding"],
                   "evidence": "share after 0.0; boundary share 0.04", "confidence": 0.8}],
    "adjustments": [
        {"file": "configs/filter_config.yaml", "key": "filter.easy_threshold", "to": 0.45, "rationale": "loosen"},
        {"file": "configs/train_config.yaml", "key": "reward.weights.format", "to": 0.3, "rationale": "rebalance"},
        {"file": "train.py", "key": "lr", "to": 1e-5, "rationale": "faster"},
        {"file": "configs/filter_config.yaml", "key": "filter.unsolvable_threshold", "to": 1.5, "rationale": "x"},
        {"file": "configs/filter_config.yaml", "key": "filter.nope", "to": 0.5, "rationale": "x"}]}


def settings(server, **kw):
    return Settings(base_url=server.base_url, api_key=KEY, model="scripted-model", retry_wait=0.01, **kw)


def test_full_report_loop_through_the_cli(env, tmp_path):
    script = [completion(tool_calls=[tool_call("filter_audit", "{}", "c1"), tool_call("reward_balance", "{}", "c2")]),
              completion(json.dumps(GOOD_ANSWER))]
    with ScriptedServer(script) as srv:
        env.setenv("OPENAI_BASE_URL", srv.base_url)
        env.setenv("OPENAI_API_KEY", KEY)
        env.setenv("TRIAGE_MODEL", "scripted-model")
        code, out, err = cli("report", str(RUN), "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["source"]["kind"] == "model" and doc["source"]["requests"] == 2
    assert doc["source"]["model"] == "scripted-model" and doc["source"]["endpoint"].startswith("127.0.0.1:")
    assert doc["diagnosis"][0]["findings"] == ["filter.boundary_starved", "reward.boundary_suppressed"]
    adj = {a["key"]: a for a in doc["adjustments"]}
    assert adj["filter.easy_threshold"]["from"] == 0.4
    # independently: read the filter table and apply easy 0.45 / unsolvable 0.0 by hand
    import pandas as pd

    acc = pd.read_json(RUN / "data" / "filter_stats.jsonl", lines=True)["accuracy"]
    kept = acc[(acc > 0.0) & (acc < 0.45)]
    in_band = ((kept >= 0.4) & (kept <= 0.6)).sum()
    now = acc[(acc > 0.0) & (acc < 0.4)]  # the band questions the current thresholds keep: none
    assert adj["filter.easy_threshold"]["predicted"] == {"band_share_after_filter": round(in_band / len(kept), 3),
                                                         "kept": len(kept), "band_questions_after": in_band,
                                                         "band_questions_before": ((now >= 0.4) & (now <= 0.6)).sum()}
    assert adj["filter.easy_threshold"]["meets_target"] is True
    assert adj["reward.weights.format"]["predicted"]["boundary_share"] >= 0.40
    reasons = {r["key"]: r["reason"] for r in doc["rejected"]}
    assert "training code" in reasons["lr"]
    assert "0..1" in reasons["filter.unsolvable_threshold"]
    assert "no key" in reasons["filter.nope"]
    # the tools' results went back as tool messages, both in the second request
    second = srv.requests[1]["messages"]
    tool_msgs = [m for m in second if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["c1", "c2"]
    assert json.loads(tool_msgs[0]["content"])["source"] == "data/filter_stats.jsonl"
    # budget: at most 4 requests and 8,000 prompt tokens (estimated from what the server received)
    assert len(srv.requests) <= 4
    # 7,720 before issue 37 added the sample's fifth finding (boundary variance), reward_balance's variances and the
    # compare_rounds tool (its schema is sent with both requests): 8,420
    assert sum(len(json.dumps(r["messages"])) + len(json.dumps(r.get("tools", []))) for r in srv.requests) / 4 < 8500
    # the key travels only in the Authorization header
    assert all(KEY not in json.dumps(r) for r in srv.requests)
    assert {k.lower(): v for k, v in srv.headers[0].items()}["authorization"] == f"Bearer {KEY}"
    assert KEY not in out and KEY not in err
    transcripts = list((tmp_path / "state" / "triage" / "transcripts").glob("*.json"))
    assert len(transcripts) == 1 and KEY not in transcripts[0].read_text()
    assert "2 requests" in err


def test_no_endpoint_gives_offline_report_and_says_how(env):
    code, out, err = cli("report", str(RUN), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["source"] == {"kind": "offline"}
    assert "OPENAI_BASE_URL" in err


def test_dry_run_sends_nothing(env):
    with ScriptedServer([]) as srv:
        code, out, _ = cli("report", str(RUN), "--dry-run", "--base-url", srv.base_url, "--model", "m")
    assert code == 0 and srv.requests == []
    req = json.loads(out)["request"]
    assert req["model"] == "m" and req["messages"][0]["role"] == "system"
    # a selector/generator run with a filter table and no calibration data, trainer metrics or peer runs
    assert {t["function"]["name"] for t in req["tools"]} == {
        "run_overview", "list_findings", "read_config", "summarize_reward_histogram", "diff_rounds", "filter_audit",
        "reward_balance", "rollout_reliability", "generator_trajectory", "simulate_adjustment", "search_log",
        "compare_rounds"}


def test_tools_offered_and_inlined_follow_the_run_kind():
    from triage_agent.findings.facts import resolve
    from triage_agent.runs.load import load_run

    trainer = resolve(load_run(SAMPLES / "trl_entropy_collapse"))
    offered = set(tools.available(trainer))
    assert {"trainer_metrics", "read_config", "search_log"} <= offered
    assert not offered & {"filter_audit", "calibration_audit", "generator_trajectory", "reward_balance", "compare_runs"}
    assert tools.inlined(trainer) == ["read_config", "trainer_metrics"]
    selector = resolve(load_run(RUN))
    assert tools.inlined(selector) == ["read_config", "filter_audit", "reward_balance", "generator_trajectory"]
    calib = resolve(load_run(SAMPLES / "reward_hacking"))
    assert "calibration_audit" in tools.inlined(calib) and "filter_audit" not in tools.inlined(calib)


def test_429_then_success_honours_retry_after(env):
    script = [error(429, "slow down", {"Retry-After": "0"}), completion(json.dumps(GOOD_ANSWER))]
    with ScriptedServer(script) as srv:
        rep = report(RUN, settings(srv), save=False)
    assert rep.source["kind"] == "model" and len(srv.requests) == 2


def test_500s_exhaust_retries_with_one_line(env):
    with ScriptedServer([error(500, "boom")] * 4) as srv:
        rep = report(RUN, settings(srv), save=False)
    assert len(srv.requests) == 4 and "HTTP 500" in rep.model_error and "\n" not in rep.model_error
    # the rules' report is kept whole: its findings and checked changes are those of the offline report
    assert rep.source["kind"] == "rules" and rep.source["error"]["kind"] == "server"
    assert "filter.boundary_starved" in {f.id for f in rep.findings} and rep.adjustments


def test_401_fails_fast_through_cli(env):
    with ScriptedServer([error(401, "invalid key")]) as srv:
        code, out, err = cli("report", str(RUN), "--base-url", srv.base_url, "--model", "m")
    assert code == 3 and len(srv.requests) == 1
    assert "no key set" in err and "Traceback" not in err and err.strip().count("\n") == 0


def test_404_without_v1_says_check_base_url(env):
    with ScriptedServer([]) as srv:
        rep = report(RUN, Settings(base_url=srv.base_url[:-3], model="m", retry_wait=0.01), save=False)
    assert "base URL" in rep.model_error


def test_unknown_tool_and_bad_arguments_go_back_as_text(env):
    script = [completion(tool_calls=[tool_call("delete_everything", "{}", "a"),
                                     tool_call("summarize_reward_histogram", "{not json", "b"),
                                     tool_call("summarize_reward_histogram", '{"round": "selector_round9", "series": "x"}', "c"),
                                     tool_call("filter_audit", '{"verbose": true}', "d")]),
              completion(json.dumps(GOOD_ANSWER))]
    with ScriptedServer(script) as srv:
        report(RUN, settings(srv), save=False)
    msgs = {m["tool_call_id"]: m["content"] for m in srv.requests[1]["messages"] if m["role"] == "tool"}
    assert "unknown tool 'delete_everything'" in msgs["a"] and "filter_audit" in msgs["a"]
    assert "not valid JSON" in msgs["b"]
    assert "no round 'selector_round9'" in msgs["c"]
    assert "unknown argument(s) verbose" in msgs["d"]


def test_turn_limit_falls_back_to_offline(env):
    # exactly the 5 requests the limit lets through (a 6th would get the server's "script exhausted" 500)
    looping = [completion(tool_calls=[tool_call("run_overview", "{}", f"x{i}")]) for i in range(5)]
    with ScriptedServer(looping) as srv:
        rep = report(RUN, settings(srv), save=False)
    # MAX_TURNS = 6 requests, one held back for a repair; the last tool round offers no tools
    assert len(srv.requests) == 5
    assert all("tools" in r for r in srv.requests[:4]) and "tools" not in srv.requests[4]
    assert rep.source["kind"] == "offline" and rep.source["fallback"] is True
    assert any("turn limit" in n for n in rep.notes)
    assert {f.id for f in rep.findings} >= {"filter.boundary_starved"}


def test_invalid_answer_repaired_once_and_json_schema_rejection_remembered(env):
    def reject_schema(body):
        assert "response_format" in body
        return error(400, "response_format json_schema is not supported")

    script = [completion("I think the filter is the problem."), reject_schema, completion(json.dumps(GOOD_ANSWER))]
    with ScriptedServer(script) as srv:
        rep = report(RUN, settings(srv), save=False)
    assert rep.source["kind"] == "model"
    assert "response_format" not in srv.requests[2]
    assert "not a valid answer" in srv.requests[2]["messages"][-1]["content"]


def test_tools_rejected_falls_back_to_inlined_results(env):
    def reject_tools(body):
        return error(400, "tools are not supported by this model") if "tools" in body else completion("?")

    script = [reject_tools, completion("no json here"), completion(json.dumps(GOOD_ANSWER))]
    with ScriptedServer(script) as srv:
        rep = report(RUN, settings(srv), save=False)
    assert rep.source["kind"] == "model"
    assert "tools" not in srv.requests[1] and "tools" not in srv.requests[2]
    assert "cannot call tools" in srv.requests[2]["messages"][-1]["content"]


def test_arguments_as_object_leaked_calls_reasoning_and_missing_usage(env):
    script = [completion(tool_calls=[tool_call("filter_audit", {}, "o1")], reasoning_content="thinking..."),
              completion('<tool_call>{"name": "reward_balance", "arguments": {}}</tool_call>', usage=False),
              completion(json.dumps(GOOD_ANSWER), usage=False)]
    with ScriptedServer(script) as srv:
        rep = report(RUN, settings(srv), save=False)
    assert rep.source["kind"] == "model" and rep.source["usage_estimated"] is True
    assert rep.source["prompt_tokens"] > 200
    tool_msgs = [m for m in srv.requests[2]["messages"] if m["role"] == "tool"]
    assert [json.loads(m["content"])["source"] for m in tool_msgs][0] == "data/filter_stats.jsonl"
    assert "shares" in json.loads(tool_msgs[1]["content"])
    assert all("reasoning_content" not in m for m in srv.requests[1]["messages"])


def test_ask_streams_text_and_assembles_tool_call_deltas(env):
    call = tool_call("rollout_reliability", '{"rollouts": 4}', "s1")
    script = [{"stream": stream_chunks(tool_calls=[call])},
              {"stream": stream_chunks("The boundary reward oscillates because ...")}]
    seen = []
    with ScriptedServer(script) as srv:
        res = ask(RUN, "why?", settings(srv), on_text=seen.append, save=False)
    assert res.answer == "The boundary reward oscillates because ..."
    assert len(seen) > 1 and "".join(seen) == res.answer
    assert all(r["stream"] is True for r in srv.requests)
    tool_msg = next(m for m in srv.requests[1]["messages"] if m["role"] == "tool")
    assert json.loads(tool_msg["content"])["estimates"]["given"]["p_outside_band"] == 0.625


def test_ask_question_from_stdin_through_cli(env, monkeypatch):
    with ScriptedServer([{"stream": stream_chunks("Because of the filter.")}]) as srv:
        monkeypatch.setattr("sys.stdin", io.StringIO("why so low?"))
        code, out, err = cli("ask", str(RUN), "--base-url", srv.base_url, "--model", "m", "--no-save")
    assert code == 0 and out.strip() == "Because of the filter."
    assert "why so low?" in srv.requests[0]["messages"][1]["content"]


def test_every_tool_output_is_bounded_on_every_sample_run():
    for run_dir in sorted(p for p in SAMPLES.iterdir() if p.is_dir()):
        from triage_agent.runs.load import load_run

        run = load_run(run_dir)
        facts = resolve(run)
        args = {"summarize_reward_histogram": {"round": run.rounds[0].name if run.rounds else "x", "series": "boundary"},
                "diff_rounds": {"round_a": "selector_round1", "round_b": "selector_round2"},
                "simulate_adjustment": {"changes": {"easy_threshold": 0.9}},
                "search_log": {"pattern": "."}}
        for name in tools.REGISTRY:
            got = tools.call(facts, name, args.get(name, {}))
            assert len(got.text) / 4 < 1500, (run_dir.name, name)
            if got.error is None:
                assert "source" in got.output, (run_dir.name, name)


def test_secrets_are_redacted_and_paths_cannot_escape(make_run, tmp_path):
    from triage_agent.runs.load import load_run

    outside = tmp_path / "outside.log"
    outside.write_text("secret line\n")
    root = make_run({"configs/c.yaml": "api_key: sk-live-123\nreward:\n  weights:\n    boundary: 1\n",
                     "train.log": "hello\n"})
    facts = resolve(load_run(root))
    out = tools.call(facts, "read_config", {}).text
    assert "sk-live-123" not in out and "[redacted]" in out
    assert "not a log of this run" in tools.call(facts, "search_log", {"pattern": "secret", "file": "../outside.log"}).error
    (root / "link.log").symlink_to(outside)
    run = load_run(root)
    assert "link.log" not in [s.path for s in run.logs]


def test_tool_choice_rejected_is_dropped_and_remembered(env):
    def reject(body):
        return error(400, "tool_choice is not supported") if "tool_choice" in body else completion(json.dumps(GOOD_ANSWER))

    with ScriptedServer([reject, reject]) as srv:
        rep = report(RUN, settings(srv), save=False)
    assert rep.source["kind"] == "model"
    assert "tool_choice" in srv.requests[0] and "tool_choice" not in srv.requests[1]
    assert "tools" in srv.requests[1]


def test_streaming_rejected_answer_still_printed(env):
    def reject(body):
        return error(400, "stream is not supported") if body.get("stream") else completion("Plain answer.")

    with ScriptedServer([reject, reject]) as srv:
        code, out, _ = cli("ask", str(RUN), "why?", "--base-url", srv.base_url, "--model", "m", "--no-save")
    assert code == 0 and out.strip() == "Plain answer."
    assert "stream_options" not in srv.requests[1]


def test_unknown_model_lists_the_endpoint_models(env):
    # the server itself answers 404 for a model it does not list (no scripted reply needed, none left unused)
    with ScriptedServer([], models=["llama-3", "qwen"]) as srv:
        rep = report(RUN, Settings(base_url=srv.base_url, model="nope", retry_wait=0.01), save=False)
    assert re.search("model 'nope' not found.*llama-3, qwen", rep.model_error)


def test_server_down_is_one_line(env):
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    rep = report(RUN, Settings(base_url=f"http://127.0.0.1:{port}/v1", model="m", retry_wait=0.01, max_attempts=2),
                 save=False)
    assert "cannot reach" in rep.model_error



def test_a_refused_connection_is_retried_once_not_four_times():
    # nothing listening: one retry covers a server mid-restart; four attempts (1+2+4 s of backoff) only make the
    # user wait for the same answer. A 500 still gets every attempt (test_500s_exhaust_retries_with_one_line).
    import socket

    from triage_agent.llm.client import LLMClient

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    waits: list[float] = []
    client = LLMClient(Settings(base_url=f"http://127.0.0.1:{port}/v1", model="m", retry_wait=0.5, max_attempts=4),
                       sleep=waits.append)
    with pytest.raises(TriageError) as exc:
        client.chat([{"role": "user", "content": "hi"}])
    assert "connection was refused" in str(exc.value)
    assert waits == [0.5]

# Regression tests for what llama.cpp's server (llama-cpp-python 0.3.36) did differently, each reproduced here.

def validation_500(loc: str, msg: str):
    text = f"1 validation error:\n  {{'type': 'literal_error', 'loc': ('body', {loc}), 'msg': \"{msg}\"}}"
    return error(500, text)


def test_json_schema_500_validation_error_downgrades_to_json_object(env):
    def server(body):
        rf = body.get("response_format")
        if rf and rf["type"] == "json_schema":
            return validation_500("'response_format', 'type'", "Input should be 'text' or 'json_object'")
        return completion(json.dumps(GOOD_ANSWER))

    script = [completion("not json"), server, server]
    with ScriptedServer(script) as srv:
        rep = report(RUN, settings(srv), save=False)
    assert rep.source["kind"] == "model"
    assert len(srv.requests) == 3  # no retries of the 500: it names a field, it is not a passing fault
    assert srv.requests[2]["response_format"] == {"type": "json_object"}


def test_null_assistant_content_rejected_is_resent_as_empty_string(env):
    def server(body):
        if any(m["role"] == "assistant" and m.get("content") is None for m in body["messages"]):
            return validation_500("'messages', 2, 'ChatCompletionRequestAssistantMessage', 'content'",
                                  "Input should be a valid string")
        return completion(json.dumps(GOOD_ANSWER))

    script = [completion(tool_calls=[tool_call("filter_audit", "{}")]), server, server]
    with ScriptedServer(script) as srv:
        rep = report(RUN, settings(srv), save=False)
    assert rep.source["kind"] == "model"
    assert srv.requests[2]["messages"][2]["content"] == ""


def test_functions_prefix_leaked_call_with_html_escapes(env):
    leaked = 'functions.rollout_reliability:\n{ &#34;rollouts&#34;: 4 }'
    script = [completion(leaked), completion(json.dumps(GOOD_ANSWER).replace('"', "&#34;"))]
    with ScriptedServer(script) as srv:
        rep = report(RUN, settings(srv), save=False)
    assert rep.source["kind"] == "model"  # the escaped JSON answer was read too
    tool_msg = next(m for m in srv.requests[1]["messages"] if m["role"] == "tool")
    assert json.loads(tool_msg["content"])["estimates"]["given"]["rollouts"] == 4


def test_empty_stream_with_tools_is_resent_unstreamed(env):
    def server(body):
        if body.get("stream") and "tools" in body:
            return {"stream": [], "no_done": True}
        return completion("The filter drops the band.")

    with ScriptedServer([server, server]) as srv:
        seen = []
        res = ask(RUN, "why?", settings(srv), on_text=seen.append, save=False)
    assert res.answer == "The filter drops the band." and seen == []
    assert srv.requests[0]["stream"] is True and "stream" not in srv.requests[1]


def test_a_rules_change_that_meets_its_target_survives_a_model_change_that_misses(env, tmp_path):
    """The model loosens easy_threshold to 0.6, the rules to 0.45: both kept, the rules' is the default."""
    import pandas as pd

    from triage_agent.commands.apply import plan

    miss = {"diagnosis": [{"cause": "the filter starves the band", "findings": ["filter.boundary_starved"],
                           "evidence": "share after 0.0", "confidence": 0.7}],
            "adjustments": [{"file": "configs/filter_config.yaml", "key": "filter.easy_threshold", "to": 0.6,
                             "rationale": "loosen it more"}]}
    with ScriptedServer([completion(json.dumps(miss))]) as srv:
        code, out, _ = cli("report", str(RUN), "--json", "--base-url", srv.base_url, "--model", "m", "--no-save")
    assert code == 0
    doc = json.loads(out)
    both = [a for a in doc["adjustments"] if a["key"] == "filter.easy_threshold"]
    assert [(a["source"], a["to"]) for a in both] == [("model", 0.6), ("rules", 0.45)]
    # by hand: the band [0.4, 0.6] share of the questions kept by 0.0 < accuracy < easy, against the rules
    # table's target band share 0.25..0.35
    acc = pd.read_json(RUN / "data" / "filter_stats.jsonl", lines=True)["accuracy"]
    for easy, a in ((0.6, both[0]), (0.45, both[1])):
        kept = acc[(acc > 0.0) & (acc < easy)]
        share = ((kept >= 0.4) & (kept <= 0.6)).sum() / len(kept)
        assert a["predicted"]["band_share_after_filter"] == round(share, 3)
        assert a["meets_target"] is bool(0.25 <= share <= 0.35)
    assert both[0]["meets_target"] is False and both[1]["meets_target"] is True
    assert [a["default"] for a in both] == [False, True]
    # `apply` takes the default one: 0.45, not the model's 0.6
    path = tmp_path / "r.json"
    path.write_text(out)
    edits = plan(path).edits
    assert [c for e in edits for c in e.changes if c[0] == "filter.easy_threshold"] == [
        ("filter.easy_threshold", 0.4, 0.45)]


def test_a_timeout_after_the_findings_still_gives_the_json_report_with_exit_3(env):
    import time

    def slow(body):
        time.sleep(3)
        return completion(json.dumps(GOOD_ANSWER))

    with ScriptedServer([slow]) as srv:
        code, out, err = cli("report", str(RUN), "--json", "--base-url", srv.base_url, "--model", "m", "--no-save",
                             "--timeout", "0.5")
    assert code == 3
    doc = json.loads(out)
    assert doc["source"]["kind"] == "rules" and doc["source"]["error"]["kind"] == "timeout"
    assert "--timeout" in doc["source"]["error"]["message"] and "TRIAGE_TIMEOUT" in err
    # the deterministic part whole: the same findings and changes as `inspect --json`
    _, offline, _ = cli("inspect", str(RUN), "--json")
    expected = json.loads(offline)
    assert [f["id"] for f in doc["findings"]] == [f["id"] for f in expected["findings"]]
    assert doc["adjustments"] == expected["adjustments"] and doc["diagnosis"] == expected["diagnosis"]


def test_timeout_from_the_environment_is_named_and_checked(env):
    from triage_agent.llm.settings import resolve

    env.setenv("TRIAGE_TIMEOUT", "7")
    assert resolve({}).timeout == 7.0 and resolve({}).sources["timeout"] == "$TRIAGE_TIMEOUT"
    assert resolve({"timeout": 3.0}).timeout == 3.0  # the flag wins
    env.setenv("TRIAGE_TIMEOUT", "soon")
    with pytest.raises(TriageError, match="TRIAGE_TIMEOUT"):
        resolve({})


CHANGES_ANSWER = ("The filter starves the band: 0.0 of the kept questions sit in it.\n\n```changes\n" + json.dumps(
    {"adjustments": [
        {"file": "configs/filter_config.yaml", "key": "filter.easy_threshold", "to": 0.45, "rationale": "loosen"},
        {"file": "configs/train_config.yaml", "key": "selector.learning_rate", "to": 2e-6, "rationale": "faster"},
        {"file": "train.py", "key": "lr", "to": 1e-5, "rationale": "x"}]}) + "\n```\n")


def test_ask_shows_the_models_changes_checked_with_their_what_if(env):
    import pandas as pd

    seen: list[str] = []
    with ScriptedServer([{"stream": stream_chunks(CHANGES_ANSWER)}]) as srv:
        res = ask(RUN, "how do I fix it?", settings(srv), on_text=seen.append, save=False)
    # the block never reached the screen as the model wrote it (the 7-character chunks split its fence)
    assert "```" not in "".join(seen) and "".join(seen).strip() == res.answer
    assert res.answer == "The filter starves the band: 0.0 of the kept questions sit in it."
    checked = {a.key: a for a in res.changes.adjustments}
    acc = pd.read_json(RUN / "data" / "filter_stats.jsonl", lines=True)["accuracy"]
    kept = acc[(acc > 0.0) & (acc < 0.45)]
    in_band = ((kept >= 0.4) & (kept <= 0.6)).sum()
    assert checked["filter.easy_threshold"].predicted == {
        "band_share_after_filter": round(in_band / len(kept), 3), "kept": len(kept),
        "band_questions_before": 0, "band_questions_after": in_band}  # easy 0.4 kept no band question
    assert checked["filter.easy_threshold"].meets_target is True and checked["filter.easy_threshold"].from_ == 0.4
    assert checked["selector.learning_rate"].meets_target is None  # the what-if cannot predict a learning rate
    assert [(r.key, "training code" in r.reason) for r in res.changes.rejected] == [("lr", True)]


def test_ask_through_the_cli_marks_each_change(env):
    broken = "Loosen the filter.\n```changes\n{\"adjustments\": [{\"file\": 1}\n```"
    with ScriptedServer([{"stream": stream_chunks(CHANGES_ANSWER)}, {"stream": stream_chunks(broken)}]) as srv:
        code, out, _ = cli("ask", str(RUN), "fix?", "--base-url", srv.base_url, "--model", "m", "--no-save")
        code2, out2, _ = cli("ask", str(RUN), "fix?", "--base-url", srv.base_url, "--model", "m", "--no-save")
    assert code == code2 == 0
    assert "```" not in out and "meets target" in out and "0.4 → 0.45" in out
    assert "unchecked" in out and "not predictable from this run" in out and "rejected: training code" in out
    assert out2.startswith("Loosen the filter.") and "unchecked: the answer's proposed changes could not be read" in out2


def test_holdback_withholds_the_fence_however_the_text_is_cut():
    from triage_agent.agent.changes import Holdback, prose

    for size in (1, 2, 3, 5, 9, 1000):
        hold = Holdback()
        shown = "".join(hold.feed(CHANGES_ANSWER[i:i + size]) for i in range(0, len(CHANGES_ANSWER), size))
        assert (shown + hold.flush()).rstrip() == prose(CHANGES_ANSWER), size
    hold = Holdback()
    assert hold.feed("a ``") == "a " and hold.feed("` code") == "``` code" and hold.flush() == ""


@pytest.mark.parametrize("script", [[{"status": 200, "json": {"id": "x", "choices": "nope"}}],  # not retried
                                    [error(503, "overloaded", {"Retry-After": "0"})] * 4])  # retried 4 times
def test_a_malformed_or_failed_reply_keeps_the_rules_report_in_the_terminal(env, script):
    with ScriptedServer(script) as srv:
        code, out, err = cli("report", str(RUN), "--base-url", srv.base_url, "--model", "m", "--no-save")
    assert code == 3
    assert "filter.boundary_starved" in out and "the model part failed" in out
    assert err.strip().startswith("triage: ") and "the report above is the rules' own" in err


def test_ctrl_c_during_a_streamed_answer_closes_its_connection():
    """Ctrl-C stops a chat answer (KeyboardInterrupt in the main thread while the request runs in its worker):
    the connection is closed at once, so the server stops generating, instead of streaming on unread."""
    import os
    import signal
    import threading
    import time

    from triage_agent.llm.client import LLMClient

    slow = {"stream": stream_chunks("word " * 2000), "delay": 0.05}  # 100 s in all: only a closed stream ends early
    with ScriptedServer([slow]) as srv:
        client = LLMClient(Settings(base_url=srv.base_url, model="m", retry_wait=0.01))
        timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
        # Python's own handler, even when the tests were started with SIGINT ignored (a background job)
        before = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            timer.start()
            with pytest.raises(KeyboardInterrupt):
                client.chat([{"role": "user", "content": "talk slowly"}], stream=True, on_text=lambda _t: None)
        finally:
            signal.signal(signal.SIGINT, before)
        stopped = time.monotonic()
        deadline = stopped + 60  # a hang guard only
        while not srv.stream_ends and time.monotonic() < deadline:
            time.sleep(0.02)
    # the server stopped because the connection closed, not because it ran out of words (no wall-clock bound:
    # on a loaded machine the Ctrl-C itself comes late)
    sent, _ended = srv.stream_ends[0]
    assert sent < 1000
