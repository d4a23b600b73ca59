"""The view registered for each result type: what `emit` (cli/base.py) calls when a command's result is shown in
the terminal rather than written as JSON. One table, so a new result type is one line here beside its view."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from rich.console import Console

View = Callable[[Any, Console], None]


# result type -> its view, both named as "module:attribute" so that showing a report never imports the other
# commands' modules (the doctor's result type sits beside the OpenAI SDK, ~0.9 s of imports)
VIEWS: dict[str, str] = {
    "triage_agent.report:Report": "triage_agent.render.terminal:render",
    "triage_agent.commands.sweep:SweepResult": "triage_agent.render.sweep:render",
    "triage_agent.comparison:Comparison": "triage_agent.render.compare:render",
    "triage_agent.before_after:BeforeAfter": "triage_agent.render.compare:render_before_after",
    "triage_agent.commands.eval:EvalResult": "triage_agent.render.evaluation:render",
    "triage_agent.commands.doctor:DoctorResult": "triage_agent.render.terminal:doctor_view",
    "triage_agent.window:StepWindow": "triage_agent.render.window:render",
}


def _load(name: str) -> Any:
    import importlib

    module, _, attr = name.partition(":")
    return getattr(importlib.import_module(module), attr)


@cache
def _view(name: str) -> View | None:
    view = VIEWS.get(name)
    return _load(view) if view else None


def view_for(kind: type) -> View | None:
    return _view(f"{kind.__module__}:{kind.__qualname__}")


def show(result: Any, console: Console) -> None:
    view = view_for(type(result))
    if view is None:  # our own bug: a command returned a result no view was registered for
        raise AssertionError(f"no view for {type(result).__name__}")
    view(result, console)
