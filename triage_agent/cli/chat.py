"""`triage chat`: an interactive session about a run."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from triage_agent.cli.base import Command, endpoint_flags, settings_from

if TYPE_CHECKING:
    from rich.console import Console


def arguments(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("run", help="the run folder")
    sp.add_argument("--resume", action="store_true", help="continue the last conversation about this run")
    endpoint_flags(sp, sends=False)


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    import os

    from triage_agent.commands.chat import start
    from triage_agent.render.chat import repl

    session, status = start(args.run, settings_from(args), dict(os.environ), args.resume)
    _ctrl_c_stops_answers()
    return repl(session, out, status)


def _ctrl_c_stops_answers() -> None:
    """A process started with SIGINT ignored (a background job of a non-interactive shell, some launchers) gets
    no KeyboardInterrupt from Python, and Ctrl-C in the chat would do nothing: the chat says Ctrl-C stops an
    answer, so it asks for the signal back."""
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


COMMAND = Command(
    "chat", "an interactive session about a run",
    "Chat with the configured model about one run; slash commands work without one.",
    "example: triage chat sample_runs/boundary_collapse --resume",
    arguments, run, order=40)
