"""`triage ask`: one question about a run, the answer streamed (for IDE terminals)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from triage_agent.cli.base import (
    Command,
    endpoint_flags,
    literal,
    neutralise,
    settings_from,
    spinner,
    usage_line,
    write_json,
)

if TYPE_CHECKING:
    from rich.console import Console


def arguments(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("run", help="the run folder")
    sp.add_argument("question", nargs="?", help="the question (else read from stdin)")
    sp.add_argument("--vs", action="append", metavar="RUN",
                    help="another run to compare with (repeatable); the model gets the compare_runs tool")
    endpoint_flags(sp)


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    import os

    from triage_agent.commands.ask import ask
    from triage_agent.commands.report import DryRun
    from triage_agent.render.terminal import checked_changes

    settings = settings_from(args)
    question = args.question if args.question is not None else (sys.stdin.read() if not sys.stdin.isatty() else "")
    streamed: list[str] = []
    waiting = spinner(err, "waiting for the model")

    def on_text(chunk: str) -> None:
        waiting.__exit__(None, None, None)  # the answer has started: the spinner goes
        streamed.append(chunk)
        out.file.write(neutralise(chunk))
        out.file.flush()

    def on_tool(ev: Any) -> None:
        err.print(literal(f"→ {ev.name}({ev.arguments[:80]}) {ev.seconds * 1000:.0f} ms", "dim"))

    with waiting:
        result = ask(args.run, question, settings, on_text=on_text, on_tool=on_tool, dry_run=args.dry_run,
                     save=not args.no_save, env=dict(os.environ), vs=args.vs)
    if isinstance(result, DryRun):
        write_json(out, result.document())
        return 0
    for note in result.notes:
        err.print(literal(f"note: {note}"))
    if not streamed:  # the endpoint could not stream: print the whole answer now
        out.file.write(neutralise(result.answer))
    out.file.write("\n")
    out.file.flush()
    for part in checked_changes(result.changes):
        out.print(part)
    usage_line(result.source, err)
    return 0


COMMAND = Command(
    "ask", "ask a question about a run (answer streamed)",
    "Ask the configured model a question about one run; the question may come on stdin.",
    'example: triage ask sample_runs/boundary_collapse "why does the boundary reward oscillate?"',
    arguments, run, order=30)
