"""`triage chat` driven through a pseudo-terminal (pexpect) against the scripted server."""

import io
import json
import os
import re
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
    """Ctrl-C in a real terminal (the pty's line discipline sends SIGINT and echoes ^C) mid-stream stops the answer
    and shows what came of it once. It showed twice: rich pads each line to the terminal's width, so the echoed ^C
    wrapped to a new line and the answer's last redraw landed on it, under the first. What a terminal shows is
    worked out from the bytes (`screen`, below)."""
    # "ignored": started as a background job of a non-interactive shell is (SIGINT ignored, inherited across exec;
    # Python then installs no KeyboardInterrupt handler). CI started that way once, and Ctrl-C did nothing.
    slow = {"stream": stream_chunks(" ".join(f"w{i:03d}" for i in range(200))), "delay": 0.05}
    with ScriptedServer([slow, {"stream": stream_chunks("Still here.")}]) as srv:
        child = spawn(tmp_path, "--base-url", srv.base_url, "--model", "m",
                      preexec_fn=_sigint_ignored if sigint == "ignored" else None)
        seen = io.StringIO()
        child.logfile_read = seen
        child.expect_exact("triage> ")
        child.sendline("talk slowly")
        child.expect("w010")
        child.sendintr()
        child.expect(r"answer stopped")
        child.expect_exact("triage> ")
        child.sendline("are you there?")
        child.expect("Still here")
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    # the stopped exchange was dropped: the second request does not carry "talk slowly"
    assert "talk slowly" not in [m.get("content") for m in srv.requests[1]["messages"]]
    shown = screen(seen.getvalue(), 120)
    partial = [line for line in shown if line.startswith("w000 w001")]
    assert len(partial) == 1, "\n".join(shown)  # once, and "[answer stopped]" right under it
    assert shown[shown.index(partial[0]) + 1].startswith("[answer stopped]"), "\n".join(shown)


_CSI = re.compile(r"\x1b\[([?\d;]*)([A-Za-z@])|\x1b\][^\x07]*\x07|\x1b[()][0-9A-Za-z]|\x1b[78=>]")


def screen(raw: str, width: int) -> list[str]:
    """The lines a terminal `width` columns wide shows for `raw` (scrolled off ones kept): text, CR, LF, BS and
    the cursor and erase sequences rich's Live uses, with the wrap xterm and its kin make: a character written
    in the last column leaves the cursor there, and the next printable character goes to a new line first."""
    rows: list[list[str]] = [[" "] * width]
    r = c = 0
    pending = False
    pos = 0
    while pos < len(raw):
        m = _CSI.match(raw, pos)
        if m:
            pos = m.end()
            if m.group(2) is None or m.group(1).startswith("?"):
                continue  # a mode (cursor shown or hidden), a title, a character set: nothing drawn
            n = int(m.group(1).split(";")[0] or 1) if m.group(2) in "ABCDG" else int(m.group(1) or 0)
            kind = m.group(2)
            pending = pending and kind == "m"  # a cursor movement ends a pending wrap; colours do not
            if kind == "A":
                r = max(0, r - n)
            elif kind == "B":
                r += n
            elif kind == "C":
                c = min(width - 1, c + n)
            elif kind == "D":
                c = max(0, c - n)
            elif kind == "G":
                c = min(width - 1, n - 1)
            elif kind == "K":
                while len(rows) <= r:
                    rows.append([" "] * width)
                lo, hi = {0: (c, width), 1: (0, c + 1), 2: (0, width)}[n]
                rows[r][lo:hi] = [" "] * (hi - lo)
            continue
        ch = raw[pos]
        pos += 1
        if ch == "\r":
            c, pending = 0, False
        elif ch == "\n":
            r, pending = r + 1, False
        elif ch == "\b":
            c, pending = max(0, c - 1), False
        elif ch >= " ":
            if pending:
                r, c, pending = r + 1, 0, False
            while len(rows) <= r:
                rows.append([" "] * width)
            rows[r][c] = ch
            if c == width - 1:
                pending = True
            else:
                c += 1
    return ["".join(row).rstrip() for row in rows]


def test_screen_draws_what_a_terminal_shows():
    # by hand: a 10-column terminal; "abcdefghij" fills a line and leaves the cursor on its last column, "^C" goes
    # to the next line; CR and erase-line then redraw that second line only
    assert screen("abcdefghij^C\r\x1b[2Kxyz\r\n", 10) == ["abcdefghij", "xyz"]
    assert screen("one\r\ntwo\x1b[1A\r\x1b[2Kuno\r\n", 10) == ["uno", "two"]


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
