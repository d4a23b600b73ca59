"""A sweep in the terminal: one row per run, worst first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from triage_agent.render.terminal import SEVERITY_STYLE
from triage_agent.render.text import LiteralTable, literal

if TYPE_CHECKING:
    from triage_agent.commands.sweep import SweepResult, SweepRow

MAX_IDS = 6  # ids shown per row; the rest are counted
# rows shown in the terminal, worst first; the rest are tallied (and all are in --json). A table of 1,000 rows took
# ~1 s to lay out, longer than reading the runs on two cores, and no one reads it on a screen
MAX_ROWS = 200


ORDER = ("unreadable", "high", "medium", "low", "info", "clean")


def _tally(rows: list[SweepRow]) -> str:
    """`3 high, 97 clean`: the rows counted by their worst severity."""
    counts: dict[str, int] = {}
    for r in rows:
        key = "unreadable" if r.error else r.worst or "clean"
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{counts[k]} {k}" for k in ORDER if k in counts)


def render(result: SweepResult, console: Console) -> None:
    tally = _tally(result.rows)
    how = f"{result.jobs} job(s)" if result.executor == "local" else "Ray"
    console.print(literal(f"{result.root}: {len(result.rows)} runs ({tally}) · {result.seconds:.1f} s · {how}",
                          "bold"))
    t = LiteralTable(expand=False)
    for col in ("#", "run", "trainer", "steps", "worst", "findings"):
        t.add_column(col, justify="right" if col in ("#", "steps") else "left")
    for i, r in enumerate(result.rows[:MAX_ROWS], 1):
        if r.error:
            t.add_row(str(i), r.name, "", "", Text("error", style="red"), r.error)
            continue
        ids = ", ".join(r.ids[:MAX_IDS]) + (f" (+{len(r.ids) - MAX_IDS})" if len(r.ids) > MAX_IDS else "")
        worst = Text(r.worst, style=SEVERITY_STYLE[r.worst]) if r.worst else Text("none", style="green")
        t.add_row(str(i), r.name, r.trainer or r.kind or "", "" if r.steps is None else str(r.steps), worst, ids)
    console.print(t)
    rest = result.rows[MAX_ROWS:]
    if rest:
        console.print(literal(f"... and {len(rest)} more runs ({_tally(rest)}), not shown: --json lists every run",
                              "dim"))
    for note in result.notes:
        console.print(literal(f"note: {note}", "dim"))
    if result.rows:
        console.print(literal(f"one run in full: triage inspect {result.root} --run {result.rows[0].name}", "dim"))
