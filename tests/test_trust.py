"""What makes an engineer trust the output (issue 14): checked suggestions stay checked and marked, no number
is hidden or cut, text from runs is shown as it is, exit codes follow the README."""

from __future__ import annotations

import functools
import io
import json
import re
import socket

import pytest
from rich.console import Console

from tests.conftest import SAMPLES
from tests.conftest import cli as _cli
from tests.scripted_server import ScriptedServer, completion
from triage_agent.cli import main

RUN = SAMPLES / "boundary_collapse"


cli = functools.partial(_cli, width=80)  # these tests read folded tables


def model_answer(adjustments):
    return completion(json.dumps({"diagnosis": [{"cause": "the filter", "findings": ["filter.boundary_starved"],
                                                 "evidence": "e", "confidence": 0.8}], "adjustments": adjustments}))


# 1, 2: unmet changes shown apart; the rules' changes stay beside the model's, each marked
def test_model_report_keeps_the_rules_changes_and_shows_unmet_apart(env):
    unmet = {"file": "configs/filter_config.yaml", "key": "filter.unsolvable_threshold", "to": 0.35, "rationale": "x"}
    with ScriptedServer([model_answer([unmet])]) as srv:
        code, out, _ = cli("report", str(RUN), "--json", "--base-url", srv.base_url, "--model", "m")
    doc = json.loads(out)
    by_key = {a["key"]: a for a in doc["adjustments"]}
    assert by_key["filter.unsolvable_threshold"]["source"] == "model"
    assert by_key["filter.unsolvable_threshold"]["meets_target"] is False
    assert by_key["filter.easy_threshold"]["source"] == "rules" and by_key["filter.easy_threshold"]["meets_target"]
    with ScriptedServer([model_answer([unmet])]) as srv:
        _, text, _ = cli("report", str(RUN), "--base-url", srv.base_url, "--model", "m", width=200)
    unmet_part = text[text.index("do not reach their target"):]
    assert "filter.unsolvable_threshold" in unmet_part and "filter.easy_threshold" not in unmet_part


# 5: nothing cut when piped; --width
def table_columns(out: str, title: str) -> list[list[str]]:
    """The cells of the table under `title` in rich's text output, each column's wrapped pieces joined up; a table
    too wide for the terminal is stacked (a `• header: value` block per row), and is read back the same way."""
    lines = out[out.index(title):].splitlines()[1:]
    if lines and lines[0].startswith("• "):
        return _stacked_rows(lines)
    end = next((i for i, line in enumerate(lines) if line.startswith("└")), len(lines))
    body = [line for line in lines[:end + 1] if line.startswith("│")]
    rows: list[list[str]] = []
    for line in body:
        cells = [c.strip() for c in line.strip("│").split("│")]
        if cells[0] or not rows:
            rows.append(cells)
        else:
            rows[-1] = [a + b for a, b in zip(rows[-1], cells)]
    return rows


def _stacked_rows(lines: list[str]) -> list[list[str]]:
    rows: list[list[str]] = []
    for line in lines:
        if line.startswith("• "):
            rows.append([])
        elif not line.startswith("  "):
            break
        text = line[2:].rstrip()
        field = re.match(r"([a-z →.]{1,20}): ", text)  # `from → to: 0.4 → 0.45`
        if field:
            rows[-1].append(text[field.end():])
        else:  # a wrapped value goes on
            rows[-1][-1] += " " + text.strip()
    return rows


def test_piped_output_never_cuts_with_an_ellipsis():
    code, out, _ = cli("inspect", str(RUN), width=80)
    assert code == 0 and "…" not in out
    findings = table_columns(out, "Findings")
    # the cause first, the consequence it explains under it (findings/chains.py)
    assert [r[1] for r in findings][:3] == ["filter.boundary_starved", "↳ generator.accuracy_off_target",
                                            "reward.boundary_suppressed"]
    assert findings[2][3] == "round_3/selector/reward_samples.parquet"
    changes = table_columns(out, "Suggested changes")
    assert [(r[1], r[2]) for r in changes] == [("configs/filter_config.yaml", "filter.easy_threshold"),
                                               ("configs/train_config.yaml", "reward.weights.format")]

def test_width_flag(capsys):
    assert main(["inspect", str(RUN), "--width", "160"]) == 0
    assert max(len(line) for line in capsys.readouterr().out.splitlines()) > 100
    with pytest.raises(SystemExit):
        main(["inspect", str(RUN), "--width", "5"])


# 6: markup and escapes in run files are printed as they are
def test_run_text_is_literal(make_run):
    root = make_run({"configs/c.yaml": "a: 1\n", "train.log": "step:1 - critic/score/mean:0.5\nTraceback (most recent "
                     "call last):\n  File \"x.py\", line 1, in f\nRuntimeError: lost [rank0] \x1b[2J \x07\n"})
    named = root.parent / "run[bold]x"
    root.rename(named)
    code, out, _ = cli("inspect", str(named), width=200)
    assert "[rank0]" in out and "run[bold]x" in out
    assert "\x1b" not in out and "\x07" not in out and "\\x07" in out  # the bell shown as text, not rung


# 7: numbers read as numbers
def test_numbers_read_as_numbers(make_run):
    rows = [{"step": i, "completions/mean_length": 4980.4, "loss": -0.0, "reward": 0.164653} for i in range(1, 13)]
    root = make_run({"trainer_state.json": {"log_history": rows}, "bad.jsonl": "x"})
    (root / "filter_stats.jsonl").write_text('{"accuracy": 0.5, "kept": true}\n{oops\n')
    code, out, _ = cli("inspect", str(root), width=200)
    assert "4,980" in out and "4.98e+03" not in out and "-0.000" not in out and "-0 " not in out
    assert "0.1647" in out and "0.164653" not in out  # four significant digits (issue 41)
    assert "filter_stats.jsonl:2" in out  # parse errors on screen, with the line
    _, frozen, _ = cli("inspect", str(SAMPLES / "frozen_generator"), width=200)
    assert "(2 signs)" in frozen and "sign(s)" not in frozen and "True" not in frozen and "False" not in frozen


# 8: the histogram marks the bins inside the band
def test_filter_histogram_marks_exactly_the_band_bins():
    _, out, _ = cli("inspect", str(RUN), width=200)
    marked = re.findall(r"◆(\d\.\d-\d\.\d)", out)
    assert marked == ["0.4-0.5", "0.5-0.6"]


# 10: /simulate by leaf name, as a table; /tools whole descriptions
def test_simulate_by_unique_leaf_name():
    from triage_agent.agent import tools
    from triage_agent.findings.facts import resolve
    from triage_agent.runs.load import load_run

    facts = resolve(load_run(RUN))
    got = tools.call(facts, "simulate_adjustment", {"changes": {"easy_threshold": 0.45}})
    assert got.error is None and got.output["results"][0]["key"] == "filter.easy_threshold"
    many = tools.call(facts, "simulate_adjustment", {"changes": {"learning_rate": 1e-5}})
    assert many.error is not None and ("ambiguous" in many.error or "no config key" in many.error)


def test_chat_slash_commands_show_tables_and_whole_descriptions(tmp_path):
    from triage_agent.commands.chat import start
    from triage_agent.llm.settings import Settings
    from triage_agent.render.chat import _slash

    session, _ = start(RUN, Settings(), {"XDG_STATE_HOME": str(tmp_path)})
    buf = io.StringIO()
    console = Console(file=buf, width=200)
    _slash(session, "/simulate easy_threshold=0.45", console)
    text = buf.getvalue()
    assert "before" in text and "after" in text and "target met" in text and "yes" in text and "{" not in text
    buf.truncate(0)
    _slash(session, "/tools", console)
    assert "the mean of the first and last" not in buf.getvalue()  # no sentence cut at 90 characters
    from triage_agent.agent import tools
    assert tools.schemas()[3]["function"]["description"] in buf.getvalue().replace("\n  ", " ").replace("\n", " ")


# 11: every command follows the exit-code table
def test_exit_codes_follow_the_readme(env, tmp_path):
    assert cli("inspect", str(RUN))[0] == 0
    assert cli("inspect", str(RUN), "--fail-on", "high")[0] == 1
    assert cli("inspect", str(tmp_path / "missing"))[0] == 2
    assert cli("report", str(RUN), "--offline")[0] == 0
    assert cli("ask", str(RUN), "why?")[0] == 2  # no endpoint configured: bad input
    assert cli("apply", str(tmp_path / "missing.json"))[0] == 2
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    down = f"http://127.0.0.1:{port}/v1"
    assert cli("doctor", "--base-url", down, "--model", "m")[0] == 3
    assert cli("report", str(RUN), "--base-url", down, "--model", "m")[0] == 3
    assert cli("ask", str(RUN), "q", "--base-url", down, "--model", "m")[0] == 3


# 12: refused connections say so, quickly
def test_a_server_that_is_down_fails_fast_and_says_refused(env):
    import time

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    t0 = time.perf_counter()
    code, _, err = cli("report", str(RUN), "--base-url", f"http://127.0.0.1:{port}/v1", "--model", "m")
    assert code == 3 and "connection was refused" in err and "timed out" not in err
    assert time.perf_counter() - t0 < 110  # a hang guard: retries with backoff, never the 120 s request timeout


# 14: an unknown flag shows the subcommand's usage
def test_unknown_flag_shows_the_subcommand_usage(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["inspect", str(RUN), "--bogus"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: triage inspect") and "unrecognized arguments: --bogus" in err


# 12: a spinner while waiting, on a terminal only
def test_spinner_only_on_a_terminal():
    import contextlib

    from triage_agent.cli import spinner as _spinner

    assert isinstance(_spinner(Console(file=io.StringIO()), "x"), contextlib.nullcontext)
    buf = io.StringIO()
    with _spinner(Console(file=buf, force_terminal=True), "waiting for the model"):
        pass
    assert "waiting for the model" in buf.getvalue()


def test_html_report_reads_like_the_terminal():
    from triage_agent.commands.inspect import inspect
    from triage_agent.render import html

    page = html.render(inspect(SAMPLES / "reward_hacking"))
    table = page[page.index("Suggested changes"):]
    assert "<td>yes</td>" in table and "<td>True</td>" not in table and "{&quot;interval" not in table
    assert "interval 2000" in table and "<td>rules</td>" in table
