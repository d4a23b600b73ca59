"""`triage mcp`: triage's tools for IDE agents over the Model Context Protocol."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from triage_agent.cli.base import Command, literal
from triage_agent.errors import BadInput
from triage_agent.extras import install_hint

# the clients --print-config knows (commands/mcp.py has their snippets); here so --help imports no SDK
CLIENTS = ("claude", "codex", "cursor", "vscode", "zed", "continue", "gemini", "windsurf", "cline", "devin")

if TYPE_CHECKING:
    from rich.console import Console


def arguments(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--root", action="append", metavar="DIR",
                    help="a folder the server may read (repeatable; default: the working directory)")
    sp.add_argument("--allow-write", action="store_true",
                    help="offer apply_adjustments, which edits config files inside a run (after a diff)")
    sp.add_argument("--http", metavar="HOST:PORT", help="serve Streamable HTTP instead of stdio")
    sp.add_argument("--allow-remote", action="store_true", help="allow --http on a non-loopback address")
    sp.add_argument("--print-config", choices=CLIENTS, metavar="CLIENT",
                    help=f"print the registration snippet for {', '.join(CLIENTS[:-1])} or {CLIENTS[-1]}, and exit")


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    import importlib.util
    from pathlib import Path

    roots = [Path(r).expanduser() for r in (args.root or ["."])]
    for r in roots:
        if not r.is_dir():
            raise BadInput(f"{r}: no such folder (--root)")
    if args.print_config:
        from triage_agent.commands.mcp import client_config

        if importlib.util.find_spec("mcp") is None:  # the server the snippet names would exit at once
            raise BadInput(f"--print-config: the MCP SDK is missing, so the server would not start: {install_hint('mcp')}")
        where, snippet = client_config(args.print_config, [r.resolve() for r in roots])
        err.print(literal(f"# put this in {where}"))
        out.file.write(snippet)
        return 0
    if importlib.util.find_spec("mcp") is None:
        raise BadInput(f"triage mcp needs the MCP SDK: {install_hint('mcp')}")
    from triage_agent.commands import mcp

    if args.http:
        return mcp.serve_http(roots, args.allow_write, args.http, args.allow_remote, None,
                              lambda line: err.print(literal(line)), lambda line: _to_terminal(err, line))
    return mcp.serve_stdio(roots, args.allow_write)


def _to_terminal(err: Console, line: str) -> None:
    """A generated secret, written once to the terminal that started the server: past the masking every other
    line goes through, and refused when stderr is no terminal (a log file would keep it)."""
    raw = getattr(err.file, "raw", err.file)  # under redact.MaskedStream
    if not (hasattr(raw, "isatty") and raw.isatty()):
        raise BadInput("TRIAGE_MCP_TOKEN is not set and stderr is not a terminal to show a generated token on: "
                       "set TRIAGE_MCP_TOKEN to the token clients send")
    raw.write(line + "\n")
    raw.flush()


COMMAND = Command(
    "mcp", "serve triage's tools to IDE agents over the Model Context Protocol",
    "Serve triage's deterministic tools (inspect_run, run_overview, trainer_metrics, search_log, "
    "simulate_adjustment, ...) to an IDE agent over MCP: stdio by default, Streamable HTTP with --http. It reads "
    "only under its roots and never writes unless --allow-write. Register it with the snippet --print-config "
    "prints: Claude Code (.mcp.json), Codex CLI (~/.codex/config.toml), Cursor (.cursor/mcp.json), VS Code "
    "(.vscode/mcp.json), Zed (settings.json), Continue (.continue/mcpServers/), Gemini CLI (~/.gemini/settings.json), "
    "Windsurf (~/.codeium/windsurf/mcp_config.json), Cline (cline_mcp_settings.json), Devin (Add Your Own).",
    """example: triage mcp --root ~/runs   (stdio, for an IDE agent)
         triage mcp --print-config claude   (.mcp.json for Claude Code; also codex, cursor, vscode, zed,
                                             continue, gemini, windsurf, cline, devin)
         triage mcp --http 127.0.0.1:8765   (Streamable HTTP with a bearer token, TRIAGE_MCP_TOKEN)""",
    arguments, run, order=90, consoles_on_use=True)
