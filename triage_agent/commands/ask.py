"""`triage ask RUN "question"`: a streamed answer about one run, for IDE terminals."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from triage_agent.agent import loop, transcript
from triage_agent.agent.changes import Checked, Holdback, check, prose
from triage_agent.commands.report import DryRun, can_save, dry_run_request, make_client, model_source
from triage_agent.errors import BadInput
from triage_agent.llm.settings import Settings, configure_hint, state_dir
from triage_agent.report import offline_report
from triage_agent.runs.load import load_run


@dataclass
class AskResult:
    answer: str  # the text, without the changes block (its changes are in `changes`, checked)
    source: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    changes: Checked = field(default_factory=Checked)


def ask(path: str | Path, question: str, settings: Settings, *, on_text: Callable[[str], None] | None = None,
        on_tool: Callable[[loop.ToolEvent], None] | None = None, dry_run: bool = False, save: bool = True,
        env: dict[str, str] | None = None, vs: list[str] | None = None) -> AskResult | DryRun:
    if not question.strip():
        raise BadInput("no question given (pass it as an argument or on stdin)")
    base = offline_report(load_run(path))
    base.facts.peers = [offline_report(load_run(p)).facts for p in vs or []]
    if not settings.configured:
        raise BadInput(f"no model endpoint configured: {configure_hint(env or {})}; `triage inspect` works without one")
    if dry_run:
        return dry_run_request(base, settings, "ask", question)
    notes: list[str] = []
    save = save and can_save(env, notes)
    client = make_client(settings, env)
    hold = Holdback()  # the changes block is shown checked, after the answer, not as the model wrote it

    def visible(chunk: str) -> None:
        shown = hold.feed(chunk)
        if shown and on_text:
            on_text(shown)

    result = loop.run_agent(base, client, "ask", question, on_text=visible, on_tool=on_tool)
    rest = hold.flush()
    if rest and on_text:
        on_text(rest)
    source = model_source(client)
    if save:
        source["transcript"] = str(transcript.save(state_dir(env or {}), base.run.root, "ask", result, client,
                                                   {"question": question}))
    if result.error is not None:
        raise result.error
    if result.final is None:
        return AskResult(f"(no answer: {result.problem})", source, notes)
    return AskResult(prose(result.final), source, notes, check(base.facts, result.final))
