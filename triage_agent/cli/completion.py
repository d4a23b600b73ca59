"""`triage completion`: print a shell completion script."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from triage_agent.cli.base import Command

if TYPE_CHECKING:
    from rich.console import Console


def arguments(sp: argparse.ArgumentParser) -> None:
    from triage_agent.commands.completion import SHELLS

    sp.add_argument("shell", choices=SHELLS, help="the shell to complete in")


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from triage_agent.cli import parser
    from triage_agent.commands.completion import completion

    script = completion(args.shell, parser())
    out.file.write(script.text)  # the script as it is: no markup, no wrapping
    return 0


COMMAND = Command(
    "completion", "print a shell completion script (bash, zsh, fish)",
    "Print a completion script for bash, zsh or fish, made from triage's own commands and options.",
    "example: eval \"$(triage completion bash)\"   # in ~/.bashrc; fish: triage completion fish | source",
    arguments, run, order=90)
