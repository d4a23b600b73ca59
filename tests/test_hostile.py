"""Hostile input, hostile models, failing servers (issue 17): a generated corpus per class, each case in a
forked child with a wall-clock limit and a memory cap. Every case must end with an exit code of the
documented set, no traceback, at most one error line, bounded time and memory, nothing written outside
the run or the --write dir, and no secret or raw escape sequence in any output."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.hostile import run

EXITS = {0, 1, 2, 3}
LIMIT_MB = 1500.0


def deep_json(n: int) -> str:
    return "[" * n + "]" * n


def run_file_cases(tmp: Path) -> dict[str, Path]:
    """Run folders that each break one reader."""
    cases: dict[str, dict[str, bytes | str]] = {
        "deep_config_json": {"configs/c.json": deep_json(100_000)},
        "deep_trainer_state": {"trainer_state.json": '{"log_history": ' + deep_json(100_000) + "}"},
        "deep_round_json": {"round_1/selector/round.json": deep_json(100_000),
                            "round_1/selector/reward_history.jsonl": '{"step": 1, "boundary": 0.5}\n'},
        "deep_wandb_summary": {"wandb/run-1/files/wandb-summary.json": deep_json(100_000),
                               "wandb/run-1/files/wandb-history.jsonl": '{"_step": 1, "train/reward": 1}\n'},
        "deep_verl_jsonl": {"metrics.jsonl": '{"step": 1, "data": {"a": 1}}\n' + deep_json(20_000) + "\n"},
        "deep_jsonl_table": {"filter_stats.jsonl": '{"accuracy": 0.5, "kept": true}\n' + "{\"a\": " * 20_000 + "1"
                             + "}" * 20_000 + "\n"},
        "yaml_alias_bomb": {"configs/c.yaml": "a: &a {x: 1, y: 1}\n" + "".join(
            f"{chr(98 + i)}: &{chr(98 + i)} {{x: *{chr(97 + i)}, y: *{chr(97 + i)}, z: *{chr(97 + i)}}}\n"
            for i in range(20))},
        "yaml_recursive": {"configs/c.yaml": "a: &a [*a]\n"},
        "yaml_deep": {"configs/c.yaml": "a: " + "[" * 50_000 + "]" * 50_000 + "\n"},
        "strings_in_numbers": {"filter_stats.csv": "qid,accuracy,kept\nq1,0.5,true\nq2,abc,true\nq3,{},false\n"},
        "invalid_utf8_jsonl": {"filter_stats.jsonl": b'{"accuracy": 0.5, "kept": true}\n{"accuracy": "\xff\xfe"}\n'},
        "huge_values": {"filter_stats.jsonl": '{"accuracy": 1e308, "kept": true}\n{"accuracy": -1e308, "kept": true}\n'
                        '{"accuracy": 0.5, "kept": true}\n'},
        "manifest_wrong_types": {"triage.toml": 'kind = 5\nfiles = "x"\ncolumns = [1, 2]\nrules = "no"\n',
                                 "configs/c.yaml": "a: 1\n"},
        "manifest_inf_rules": {"triage.toml": "[rules]\nece_bins = inf\nmin_rollouts = 1e300\n",
                               "solver_scores.jsonl": '{"score": 0.5, "gold_pass": true}\n'},
        "manifest_huge_bins": {"triage.toml": "[rules]\nece_bins = 1e8\n",
                               "solver_scores.jsonl": '{"score": 0.5, "gold_pass": true}\n'},
        "nan_in_trainer_state": {"trainer_state.json": '{"log_history": [{"step": 1, "loss": NaN}, {"step": "x"},'
                                 ' {"step": 2, "loss": Infinity}, 5, null]}'},
        "trainer_state_not_object": {"trainer_state.json": '["log_history"]'},
        "binary_log": {"train.log": bytes(range(256)) * 100},
        # issue 24: bytes that are not UTF-8, text and extreme values in a round's numeric column (exit 70 before)
        "round_csv_not_utf8": {"round_1/selector/reward_history.csv": b"step,boundary,format\n1,0.5,0.1\n2,\xff,0.2\n"
                               b"3,abc,0.3\n4,-1e308,0.4\n5,0.5,1e308\n6,0.4,0.2\n"},
        # an integer too large for a float where a metric belongs (exit 70 before)
        "trainer_state_huge_int": {"trainer_state.json": '{"log_history": [' + ", ".join(
            f'{{"step": {i}, "loss": 0.1, "reward": {"9" * 400 if i == 3 else 0.5}}}' for i in range(1, 30)) + "]}"},
        "empty_everything": {"configs/c.yaml": "", "train.log": "", "filter_stats.jsonl": ""},
    }
    out = {}
    for name, files in cases.items():
        root = tmp / name
        for rel, content in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content if isinstance(content, bytes) else content.encode())
        out[name] = root
    # links, loops, a FIFO, a long line with no newline
    root = tmp / "symlink_loop"
    (root / "configs").mkdir(parents=True)
    (root / "configs" / "c.yaml").write_text("a: 1\n")
    os.symlink("loop", root / "loop")
    os.symlink(root / "missing", root / "dangling.log")
    os.symlink("..", root / "configs" / "up")
    out["symlink_loop"] = root
    root = tmp / "fifo_log"
    root.mkdir()
    (root / "configs").mkdir()
    (root / "configs" / "c.yaml").write_text("a: 1\n")
    os.mkfifo(root / "train.log")
    out["fifo_log"] = root
    root = tmp / "long_line"
    root.mkdir()
    with (root / "train.log").open("wb") as fh:
        fh.write(b"step:1 - critic/score/mean:0.5\n")
        for _ in range(200):
            fh.write(b"x" * (1 << 20))  # 200 MB without a newline
    out["long_line"] = root
    return out


@pytest.fixture(scope="module")
def run_files(tmp_path_factory):
    return run_file_cases(tmp_path_factory.mktemp("hostile_runs"))


CASE_NAMES = ["deep_config_json", "deep_trainer_state", "deep_round_json", "deep_wandb_summary", "deep_verl_jsonl",
              "deep_jsonl_table", "yaml_alias_bomb", "yaml_recursive", "yaml_deep", "strings_in_numbers",
              "invalid_utf8_jsonl", "huge_values", "manifest_wrong_types", "manifest_inf_rules", "manifest_huge_bins",
              "nan_in_trainer_state", "trainer_state_not_object", "binary_log", "round_csv_not_utf8",
              "trainer_state_huge_int", "empty_everything", "symlink_loop",
              "fifo_log", "long_line"]


@pytest.mark.parametrize("name", CASE_NAMES)
@pytest.mark.parametrize("command", ["inspect", "report"])
def test_hostile_run_files(run_files, name, command):
    root = run_files[name]
    before = {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file() and not p.is_symlink()}
    res = run([command, str(root), "--json"] + (["--offline"] if command == "report" else []))
    assert res.problems(EXITS, LIMIT_MB) == [], (name, res.code, res.stderr[-2000:], res.seconds, res.peak_mb)
    if res.code == 0:
        json.loads(res.stdout)
    after = {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file() and not p.is_symlink()}
    assert before == after


# -- class 3: the model's tool calls -----------------------------------------------------------------
BIG_LOG = "".join(f"step:{i} - critic/score/mean:0.5 - note:{'a' * 40}\n" for i in range(1, 20001))
TOOL_CASES = [
    ("search_log", {"pattern": "(a+)+$"}),  # catastrophic backtracking in a backtracking engine
    ("search_log", {"pattern": "(x+x+)+y"}),
    ("search_log", {"pattern": "(a)\\1"}),  # a backreference: not RE2, searched as text
    ("search_log", {"pattern": "a" * 2_000_000}),
    ("search_log", {"pattern": ""}),
    ("rollout_reliability", {"rollouts": 10**12}),
    ("rollout_reliability", {"rollouts": 5000}),  # past the float overflow of math.comb * p**k
    ("simulate_adjustment", {"changes": {"configs/c.yaml:rollouts_per_question": 1e12}}),
    ("simulate_adjustment", {"changes": {f"k{i}": 1.0 for i in range(5000)}}),
    ("summarize_reward_histogram", {"round": "x" * 1_000_000, "series": "y"}),
    ("read_config", {"file": "../../etc/passwd"}),
    ("trainer_metrics", {"series": "z" * 100_000}),
    ("no_such_tool", {}),
]


@pytest.fixture(scope="module")
def tool_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("tool_run")
    (root / "configs").mkdir()
    (root / "configs" / "c.yaml").write_text("rollouts_per_question: 4\nboundary_band: [0.4, 0.6]\n"
                                             "openai_key: sk-live-abcdefghijklmnop1234\nprivate_key: hunter2\n")
    (root / "train.log").write_text(BIG_LOG)
    return root


@pytest.mark.parametrize(("tool", "args"), TOOL_CASES, ids=[f"{t}-{i}" for i, (t, _) in enumerate(TOOL_CASES)])
def test_hostile_tool_calls(tool_run, tool, args):
    from tests.hostile import run_fn

    def call(out, err):
        from triage_agent.agent import tools
        from triage_agent.findings.facts import resolve
        from triage_agent.runs.load import load_run

        got = tools.call(resolve(load_run(tool_run)), tool, json.dumps(args))
        out.write(got.text)
        return 0

    res = run_fn(call, [tool], timeout=30)
    assert res.problems({0}, 1500.0) == [], (tool, res.stderr[-1000:], res.seconds)
    assert len(res.stdout) < 12_000  # bounded, whatever the argument's size
    assert "sk-live" not in res.stdout and "hunter2" not in res.stdout


def test_secrets_never_reach_the_model_or_the_report(tool_run, tmp_path):
    from triage_agent.agent import tools
    from triage_agent.findings.facts import resolve
    from triage_agent.runs.load import load_run

    facts = resolve(load_run(tool_run))
    text = tools.call(facts, "read_config", {}).text
    assert "sk-live" not in text and "hunter2" not in text and text.count("[redacted]") == 2
    assert tools.call(facts, "rollout_reliability", {"rollouts": 5000}).output["estimates"]["given"]["rollouts"] == 5000


# -- class 4: transport ------------------------------------------------------------------------------
def _raw_200(body: bytes, content_type: str = "application/json"):
    def write(h):
        h.send_response(200)
        h.send_header("Content-Type", content_type)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)
    return {"raw": write}


def _sse(lines: list[bytes], then_close: bool = True, forever: bytes | None = None):
    def write(h):
        import time as _t
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.end_headers()
        for line in lines:
            h.wfile.write(line)
            h.wfile.flush()
        t0 = _t.monotonic()
        while forever is not None and _t.monotonic() - t0 < 20:  # bounded: the test server stops by itself
            h.wfile.write(forever)
            h.wfile.flush()
            _t.sleep(0.2)
        if then_close:
            h.close_connection = True
    return {"raw": write}


def _trickle():
    def write(h):
        import time as _t
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", "100000")
        h.end_headers()
        t0 = _t.monotonic()
        while _t.monotonic() - t0 < 20:
            h.wfile.write(b" ")
            h.wfile.flush()
            _t.sleep(0.5)
    return {"raw": write}


def _chunk(text: str | None = None, finish: str | None = None) -> bytes:
    delta = {"content": text} if text is not None else {}
    obj = {"id": "s", "object": "chat.completion.chunk", "created": 0, "model": "m",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(obj)}\n\n".encode()


def _ok(text: str = "fine"):
    from tests.scripted_server import completion
    return completion(text)


TRANSPORT = {
    "invalid_json_200": ([_raw_200(b"{not json")], {3}),
    "empty_body_200": ([_raw_200(b"")], {3}),
    "choices_string": ([_raw_200(b'{"id": "x", "choices": "x", "object": "chat.completion", "created": 0, '
                                 b'"model": "m"}')], {3}),
    "message_null": ([_raw_200(b'{"id": "x", "choices": [{"index": 0, "message": null, "finish_reason": "stop"}], '
                               b'"object": "chat.completion", "created": 0, "model": "m"}')], {3}),
    "function_null": ([_raw_200(b'{"id": "x", "choices": [{"index": 0, "message": {"role": "assistant", '
                                b'"content": null, "tool_calls": [{"id": "c", "type": "function", "function": null}]},'
                                b' "finish_reason": "tool_calls"}], "object": "chat.completion", "created": 0, '
                                b'"model": "m"}')], {3}),
    "retry_after_negative": ([{"status": 429, "json": {"error": {"message": "slow down"}},
                               "headers": {"Retry-After": "-5"}}, "OK"], {0}),
    "retry_after_nan": ([{"status": 429, "json": {"error": {"message": "slow down"}},
                          "headers": {"Retry-After": "nan"}}, "OK"], {0}),
    "trickle": ([_trickle()], {3}),
}
STREAM = {
    "sse_not_json": ([_sse([_chunk("Hel"), b"data: {oops\n\n"])], {3}),
    "keepalives_forever": ([_sse([b": ping\n\n"], forever=b": ping\n\n")], {3}),
    "cut_halfway": ([_sse([_chunk("The filter "), _chunk("drops")])], {3}),
    "closed_without_done": ([_sse([_chunk("The filter "), _chunk("drops it.")])], {3}),
    "complete": ([_sse([_chunk("All "), _chunk("good.", "stop"), b"data: [DONE]\n\n"])], {0}),
}
RUN_DIR = Path(__file__).resolve().parent.parent / "sample_runs" / "few_rollouts"


# a usable answer (an answer that is not one exits 3 since issue 38): the retry cases end on it
VALID_ANSWER = json.dumps({"diagnosis": [{"cause": "c", "findings": ["rollouts.too_few"], "evidence": "e",
                                          "confidence": 0.5}], "adjustments": []})


def _script(items):
    return [_ok(VALID_ANSWER) if x == "OK" else x for x in items]


@pytest.mark.parametrize("name", sorted(TRANSPORT))
def test_hostile_endpoint_report(name, tmp_path):
    from tests.scripted_server import ScriptedServer

    items, exits = TRANSPORT[name]
    with ScriptedServer(_script(items) + [_ok()] * 3,
                        leftover_ok="good replies after the hostile one, for whatever retries the client makes") as srv:
        res = run(["report", str(RUN_DIR), "--json", "--no-save"],
                  env={"OPENAI_BASE_URL": srv.base_url, "TRIAGE_MODEL": "m", "TRIAGE_TIMEOUT": "3",
                       "XDG_STATE_HOME": str(tmp_path)}, timeout=40)
    assert res.problems(exits, LIMIT_MB) == [], (name, res.code, res.stderr[-1500:], res.seconds)
    if res.code == 3:
        assert res.stderr.strip().startswith("triage: ") and len(res.stderr.strip().splitlines()) == 1
        assert "timed out after 3 s" in res.stderr or name != "trickle"


@pytest.mark.parametrize("name", sorted(STREAM))
def test_hostile_endpoint_stream(name, tmp_path):
    from tests.scripted_server import ScriptedServer

    items, exits = STREAM[name]
    with ScriptedServer(_script(items) + [_sse([_chunk("again", "stop")])] * 3,
                        leftover_ok="good replies after the hostile one, for whatever retries the client makes") as srv:
        res = run(["ask", str(RUN_DIR), "why?", "--no-save"],
                  env={"OPENAI_BASE_URL": srv.base_url, "TRIAGE_MODEL": "m", "TRIAGE_TIMEOUT": "3",
                       "XDG_STATE_HOME": str(tmp_path)}, timeout=40)
    assert res.problems(exits, LIMIT_MB) == [], (name, res.code, res.stderr[-1500:], res.seconds)
    assert "again" not in res.stdout  # nothing is asked twice and printed twice
    if name in ("cut_halfway", "closed_without_done"):
        assert res.stdout.count("The filter") == 1 and "unfinished" in res.stderr


# -- class 6: apply ----------------------------------------------------------------------------------
def _report(run_path, adjustments):
    return {"schema": "triage.report/v1", "run": {"path": str(run_path)}, "adjustments": adjustments}


@pytest.fixture
def apply_run(tmp_path):
    root = tmp_path / "run"
    (root / "configs").mkdir(parents=True)
    (root / "configs" / "filter_config.yaml").write_text("filter:\n  easy_threshold: 0.4\n  rollouts_per_question: 4\n")
    (root / "filter_stats.jsonl").write_text("".join(json.dumps({"accuracy": a / 10, "kept": a < 4}) + "\n"
                                                     for a in range(11)))
    return root


APPLY_REPORTS = {
    "run_is_a_string": lambda run: {"schema": "triage.report/v1", "run": "x", "adjustments": []},
    "adjustments_not_a_list": lambda run: _report(run, 5),
    "adjustment_not_an_object": lambda run: _report(run, [5, "x", None]),
    "huge_integer": lambda run: _report(run, [{"file": "configs/filter_config.yaml",
                                               "key": "filter.easy_threshold", "to": int("9" * 401)}]),
    "deep_nesting": None,
    "not_json": None,
    "key_outside": lambda run: _report(run, [{"file": "../../etc/passwd", "key": "root", "to": 1}]),
    "long_strings": lambda run: _report(run, [{"file": "x" * 1_000_000, "key": "y" * 1_000_000, "to": 1}]),
}


@pytest.mark.parametrize("name", sorted(APPLY_REPORTS))
def test_hostile_reports_for_apply(apply_run, tmp_path, name):
    report = tmp_path / "r.json"
    if name == "deep_nesting":
        report.write_text('{"schema": "triage.report/v1", "run": ' + "[" * 100_000 + "]" * 100_000 + "}")
    elif name == "not_json":
        report.write_bytes(b"\xff\xfe{")
    else:
        report.write_text(json.dumps(APPLY_REPORTS[name](apply_run)))
    before = (apply_run / "configs" / "filter_config.yaml").read_text()
    res = run(["apply", str(report), "--in-place"])
    assert res.problems(EXITS, LIMIT_MB) == [], (name, res.code, res.stderr[-1000:])
    assert len(res.stderr) < 5000
    assert (apply_run / "configs" / "filter_config.yaml").read_text() == before
    assert not list(apply_run.rglob("*.bak"))


def test_in_place_refuses_a_hard_linked_config(apply_run, tmp_path):
    outside = tmp_path / "shared_config.yaml"
    os.link(apply_run / "configs" / "filter_config.yaml", outside)
    report = tmp_path / "r.json"
    report.write_text(json.dumps(_report(apply_run, [{"file": "configs/filter_config.yaml", "key": "filter.easy_threshold",
                                                      "to": 0.5, "from": 0.4}])))
    res = run(["apply", str(report), "--in-place"])
    assert res.code == 2 and "linked" in res.stderr
    assert "0.4" in outside.read_text() and not list(apply_run.rglob("*.bak"))


def test_a_failed_in_place_write_leaves_no_backup(apply_run, tmp_path):
    """The backup is written, then writing the edit fails (the file-size limit stops it one byte short):
    the original stays as it was and no .bak (or temporary file) is left behind."""
    config = apply_run / "configs" / "filter_config.yaml"
    report = tmp_path / "r.json"
    report.write_text(json.dumps(_report(apply_run, [{"file": "configs/filter_config.yaml",
                                                      "key": "filter.easy_threshold", "to": 0.45, "from": 0.4}])))
    from tests.hostile import run_fn

    def limited(out, err):
        import resource
        import signal as sig

        from rich.console import Console

        from triage_agent.cli import main
        sig.signal(sig.SIGXFSZ, sig.SIG_IGN)  # past the limit, write() fails with EFBIG instead of a signal
        size = config.stat().st_size
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))  # the copy fits, the longer edit does not
        return main(["apply", str(report), "--in-place"], stdout=Console(file=out), stderr=Console(file=err))

    before = config.read_text()
    res = run_fn(limited)
    assert res.code == 2 and "cannot write" in res.stderr, res.stderr
    assert config.read_text() == before
    assert sorted(p.name for p in config.parent.iterdir()) == ["filter_config.yaml"]


def test_apply_skips_unmet_and_refuses_a_stale_report(apply_run, tmp_path):
    report = tmp_path / "r.json"
    report.write_text(json.dumps(_report(apply_run, [
        {"file": "configs/filter_config.yaml", "key": "filter.easy_threshold", "to": 0.9, "from": 0.4,
         "meets_target": False}])))
    res = run(["apply", str(report)])
    assert res.code == 0 and res.stdout == "" and "does not reach the target" in res.stderr
    assert "+  easy_threshold: 0.9" in run(["apply", str(report), "--include-unmet"]).stdout
    stale = tmp_path / "s.json"
    stale.write_text(json.dumps(_report(apply_run, [
        {"file": "configs/filter_config.yaml", "key": "filter.easy_threshold", "to": 0.5, "from": 0.3}])))
    res = run(["apply", str(stale)])
    assert res.code == 2 and "filter.easy_threshold is 0.4 now" in res.stderr and "0.3" in res.stderr
    assert run(["apply", str(stale), "--force"]).code == 0
    assert "no such report" in run(["apply", str(tmp_path / "missing.json")]).stderr


# -- class 7: state files ----------------------------------------------------------------------------
def _good_answer():
    from tests.scripted_server import completion
    return completion(json.dumps({"diagnosis": [{"cause": "c", "findings": ["rollouts.too_few"], "evidence": "e",
                                                 "confidence": 0.5}], "adjustments": []}))


@pytest.mark.parametrize("state", ["clash", "corrupt_caps", "caps_wrong_shape", "deep_caps"])
def test_state_dir_troubles_cost_a_note_not_the_answer(tmp_path, state):
    from tests.scripted_server import ScriptedServer

    home = tmp_path / "state"
    if state == "clash":
        home.write_text("a file where the state dir should be")
    else:
        (home / "triage").mkdir(parents=True)
        text = {"corrupt_caps": "{oops", "caps_wrong_shape": '{"x|m": [1, 2], "y": 5}',
                "deep_caps": "[" * 100_000 + "]" * 100_000}[state]
        (home / "triage" / "capabilities.json").write_text(text)
    with ScriptedServer([_good_answer()]) as srv:
        res = run(["report", str(RUN_DIR), "--json"], env={"OPENAI_BASE_URL": srv.base_url, "TRIAGE_MODEL": "m",
                                                             "XDG_STATE_HOME": str(home)})
    assert res.problems({0}, LIMIT_MB) == [], (state, res.stderr[-1500:])
    doc = json.loads(res.stdout)
    assert doc["source"]["kind"] == "model" and doc["diagnosis"][0]["cause"] == "c"
    if state == "clash":
        assert any("transcript not saved" in n for n in doc["notes"])


def test_concurrent_writers_keep_every_update(tmp_path):
    from tests.hostile import run_fn
    from triage_agent.llm import capabilities

    def writer(i):
        def go(out, err):
            for j in range(20):
                capabilities.save(tmp_path, f"http://h{i}", f"m{j}", capabilities.Capabilities(tools=True))
            return 0
        return go

    import threading
    results = []
    threads = [threading.Thread(target=lambda i=i: results.append(run_fn(writer(i)))) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r.code == 0 for r in results)
    doc = json.loads((tmp_path / "capabilities.json").read_text())
    assert len(doc) == 80  # 4 writers x 20 endpoints: no update lost


def test_transcripts_of_one_second_do_not_collide(tmp_path):
    from triage_agent.state import unique_path

    paths = {unique_path(tmp_path, "report-run") for _ in range(50)}
    assert len(paths) == 50 and len(list(tmp_path.iterdir())) == 50


def test_a_corrupt_saved_chat_is_not_resumed(tmp_path):
    from triage_agent.commands.chat import start
    from triage_agent.llm.settings import Settings

    session, _ = start(RUN_DIR, Settings(), {"XDG_STATE_HOME": str(tmp_path)})
    for bad in ("{oops", '{"messages": 5}', '{"messages": [{"role": "evil", "content": 1}, 7]}',
                "[" * 100_000 + "]" * 100_000):
        session.path.parent.mkdir(parents=True, exist_ok=True)
        session.path.write_text(bad)
        assert session.resume() is False


# -- class 8: the last line of defence ----------------------------------------------------------------
@pytest.mark.parametrize("debug", ["0", "1"])
def test_an_internal_error_is_one_line_and_a_file(tmp_path, debug):
    from tests.hostile import run_fn

    def broken(out, err):
        from rich.console import Console

        import triage_agent.commands.inspect as mod
        from triage_agent.cli import main

        def bug(*a, **k):
            return {}["no such key"]
        mod.inspect = bug
        os.environ.update({"XDG_STATE_HOME": str(tmp_path), "TRIAGE_DEBUG": debug})
        return main(["inspect", str(RUN_DIR)], stdout=Console(file=out), stderr=Console(file=err, soft_wrap=True))

    res = run_fn(broken)
    assert res.code == 70
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("triage: internal error: KeyError") and "details in" in last
    (report,) = (tmp_path / "triage" / "crashes").glob("*.txt")
    assert "Traceback" in report.read_text() and "no such key" in report.read_text()
    assert ("Traceback" in res.stderr) is (debug == "1")


# -- classes 1 and 2: secrets and terminal injection, end to end --------------------------------------
ESC_CASES = ["\x1b]0;pwned\x07", "\x1b[2J", "\x1b]8;;http://evil/\x1b\\link\x1b]8;;\x1b\\", "\x9b31m", "\x07"]
SECRETS = ["sk-live-abcdefghij0123456789", "hf_abcdefghijklmnopqrstuvwx", "ghp_" + "a1" * 18,
           "AKIAIOSFODNN7EXAMPLE", "hunter2-private"]


@pytest.fixture
def hostile_run(tmp_path):
    root = tmp_path / "run[bold]x[/]\x1b]0;t\x07"
    (root / "configs").mkdir(parents=True)
    (root / "configs" / "train_config.yaml").write_text(
        "reward:\n  weights:\n    boundary: 1\n    format: 4\n"
        f"openai_key: {SECRETS[0]}\nhf_token: {SECRETS[1]}\nprivate_key: {SECRETS[4]}\nbeta: 0.04\n")
    log = ("step:1 - critic/score/mean:0.5\n"
           + "".join(f"step:{i} - critic/score/mean:0.5 - note:[red]{ESC_CASES[i % 5]}[/]\n" for i in range(2, 12))
           + f"Traceback (most recent call last):\n  File \"t.py\", line 1, in <module>\n"
           f"RuntimeError: [/] {ESC_CASES[0]} token {SECRETS[2]} aws {SECRETS[3]} [rank0]\n")
    (root / "train.log").write_text(log)
    return root


def _clean(text):
    return "\x1b" not in text and "\x07" not in text and "\x9b" not in text and not any(s in text for s in SECRETS)


@pytest.mark.parametrize("argv", [["inspect"], ["inspect", "--json"], ["report", "--offline"]])
def test_outside_text_is_printed_literally_and_secrets_never(hostile_run, argv):
    res = run([argv[0], str(hostile_run), *argv[1:]])
    assert res.problems({0}, LIMIT_MB) == [], res.stderr[-1000:]
    assert _clean(res.stdout) and _clean(res.stderr)
    if "--json" not in argv:
        assert "[rank0]" in res.stdout and "run[bold]x[/]" in res.stdout  # markup shown, not applied


def test_model_answers_and_requests_carry_no_escape_and_no_secret(hostile_run, tmp_path):
    from tests.scripted_server import ScriptedServer, completion, stream_chunks, tool_call

    evil = "[red]x[/red] \x1b]0;pwned\x07 \x1b[2J done"
    answer = json.dumps({"diagnosis": [{"cause": evil, "findings": [], "evidence": evil, "confidence": 0.5}],
                         "adjustments": [{"file": evil, "key": evil, "to": 1, "rationale": evil}]})
    with ScriptedServer([completion(tool_calls=[tool_call("read_config", "{}", "c1"),
                                                tool_call("search_log", '{"pattern": "token"}', "c2")]),
                         completion(answer), {"stream": stream_chunks(evil)}]) as srv:
        env = {"OPENAI_BASE_URL": srv.base_url, "TRIAGE_MODEL": "m", "XDG_STATE_HOME": str(tmp_path)}
        rep = run(["report", str(hostile_run)], env=env)
        ask = run(["ask", str(hostile_run), "why?"], env=env)
        bodies = json.dumps(srv.requests)
    for res in (rep, ask):
        assert res.problems({0}, LIMIT_MB) == [], res.stderr[-1000:]
        assert _clean(res.stdout) and _clean(res.stderr)
    assert "[red]x[/red]" in rep.stdout and "\\x1b]0;pwned\\x07" in rep.stdout.replace("\n", "")
    assert not any(s in bodies for s in SECRETS)
    for transcript in (tmp_path / "triage" / "transcripts").glob("*.json"):
        assert not any(s in transcript.read_text() for s in SECRETS)


def test_unreadable_files_are_reported_not_fatal():
    """As a normal user: a config and a log the user may not read become parse errors; the rest is read."""
    import shutil
    import tempfile

    from tests.hostile import run_fn

    base = Path(tempfile.mkdtemp(dir="/tmp"))
    os.chmod(base, 0o755)
    root = base / "run"
    (root / "configs").mkdir(parents=True)
    (root / "configs" / "secret_config.yaml").write_text("a: 1\n")
    (root / "train.log").write_text("step:1 - critic/score/mean:0.5\n")
    (root / "trainer_state.json").write_text(json.dumps({"log_history": [{"step": 1, "loss": 0.1}]}))
    for p in (root, root / "configs"):
        os.chmod(p, 0o755)
    os.chmod(root / "trainer_state.json", 0o644)
    os.chmod(root / "configs" / "secret_config.yaml", 0o000)
    os.chmod(root / "train.log", 0o000)

    def as_nobody(out, err):
        import io

        from rich.console import Console

        from triage_agent.cli import main
        main(["inspect", str(RUN_DIR), "--json"], stdout=Console(file=io.StringIO()), stderr=Console(file=io.StringIO()))
        os.setgid(65534)
        os.setuid(65534)
        return main(["inspect", str(root), "--json"], stdout=Console(file=out), stderr=Console(file=err))

    try:
        res = run_fn(as_nobody)
    finally:
        shutil.rmtree(base)
    assert res.problems({0}, LIMIT_MB) == [], res.stderr[-1500:]
    doc = json.loads(res.stdout)
    errors = next(f for f in doc["findings"] if f["id"] == "data.parse_errors")["evidence"]["first"]
    assert any("secret_config.yaml" in e and "Permission denied" in e for e in errors), errors
    assert any("train.log" in e and "Permission denied" in e for e in errors), errors


def test_doctor_shows_a_hostile_server_error_literally(tmp_path):
    from tests.scripted_server import ScriptedServer, error

    evil = "[bold red]boom[/] \x1b]0;pwned\x07 Bearer sk-live-abcdefghijklmnopqrst"
    with ScriptedServer([error(400, evil)] * 8, leftover_ok="doctor stops at the first refused step") as srv:
        res = run(["doctor"], env={"OPENAI_BASE_URL": srv.base_url, "TRIAGE_MODEL": "scripted-model",
                                   "XDG_STATE_HOME": str(tmp_path)})
    assert res.problems({0, 3}, LIMIT_MB) == [], res.stderr
    assert "\x1b" not in res.stdout and "sk-live" not in res.stdout and "red]boom[/]" in res.stdout  # shown, not styled
