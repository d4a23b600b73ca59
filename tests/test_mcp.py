"""`triage mcp` driven through the MCP SDK's own client: in memory for every tool, once over real stdio with
`triage mcp` as a subprocess, and over Streamable HTTP with and without the bearer token."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from tests.conftest import REPO, SAMPLES  # noqa: E402
from triage_agent.agent import tools  # noqa: E402
from triage_agent.commands.mcp import build_server, client_config  # noqa: E402


def tree_digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(root)).encode() + p.read_bytes())
    return h.hexdigest()


def call(server, name, args):
    async def go():
        async with Client(server) as c:
            return await c.call_tool(name, args)
    return asyncio.run(go())


def text(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


ARGS = {"summarize_reward_histogram": {"round": "selector_round3", "series": "boundary"},
        "diff_rounds": {"round_a": "selector_round2", "round_b": "selector_round3"},
        "simulate_adjustment": {"changes": {"easy_threshold": 0.45}}, "search_log": {"pattern": "step"},
        "trainer_metrics": {}, "read_config": {}}


def test_every_agent_tool_is_served_with_the_same_schema():
    server = build_server([SAMPLES])

    async def go():
        async with Client(server) as c:
            return (await c.list_tools()).tools
    listed = {t.name: t for t in asyncio.run(go())}
    assert {"list_runs", "inspect_run"} <= set(listed)
    for fn in tools.available().values():
        if fn.__name__ in ("list_findings", "compare_runs"):  # served as inspect_run, and over a list of runs
            continue
        ours = tools.function_schema(fn)["function"]
        theirs = listed[fn.__name__]
        assert theirs.description.startswith(ours["description"][:60]), fn.__name__
        props = theirs.input_schema["properties"]
        assert list(props)[0] == "run" and set(props) - {"run"} == set(ours["parameters"]["properties"]), fn.__name__
        assert "run" in theirs.input_schema["required"]
    assert "apply_adjustments" not in listed  # no writing without --allow-write


@pytest.mark.parametrize("name", [name for name in tools.REGISTRY if name not in ("list_findings", "compare_runs")])
def test_each_tool_answers_bounded_and_leaves_the_run_untouched(name):
    run = "boundary_collapse" if name not in ("trainer_metrics", "search_log") else "verl_kl_explosion"
    before = tree_digest(SAMPLES / run)
    result = call(build_server([SAMPLES]), name, {"run": run, **ARGS.get(name, {})})
    out = text(result)
    assert len(out) / 4 < 1500  # the agent's bound
    if not result.is_error:
        assert "source" in json.loads(out)
    assert tree_digest(SAMPLES / run) == before


def test_inspect_run_gives_the_planted_findings_and_list_runs_lists_them():
    server = build_server([SAMPLES])
    doc = json.loads(text(call(server, "inspect_run", {"run": "trl_oom_crash"})))
    assert [f["id"] for f in doc["findings"] if f["severity"] == "high"] == ["log.crash"]
    assert doc["findings"][0]["evidence"]["kind"] == "oom" and "out of memory" in doc["fixes"]["log.crash"]
    runs = json.loads(text(call(server, "list_runs", {"run": "."})))
    assert runs["total"] == len([p for p in SAMPLES.iterdir() if p.is_dir()])


@pytest.mark.parametrize("path", ["../", "..", "/etc", "boundary_collapse/../../", "link_out"])
def test_paths_outside_the_roots_are_refused(tmp_path, path):
    root = tmp_path / "root"
    (root / "run").mkdir(parents=True)
    (root / "run" / "train.log").write_text("step:1 - critic/score/mean:0.5\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "train.log").write_text("step:1 - critic/score/mean:0.9\n")
    os.symlink(outside, root / "link_out")
    server = build_server([root])
    for tool in ("inspect_run", "run_overview", "search_log"):
        args = {"run": path} | ({"pattern": "step"} if tool == "search_log" else {})
        result = call(server, tool, args)
        assert result.is_error and "outside the folders" in text(result), (tool, text(result))
    assert not call(server, "inspect_run", {"run": "run"}).is_error


def test_resources_and_the_prompt():
    server = build_server([SAMPLES])

    async def go():
        async with Client(server) as c:
            report = await c.read_resource("run://few_rollouts/report")
            findings = await c.read_resource("run://few_rollouts/findings")
            prompts = (await c.list_prompts()).prompts
            prompt = await c.get_prompt("triage this run", {"run": "few_rollouts"})
            return report, findings, prompts, prompt
    report, findings, prompts, prompt = asyncio.run(go())
    assert json.loads(report.contents[0].text)["schema"] == "triage.report/v1"
    assert json.loads(findings.contents[0].text)["findings"][0]["id"] == "rollouts.too_few"
    assert [p.name for p in prompts] == ["triage this run"]
    assert "inspect_run" in prompt.messages[0].content.text and "few_rollouts" in prompt.messages[0].content.text


def test_apply_adjustments_only_with_allow_write(tmp_path):
    import shutil

    run = tmp_path / "few_rollouts"
    shutil.copytree(SAMPLES / "few_rollouts", run)
    server = build_server([tmp_path], allow_write=True)
    shown = json.loads(text(call(server, "apply_adjustments", {"run": "few_rollouts",
                                                               "changes": {"rollouts_per_question": 8}})))
    assert "-  rollouts_per_question: 4" in shown["diff"] and shown["written"] == []
    assert "rollouts_per_question: 4" in (run / "configs" / "filter_config.yaml").read_text()
    done = json.loads(text(call(server, "apply_adjustments", {"run": "few_rollouts",
                                                              "changes": {"rollouts_per_question": 8}, "write": True})))
    assert done["written"] and "rollouts_per_question: 8" in (run / "configs" / "filter_config.yaml").read_text()


def test_over_real_stdio(tmp_path):
    params = StdioServerParameters(command=sys.executable, args=["-m", "triage_agent", "mcp", "--root", str(SAMPLES)],
                                   env={"XDG_STATE_HOME": str(tmp_path), "PATH": os.environ.get("PATH", "")},
                                   cwd=str(REPO))

    async def go():
        async with Client(params) as c:
            names = [t.name for t in (await c.list_tools()).tools]
            result = await c.call_tool("inspect_run", {"run": "swift_zero_variance"})
            return names, result
    names, result = asyncio.run(go())
    assert "inspect_run" in names and "trainer_metrics" in names
    ids = [f["id"] for f in json.loads(text(result))["findings"]]
    assert "reward.zero_variance_groups" in ids


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_over_http_with_a_bearer_token(tmp_path):
    import httpx

    port = _free_port()
    env = {**os.environ, "TRIAGE_MCP_TOKEN": "t0k3n-for-tests", "XDG_STATE_HOME": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "triage_agent", "mcp", "--root", str(SAMPLES), "--http",
                             f"127.0.0.1:{port}"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        for _ in range(100):
            try:
                anonymous = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=2)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        assert anonymous.status_code == 401

        async def go():
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            async with httpx2.AsyncClient(headers={"Authorization": "Bearer t0k3n-for-tests"}, timeout=30) as http, \
                    Client(streamable_http_client(url, http_client=http)) as c:
                return await c.call_tool("inspect_run", {"run": "few_rollouts"})
        result = asyncio.run(go())
        assert not result.is_error and "rollouts.too_few" in text(result)
    finally:
        proc.terminate()
        proc.wait(10)


def test_http_refuses_a_remote_address_without_allow_remote():
    res = subprocess.run([sys.executable, "-m", "triage_agent", "mcp", "--http", "0.0.0.0:8765"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "--allow-remote" in res.stderr


# Each client's documented format (the client's own MCP documentation): where the entry sits, and the keys an
# stdio entry may have there. A snippet with another shape is ignored or refused by that client.
def _entry(client: str, snippet: str) -> dict:
    if client == "codex":  # developers.openai.com/codex/mcp: [mcp_servers.NAME], command, args, startup_timeout_sec
        import tomllib

        return tomllib.loads(snippet)["mcp_servers"]["triage"]
    if client == "continue":  # docs.continue.dev: a block file with name, version, schema v1 and a list of servers
        import yaml

        block = yaml.safe_load(snippet)
        assert block["schema"] == "v1" and block["name"] and block["version"]
        (entry,) = block["mcpServers"]
        assert entry["name"] == "triage"
        return {k: v for k, v in entry.items() if k != "name"}
    doc = json.loads(snippet)
    if client == "vscode":  # code.visualstudio.com: "servers", each with a "type"
        entry = doc["servers"]["triage"]
        assert entry.pop("type") == "stdio"
        return entry
    if client == "zed":  # zed.dev/docs/ai/mcp: "context_servers" in settings.json, command, args, env
        return doc["context_servers"]["triage"]
    if client == "devin":  # docs.devin.ai: the Add Your Own form's STDIO fields
        assert doc["transport"] == "STDIO" and doc["name"] == "triage"
        return {k: v for k, v in doc.items() if k not in ("transport", "name")}
    # Claude Code, Cursor, Gemini CLI, Windsurf, Cline: "mcpServers"
    return doc["mcpServers"]["triage"]


ALLOWED_KEYS = {"claude": {"command", "args"}, "cursor": {"command", "args"}, "gemini": {"command", "args"},
                "windsurf": {"command", "args"}, "vscode": {"command", "args"}, "zed": {"command", "args", "env"},
                "codex": {"command", "args", "startup_timeout_sec"}, "continue": {"command", "args"},
                "cline": {"command", "args", "disabled", "autoApprove"}, "devin": {"command", "args", "env"}}


@pytest.mark.parametrize("client", list(ALLOWED_KEYS))
def test_print_config_for_each_client(client):
    from triage_agent.cli.mcp import CLIENTS
    from triage_agent.commands.mcp import CLIENTS as SNIPPETS

    assert set(CLIENTS) == set(SNIPPETS) == set(ALLOWED_KEYS)
    where, snippet = client_config(client, [Path("/runs")])
    entry = _entry(client, snippet)
    assert set(entry) == ALLOWED_KEYS[client], entry
    if client == "devin":  # Devin runs the server on its own machine: triage installed there, by its command
        assert entry["command"] == "triage" and entry["args"] == ["mcp", "--root", "/runs"]
    else:  # the absolute interpreter, not a bare `triage` an IDE outside the venv would not find
        assert Path(entry["command"]).is_absolute() and Path(entry["command"]).samefile(sys.executable)
        assert entry["args"] == ["-m", "triage_agent", "mcp", "--root", "/runs"]
    if client == "codex":
        assert entry["startup_timeout_sec"] >= 30  # Codex's default 10 s is shorter than triage's start on a busy machine
    if client == "cline":
        assert entry["disabled"] is False and entry["autoApprove"] == []
    readme = (REPO / "README.md").read_text()
    assert where.split()[0] in readme


def test_print_config_refuses_in_one_line_without_the_sdk():
    code = ("import sys; sys.modules['mcp'] = None\n"
            "from triage_agent.cli import main\n"
            "sys.exit(main(['mcp', '--print-config', 'claude']))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert res.returncode == 2 and res.stdout == "", (res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "MCP SDK" in lines[0] and "rl-triage[mcp]" in lines[0]


def test_unknown_and_mistyped_arguments_are_refused_in_one_line():
    server = build_server([SAMPLES])
    got = call(server, "trainer_metrics", {"run": "trl_healthy", "serie": "entropy"})  # a misspelt `series`
    assert got.is_error and text(got) == "trainer_metrics takes no argument 'serie'; its arguments: run, series"
    got = call(server, "list_runs", {"folder": "."})  # the old name: one name for the run everywhere now
    assert got.is_error and "its arguments: run" in text(got)
    got = call(server, "series_window", {"run": "trl_healthy", "around_step": "ten"})
    assert got.is_error and text(got) == "series_window: the argument 'around_step' must be integer"
    got = call(server, "search_log", {"run": "trl_healthy"})
    assert got.is_error and text(got) == "search_log: the argument 'pattern' is required"
    for result in (got,):
        assert "pydantic" not in text(result) and "\n" not in text(result)


def test_every_run_argument_is_named_run():
    server = build_server([SAMPLES])

    async def go():
        async with Client(server) as c:
            return (await c.list_tools()).tools
    for t in asyncio.run(go()):
        props = set(t.input_schema.get("properties", {}))
        assert not props & {"folder", "path", "run_folder", "dir"}, (t.name, props)
        assert "run" in props or t.name == "compare_runs" and "runs" in props, (t.name, props)


def test_resources_take_the_absolute_paths_the_tools_take(tmp_path):
    server = build_server([SAMPLES])
    absolute = str((SAMPLES / "few_rollouts").resolve())

    async def go():
        async with Client(server) as c:
            tool = json.loads(text(await c.call_tool("inspect_run", {"run": absolute})))
            res = json.loads((await c.read_resource(f"run://{absolute}/findings")).contents[0].text)
            try:
                await c.read_resource("run:///etc/findings")
                outside = None
            except Exception as exc:  # the client raises the server's error
                outside = str(exc)
            return tool, res, outside
    tool, res, outside = asyncio.run(go())
    assert [f["id"] for f in res["findings"]] == [f["id"] for f in tool["findings"]]
    assert outside is not None and "outside the folders" in outside


def test_the_printed_command_starts_a_server_from_anywhere(tmp_path):
    """Start exactly what --print-config prints, from a folder outside the project and with a PATH that has no
    triage on it (as an IDE launched from the desktop would), and talk MCP to it."""
    proc = subprocess.run([sys.executable, "-m", "triage_agent", "mcp", "--root", str(SAMPLES), "--print-config",
                           "claude"], capture_output=True, text=True, timeout=60, check=True)
    entry = json.loads(proc.stdout)["mcpServers"]["triage"]
    params = StdioServerParameters(command=entry["command"], args=entry["args"], cwd=str(tmp_path),
                                   env={"XDG_STATE_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})

    async def go():
        async with Client(params) as c:
            return [t.name for t in (await c.list_tools()).tools]
    assert "inspect_run" in asyncio.run(go())


def test_compare_runs_over_mcp_and_list_runs_splits_like_inspect():
    server = build_server([SAMPLES])
    got = json.loads(text(call(server, "compare_runs", {"runs": ["trl_healthy", "trl_entropy_collapse"],
                                                        "series": "entropy"})))
    assert got["config"] == [{"key": "temperature", "values": [1.0, 0.7]}]
    assert got["findings"]["only_in"][1]["ids"] == ["policy.entropy_collapse"]
    runs = json.loads(text(call(server, "list_runs", {"run": "."})))
    assert runs["total"] == sum(1 for p in SAMPLES.iterdir() if p.is_dir())  # one per sample run folder


def _initialize_over_stdio(first: list[str], version: str) -> dict:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    proc = subprocess.run([sys.executable, "-m", "triage_agent", "mcp", "--root", str(SAMPLES)],
                          input="\n".join([*first, json.dumps(init)]) + "\n", capture_output=True, text=True,
                          timeout=300, cwd=REPO)
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["id"] for r in replies] == [*range(len(first)), 1][-len(replies):] and len(replies) == len(first) + 1
    return replies[-1]


@pytest.mark.parametrize("version", ["2024-11-05", "2025-11-25", "2099-01-01"])
def test_initialize_answered_early_is_the_sdk_s_own_answer(version):
    """The first `initialize` is answered before the SDK is imported; after a ping it is the SDK's session that
    answers it. Both answers are the same, for each revision (an unknown one: the SDK's answer both times)."""
    early = _initialize_over_stdio([], version)
    sdk = _initialize_over_stdio(['{"jsonrpc": "2.0", "id": 0, "method": "ping"}'], version)
    assert early == sdk
    assert early["result"]["serverInfo"]["name"] == "triage"


def test_the_early_revisions_are_the_sdk_s_handshake_revisions():
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    from triage_agent.commands.mcp import EARLY_VERSIONS

    assert set(EARLY_VERSIONS) <= set(HANDSHAKE_PROTOCOL_VERSIONS)


def test_a_first_line_that_is_not_initialize_is_left_to_the_sdk():
    from triage_agent.commands.mcp import early_initialize

    ok = {"jsonrpc": "2.0", "id": 3, "method": "initialize",
          "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    assert early_initialize(json.dumps(ok).encode()) is not None
    for bad in (b"", b"{", b"[]", json.dumps({**ok, "method": "ping"}).encode(), json.dumps({**ok, "id": True}).encode(),
                json.dumps({**ok, "params": {**ok["params"], "clientInfo": {"name": 1, "version": "1"}}}).encode(),
                json.dumps({**ok, "params": {**ok["params"], "protocolVersion": "2099-01-01"}}).encode()):
        assert early_initialize(bad) is None, bad
