"""`triage mcp` against hostile runs (issue 24): a folder chain deeper than Python's recursion limit, refused
resources, a run with thousands of config files, a FIFO inside a run."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import time

import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402

from tests.conftest import SAMPLES  # noqa: E402
from tests.test_mcp import call, text  # noqa: E402 - the MCP client helpers, one copy
from triage_agent.commands.mcp import build_server  # noqa: E402


def test_a_folder_chain_deeper_than_the_recursion_limit(tmp_path):
    """Before: the run's newest-file stamp walked it with rglob: RecursionError at ~1,000 levels."""
    run = tmp_path / "root" / "run"
    shutil.copytree(SAMPLES / "trl_healthy", run)
    os.chdir(run)  # build the chain relative to each level: absolute paths would pass PATH_MAX
    try:
        for _ in range(1100):
            os.mkdir("d")
            os.chdir("d")
    finally:
        os.chdir(tmp_path)
    try:
        result = call(build_server([tmp_path / "root"]), "inspect_run", {"run": "run"})
    finally:
        _remove_chain(run)
    assert not result.is_error, text(result)
    assert json.loads(text(result))["kind"]


def _remove_chain(top) -> None:
    """Remove the d/d/d/... chain below `top` from the bottom up (shutil.rmtree recurses, and would fail)."""
    os.chdir(top)
    depth = 0
    while os.path.isdir("d"):
        os.chdir("d")
        depth += 1
    for _ in range(depth):
        os.chdir("..")
        os.rmdir("d")
    os.chdir(top.parent)


def test_a_refused_resource_is_its_own_message_without_a_traceback(tmp_path, caplog):
    """Before: a path outside the roots reached the client as a generic error, with a traceback in the log."""
    (tmp_path / "root").mkdir()
    shutil.copytree(SAMPLES / "trl_healthy", tmp_path / "outside")
    os.symlink(tmp_path / "outside", tmp_path / "root" / "link_out")
    server = build_server([tmp_path / "root"])

    async def go():
        async with Client(server) as c:
            return await c.read_resource("run://link_out/report")

    with caplog.at_level(logging.INFO), pytest.raises(Exception) as got:
        asyncio.run(go())
    assert "outside the folders this server may read" in " ".join(_leaves(got.value))
    assert "Traceback" not in caplog.text and not any(r.exc_info for r in caplog.records)


def _leaves(exc: BaseException) -> list[str]:
    """The messages of an exception, through the task groups the client wraps it in."""
    subs = getattr(exc, "exceptions", None)
    return [m for e in subs for m in _leaves(e)] if subs else [str(exc)]


def test_read_config_stays_bounded_with_thousands_of_config_files(tmp_path):
    """Before: every config file was listed (the answer grew with the number of files)."""
    run = tmp_path / "root" / "run"
    shutil.copytree(SAMPLES / "trl_healthy", run)
    (run / "configs").mkdir()
    for i in range(2000):
        (run / "configs" / f"part_{i:04d}.yaml").write_text(f"key_{i}: {i}\nother_{i}: {i}.5\n")
    result = call(build_server([tmp_path / "root"]), "read_config", {"run": "run"})
    assert not result.is_error, text(result)
    doc = json.loads(text(result))
    assert len(doc["configs"]) == 12 and doc["config_files_left_out"] > 1900
    assert len(text(result)) < 20_000


def test_a_fifo_in_a_run_does_not_hang_a_tool(tmp_path):
    """Before: listing the runs sniffed the FIFO and blocked in open() (the server hung)."""
    for name in ("a", "b"):
        shutil.copytree(SAMPLES / "trl_healthy", tmp_path / "root" / name)
    os.mkfifo(tmp_path / "root" / "a" / "metrics.jsonl")
    t0 = time.monotonic()
    server = build_server([tmp_path / "root"])
    listed = call(server, "list_runs", {"run": "."})
    inspected = call(server, "inspect_run", {"run": "a"})
    assert not listed.is_error and not inspected.is_error, (text(listed), text(inspected))
    assert json.loads(text(listed))["total"] == 2
    assert time.monotonic() - t0 < 60


def test_a_server_whose_root_holds_a_fifo_answers_and_exits_when_its_stdin_closes(tmp_path):
    """Before: list_runs over a root with a FIFO hung in the split pass, so the server never read its closed
    stdin and never exited."""
    import subprocess
    import sys

    root = tmp_path / "runs"
    shutil.copytree(SAMPLES / "trl_healthy", root / "a")
    os.mkfifo(root / "a" / "pipe.log")
    proc = subprocess.Popen([sys.executable, "-m", "triage_agent", "mcp", "--root", str(root)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env={**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")})
    try:
        msgs = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                            "clientInfo": {"name": "t", "version": "0"}}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                 "params": {"name": "list_runs", "arguments": {"run": "."}}}]
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in msgs).encode())
        proc.stdin.flush()
        answers = [json.loads(proc.stdout.readline()) for _ in range(2)]
        assert answers[1]["id"] == 2 and "result" in answers[1]
        proc.stdin.close()  # the IDE went away
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
