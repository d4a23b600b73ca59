"""The view registered for each result type: what `emit` (cli/base.py) calls when a command's result is shown in
the terminal rather than written as JSON. One table, so a new result type is one line here beside its view."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from rich.console import Console

View = Callable[[Any, Console], None]


@cache
def views() -> dict[type, View]:
    from triage_agent.commands.doctor import DoctorResult
    from triage_agent.commands.eval import EvalResult
    from triage_agent.commands.sweep import SweepResult
    from triage_agent.comparison import Comparison
    from triage_agent.render import compare, evaluation, sweep, terminal
    from triage_agent.report import Report

    return {Report: terminal.render, SweepResult: sweep.render, Comparison: compare.render,
            EvalResult: evaluation.render, DoctorResult: terminal.doctor_view}


def show(result: Any, console: Console) -> None:
    view = views().get(type(result))
    if view is None:  # our own bug: a command returned a result no view was registered for
        raise AssertionError(f"no view for {type(result).__name__}")
    view(result, console)
