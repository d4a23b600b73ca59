"""Against a real OpenAI-compatible server nobody on the team wrote: llama.cpp (llama-cpp-python).

Run by `tools/llamacpp_server.sh` (called from .ci/run), which starts the server and sets
TRIAGE_IT_BASE_URL and TRIAGE_IT_MODEL. The model is a tiny base model (Gemma 3 270M), so
these tests assert plumbing (requests made, tool calls parsed, fallbacks taken, results
checked), never the quality of its answers.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SAMPLES

BASE = os.environ.get("TRIAGE_IT_BASE_URL")
MODEL = os.environ.get("TRIAGE_IT_MODEL", "gemma3")
pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not BASE, reason="no real server: set TRIAGE_IT_BASE_URL (tools/llamacpp_server.sh)")]


# CI's time budget: a 270M model on two CPU cores reads a ~4,000-token first message in ~40 s and writes ~20
# tokens a second, and at temperature > 0 it can write to its limit (one answer was 1,210 tokens, 62 s). A profile
# caps each answer and each command: one request fits (~40 s reading, at most ~13 s writing), a report or ask
# takes at most 75 s; a capped answer is a fallback or a timeout, both paths the tests accept and check. (With
# 120 s, CI's llama.cpp tests still took 311 s of its 20 minutes.)
CI_PROFILE = """default_profile = "ci"
[profiles.ci]
max_tokens = 256
command_deadline = 75
"""


def triage(tmp_path, *args, stdin=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "TRIAGE_"))}
    # seeded: the tiny model samples, and its choice to call a tool or not must be the same on every CI run
    env |= {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "TRIAGE_SEED": "1"}
    config = tmp_path / "config" / "triage" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(CI_PROFILE)
    return subprocess.run([sys.executable, "-m", "triage_agent", *args, "--base-url", BASE, "--model", MODEL],
                          capture_output=True, text=True, env=env, input=stdin, timeout=900, check=False)


def test_doctor_reports_real_capabilities(tmp_path):
    proc = triage(tmp_path, "doctor", "--json")
    assert "Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)
    checks = {c["name"]: c for c in doc["checks"]}
    assert checks["reachable"]["ok"] and checks["model"]["ok"] and checks["chat"]["ok"]
    assert doc["can_report"] is True and proc.returncode == 0
    assert {"tools", "streaming"} <= set(doc["capabilities"])
    assert checks["tool calling"]["ok"] is not False
    saved = json.loads((tmp_path / "state" / "triage" / "capabilities.json").read_text())
    assert saved[f"{BASE}|{MODEL}"] == doc["capabilities"]


def test_report_completes_with_checked_adjustments(tmp_path):
    tool_events = 0
    # one run: with the richer first message each report takes minutes on a 270M CPU model (CI's time budget)
    for run in ("boundary_collapse",):
        # each request gets up to the profile's 75 s command budget
        proc = triage(tmp_path, "report", str(SAMPLES / run), "--json", "--timeout", "75")
        assert "Traceback" not in proc.stderr
        doc = json.loads(proc.stdout)
        src = doc["source"]
        if proc.returncode == 3:  # a timeout, or an answer not usable: the rules' report is still the whole JSON
            assert src["kind"] == "rules" and src["error"]["kind"] in ("timeout", "bad_response"), proc.stderr
            assert doc["findings"] and doc["schema"] == "triage.report/v1"
            print(f"{run}: the model timed out; the rules' report was kept (exit 3)")
            continue
        assert proc.returncode == 0, proc.stderr
        assert src["requests"] >= 1 and src["model"] == MODEL
        if src["kind"] == "offline":  # the tiny model's answer was not usable: said so plainly
            assert src.get("fallback") is True
            assert any(n.startswith("model answer not used") for n in doc["notes"])
        else:
            assert src["kind"] == "model"
        for a in doc["adjustments"]:
            assert {"from", "predicted", "meets_target"} <= set(a)
        transcript = json.loads(Path(src["transcript"]).read_text())
        assert transcript["usage"]["requests"] == src["requests"]
        for ev in transcript["tool_events"]:
            assert ev["name"] and ev["output_chars"] > 0
        tool_events += len(transcript["tool_events"])
    # whether the sampling 270M model calls a tool here varies from run to run (seeds do not pin it through
    # llama-cpp-python's prompt cache); the parsing of a real tool call is checked, forced, in the next test
    print(f"tool calls made by the model in the report: {tool_events}")


def test_a_real_servers_tool_call_is_parsed_and_run():
    """A tool call the real server sends (forced with tool_choice) is parsed and run by triage's tools."""
    from triage_agent.agent import loop, tools
    from triage_agent.llm.client import LLMClient
    from triage_agent.llm.settings import Settings
    from triage_agent.report import offline_report
    from triage_agent.runs.load import load_run

    base = offline_report(load_run(SAMPLES / "boundary_collapse"))
    client = LLMClient(Settings(base_url=BASE, model=MODEL, timeout=300))
    messages = [{"role": "system", "content": loop.prompts.render("system.md")},
                {"role": "user", "content": "Call run_overview for this run."}]
    reply = client.chat(messages, tools=tools.schemas(), max_tokens=256,
                        tool_choice={"type": "function", "function": {"name": "run_overview"}})
    assert [c.name for c in reply.tool_calls] == ["run_overview"]
    got = tools.call(base.facts, reply.tool_calls[0].name, reply.tool_calls[0].arguments)
    assert got.error is None and got.output["kind"] == "selector-generator"


def test_ask_completes(tmp_path):
    proc = triage(tmp_path, "ask", str(SAMPLES / "boundary_collapse"), "--timeout", "75",
                  stdin="Why is the generator stuck at 41%?")
    if proc.returncode == 3:  # the tiny CPU model still too slow: ask has no rules' part, so one line and exit 3
        assert proc.stderr.strip().splitlines()[-1].startswith("triage: the endpoint ") and "timed out" in proc.stderr
        assert "Traceback" not in proc.stderr
        print("ask: the model timed out (exit 3, one line)")
        return
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout.strip()
    assert "requests" in proc.stderr
