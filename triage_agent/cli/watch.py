"""`triage watch`: follow a run while it trains and report each finding once, as it appears."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from triage_agent.cli.base import Command, duration, literal
from triage_agent.errors import BadInput
from triage_agent.findings.model import RAISED

if TYPE_CHECKING:
    from rich.console import Console



def arguments(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("run", help="the run folder (or a remote URL, re-listed every pass)")
    sp.add_argument("--interval", type=duration, default=5.0, metavar="SECONDS",
                    help="seconds between passes when nothing wakes the watch earlier (default 5)")
    sp.add_argument("--stall-after", type=duration, default=900.0, metavar="DURATION",
                    help="run.stalled after no new step for this long (90s, 15m, 1h; default 15m) or 10x the "
                         "median step time, whichever is longer")
    sp.add_argument("--on-finding", metavar="CMD",
                    help="run CMD (a shell command) for each event, the event as JSON on its stdin")
    sp.add_argument("--exit-on", choices=RAISED, help="exit 1 at the first finding this severe or worse")
    sp.add_argument("--json", action="store_true", help="one JSON object per line for each event")


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    import json
    from pathlib import Path

    from triage_agent.commands.watch import WatchEvent, run_hook, watch
    from triage_agent.findings.model import SEVERITY_RANK
    from triage_agent.render.terminal import SEVERITY_STYLE
    from triage_agent.runs.remote import is_remote

    if not is_remote(args.run) and not Path(args.run).is_dir():
        raise BadInput(f"{args.run}: no such folder")
    if not args.json:
        err.print(literal(f"watching {args.run} (every {args.interval:g} s; run.stalled after "
                          f"{args.stall_after / 60:g} min without a step); Ctrl-C stops"))

    def on_event(ev: WatchEvent) -> bool:
        doc = ev.document()
        line = json.dumps(doc, ensure_ascii=False, default=str)
        if args.json:
            stream = getattr(out.file, "raw", out.file)  # the document is masked already; JSON text as it is
            stream.write(line + "\n")
            stream.flush()
        else:
            from rich.text import Text

            out.print(Text.assemble(doc["at"][11:19] + "  ", (f"{ev.severity:<6}", SEVERITY_STYLE[ev.severity]), "  ",
                                    literal(ev.id, "bold"), literal(f"  from step {ev.step}" if ev.step is not None
                                                                    else ""), "  ", literal(ev.title)))
        if args.on_finding:
            problem = run_hook(args.on_finding, line)
            if problem:
                err.print(literal(f"triage: {problem}"))
        return bool(args.exit_on) and SEVERITY_RANK[ev.severity] <= SEVERITY_RANK[args.exit_on]

    return watch(args.run, on_event, interval=args.interval, stall_after=args.stall_after)


COMMAND = Command(
    "watch", "follow a run while it trains; report each finding once, as it appears",
    "Follow a run folder while it is written: each pass reads only what was appended, evaluates the same rules as "
    "inspect and prints each new (or more severe) finding once, with the step where it starts. A run that stops "
    "logging steps raises run.stalled; a log that ends in a crash raises log.crash. Wakes on file changes "
    "(watchfiles, when installed) or every --interval seconds.",
    """example: triage watch outputs/run1 --exit-on high --on-finding 'curl -s -d @- $SLACK_WEBHOOK'
         triage watch outputs/run1 --json --interval 30 --stall-after 20m""",
    arguments, run, order=70)
