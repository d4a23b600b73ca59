"""`triage chat` driven through a pseudo-terminal (pexpect) against the scripted server."""

import json
import os
import sys

import pexpect
import pytest

from tests.conftest import SAMPLES
from tests.scripted_server import ScriptedServer, stream_chunks, tool_call

RUN = SAMPLES / "boundary_collapse"


def spawn(tmp_path, *args, preexec_fn=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "TRIAGE_"))}
    env |= {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "COLUMNS": "120", "TERM": "xterm"}
    return pexpect.spawn(sys.executable, ["-m", "triage_agent", "chat", str(RUN), *args], env=env,
                         encoding="utf-8", timeout=30, dimensions=(40, 120), preexec_fn=preexec_fn)


def test_two_questions_simulate_and_exit(tmp_path):
    script = [{"stream": stream_chunks("The filter is too aggressive.")},
              {"stream": stream_chunks(tool_calls=[tool_call("filter_audit", "{}", "t1")])},
              {"stream": stream_chunks("After the filter the band share is 0.0.")}]
    with ScriptedServer(script) as srv:
        child = spawn(tmp_path, "--base-url", srv.base_url, "--model", "scripted-model")
        child.expect("chatting with scripted-model")
        child.expect_exact("triage> ")
        child.sendline("why is the generator stuck?")
        child.expect("too aggressive")
        child.expect_exact("triage> ")
        child.sendline("what is the band share after the filter?")
        child.expect("filter_audit")  # the tool call's status line
        child.expect("band share is 0.0")
        child.expect_exact("triage> ")
        child.sendline("/simulate filter.easy_threshold=0.45")
        child.expect("band_share_after_filter")
        child.expect_exact("triage> ")
        child.sendline("/exit")
        child.expect("conversation saved")
        child.expect(pexpect.EOF)
        child.close()
    assert child.exitstatus == 0
    assert len(srv.requests) == 3
    tool_msg = next(m for m in srv.requests[2]["messages"] if m["role"] == "tool")
    assert json.loads(tool_msg["content"])["source"] == "data/filter_stats.jsonl"
    # the second question carries the first question and answer
    contents = [m.get("content") for m in srv.requests[1]["messages"]]
    assert "why is the generator stuck?" in contents and "The filter is too aggressive." in contents
    (saved,) = (tmp_path / "state" / "triage" / "chats").glob("*.json")
    users = [m["content"] for m in json.loads(saved.read_text())["messages"] if m["role"] == "user"]
    assert users[1:] == ["why is the generator stuck?", "what is the band share after the filter?"]


def test_resume_continues_the_last_conversation(tmp_path):
    with ScriptedServer([{"stream": stream_chunks("First answer.")}, {"stream": stream_chunks("Second.")}]) as srv:
        child = spawn(tmp_path, "--base-url", srv.base_url, "--model", "m")
        child.expect_exact("triage> ")
        child.sendline("first?")
        child.expect("First answer")
        child.expect_exact("triage> ")
        child.sendeof()
        child.expect(pexpect.EOF)
        child = spawn(tmp_path, "--base-url", srv.base_url, "--model", "m", "--resume")
        child.expect("resumed 1 earlier questions")
        child.expect_exact("triage> ")
        child.sendline("second?")
        child.expect("Second")
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    assert "first?" in [m.get("content") for m in srv.requests[1]["messages"]]


def _sigint_ignored() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("sigint", ["default", "ignored"])
def test_ctrl_c_stops_the_answer_not_the_session(tmp_path, sigint):
    # "ignored": started as a background job of a non-interactive shell is (SIGINT ignored, inherited across exec;
    # Python then installs no KeyboardInterrupt handler). CI started that way once, and Ctrl-C did nothing.
    slow = {"stream": stream_chunks("word " * 200), "delay": 0.05}
    with ScriptedServer([slow, {"stream": stream_chunks("Still here.")}]) as srv:
        child = spawn(tmp_path, "--base-url", srv.base_url, "--model", "m",
                      preexec_fn=_sigint_ignored if sigint == "ignored" else None)
        child.expect_exact("triage> ")
        child.sendline("talk slowly")
        child.expect("word")
        child.sendintr()
        child.expect(r"answer stopped")
        child.expect_exact("triage> ")
        child.sendline("are you there?")
        child.expect("Still here")
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    # the stopped exchange was dropped: the second request does not carry "talk slowly"
    assert "talk slowly" not in [m.get("content") for m in srv.requests[1]["messages"]]


def test_without_a_model_slash_commands_still_work(tmp_path):
    child = spawn(tmp_path)
    child.expect("slash commands only")
    child.expect_exact("triage> ")
    child.sendline("/findings")
    child.expect("filter.boundary_starved")
    child.expect_exact("triage> ")
    child.sendline("why?")
    child.expect("no model configured")
    child.sendline("/tools")
    child.expect("simulate_adjustment")
    child.sendline("/bogus")
    child.expect("unknown command /bogus")
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


@pytest.mark.parametrize("spec", ["easy_threshold", "filter.easy_threshold=high"])
def test_simulate_bad_input_is_reported(tmp_path, spec):
    child = spawn(tmp_path)
    child.expect_exact("triage> ")
    child.sendline(f"/simulate {spec}")
    child.expect("simulate: ")
    child.sendline("/exit")
    child.expect(pexpect.EOF)


def test_a_proposed_change_is_shown_checked_not_as_written(tmp_path):
    block = json.dumps({"adjustments": [{"file": "configs/filter_config.yaml", "key": "filter.easy_threshold",
                                         "to": 0.6, "rationale": "loosen"}]})
    answer = f"Loosen the filter.\n\n```changes\n{block}\n```\n"
    with ScriptedServer([{"stream": stream_chunks(answer)}]) as srv:
        child = spawn(tmp_path, "--base-url", srv.base_url, "--model", "m")
        child.expect_exact("triage> ")
        child.sendline("how do I fix it?")
        child.expect("Loosen the filter")
        # 0.6 keeps 44% of questions in the band, above the 35% target (worked out in test_agent): a miss
        child.expect("misses target")
        shown = child.before
        child.expect_exact("triage> ")
        child.sendline("/exit")
        child.expect(pexpect.EOF)
        child.close()
    assert "```" not in shown and '"adjustments"' not in shown
    assert "band_share_after_filter 0.441" in shown
