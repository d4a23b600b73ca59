"""The terminal view of a step window (`triage inspect RUN --at STEP`): one row per series, one column per
logged step around the asked one, then the findings whose onset lies in the window."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from triage_agent.numbers import text
from triage_agent.render.terminal import SEVERITY_STYLE
from triage_agent.render.text import LiteralTable, literal

if TYPE_CHECKING:
    from triage_agent.window import StepWindow


def render(w: StepWindow, console: Console) -> None:
    asked = "" if w.logged else f" (step {w.at} was not logged: the logged steps around it)"
    t = LiteralTable(title=f"{w.where}: every series around step {w.at}, {w.k} logged steps each side "
                           f"({w.source}){asked}", expand=False)
    t.add_column("series")
    for step in w.steps:
        t.add_column(f"▶{step}" if step == w.at else str(step), justify="right")
    for s in w.series:
        t.add_row(s.name, *("" if v is None else text(v) for v in s.values))
    console.print(t)
    if w.series_left_out:
        console.print(literal(f"{w.series_left_out} more series not shown (--json has the first {len(w.series)})",
                              "dim"))
    if not w.findings:
        console.print(literal(f"no finding has its onset between steps {w.steps[0]} and {w.steps[-1]}", "dim"))
        return
    console.print(Text(f"Findings with their onset between steps {w.steps[0]} and {w.steps[-1]}", style="bold"))
    for f in w.findings:
        console.print(Text.assemble((f"{f.severity} ", SEVERITY_STYLE.get(f.severity, "")), literal(f.id),
                                    literal(f" @ {f.onset_step}: {f.title}")))
