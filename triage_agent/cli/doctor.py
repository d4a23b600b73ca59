"""`triage doctor`: check the model endpoint step by step."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from triage_agent.cli.base import Command, emit, endpoint_flags, settings_from

if TYPE_CHECKING:
    from rich.console import Console


def arguments(sp: argparse.ArgumentParser) -> None:
    endpoint_flags(sp, sends=False)
    sp.add_argument("--json", action="store_true", help="print the checks as JSON")


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    import os

    from triage_agent.commands.doctor import doctor

    return emit(out, args.json, doctor(settings_from(args), dict(os.environ)))


COMMAND = Command(
    "doctor", "check the model endpoint step by step and say what to fix",
    "Check settings, reachability, key, model, chat, tool calls, JSON-schema output and streaming; remember the "
    "endpoint's capabilities for later runs.",
    "example: OPENAI_BASE_URL=http://127.0.0.1:8080/v1 triage doctor --model qwen2.5-7b",
    arguments, run, order=50)
