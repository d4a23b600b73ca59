"""A sweep in the terminal: one row per run, worst first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from triage_agent.render.terminal import SEVERITY_STYLE
from triage_agent.render.text import LiteralTable, literal

if TYPE_CHECKING:
    from triage_agent.commands.sweep import SweepResult

MAX_IDS = 6  # ids shown per row; the rest are counted
# rows shown in the terminal, worst first; the rest are tallied (and all are in --json). A table of 1,000 rows took
# ~1 s to lay out, longer than reading the runs on two cores, and no one reads it on a screen
MAX_ROWS = 200


def render(result: SweepResult, console: Console) -> None:
    tally = ", ".join(f"{n} {k}" for k, n in result.by_worst().items())
    how = f"{result.jobs} job(s)" if result.executor == "local" else "Ray"
    shard = f" · shard {result.shard[0]}/{result.shard[1]} of {result.total}" if result.shard else ""
    reused = f" · {result.reused} reused" if result.reused else ""
    console.print(literal(f"{result.root}: {result.count} runs ({tally}) · {result.seconds:.1f} s · {how}"
                          f"{shard}{reused}", "bold"))
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
    shown = result.rows[:MAX_ROWS]
    if result.count > len(shown):
        rest = ", ".join(f"{n} {k}" for k, n in result.by_worst(shown).items())
        where = "--json lists every run" if result.count == len(result.rows) else "--out lists every run"
        console.print(literal(f"... and {result.count - len(shown)} more runs ({rest}), not shown: {where}", "dim"))
    if result.by:
        _prevalence(result, console)
    for note in result.notes:
        console.print(literal(f"note: {note}", "dim"))
    if result.rows:
        console.print(literal(f"one run in full: triage inspect {result.root} --run {result.rows[0].name}", "dim"))


MAX_FINDINGS = 6  # --by: the most prevalent findings get a column each; the rest are counted
MAX_VALUES = 50  # --by: values shown (the table of results has them all)


def _prevalence(result: SweepResult, console: Console) -> None:
    """--by KEY: a row per value of KEY, the share of its runs with each of the most prevalent findings."""
    groups = result.prevalence()
    total: dict[str, int] = {}
    for g in groups:
        for fid, n in g.counts.items():
            total[fid] = total.get(fid, 0) + n
    top = sorted(total, key=lambda f: (-total[f], f))[:MAX_FINDINGS]
    console.print(literal(f"finding prevalence by {result.by} (share of runs with it, runs):", "bold"))
    t = LiteralTable(expand=False)
    t.add_column(str(result.by))
    t.add_column("runs", justify="right")
    for fid in top:
        t.add_column(fid, justify="right")
    for g in groups[:MAX_VALUES]:
        t.add_row("(not set)" if g.value is None else g.value, str(g.runs),
                  *(f"{g.share(f):.0%} ({g.counts.get(f, 0)})" for f in top))
    console.print(t)
    if len(total) > len(top) or len(groups) > MAX_VALUES:
        console.print(literal(f"{len(total) - len(top)} more finding(s), {max(0, len(groups) - MAX_VALUES)} more "
                              "value(s): --json or --out has them all", "dim"))
