"""`triage apply`: the accepted adjustments of a report as config edits (a diff by default)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from triage_agent.cli.base import Command, literal, neutralise

if TYPE_CHECKING:
    from rich.console import Console


def arguments(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("source", help="a report JSON from `triage report --json`, or a run folder")
    sp.add_argument("--run", help="the run folder, when the report JSON was written elsewhere")
    sp.add_argument("--include-unmet", action="store_true",
                    help="also apply changes whose what-if says they miss their target")
    sp.add_argument("--force", action="store_true",
                    help="apply even when a value in the file differs from the report's `from` (a stale report)")
    group = sp.add_mutually_exclusive_group()
    group.add_argument("--write", metavar="DIR", help="write edited copies of the config files under DIR")
    group.add_argument("--in-place", action="store_true", help="edit the originals, after saving .bak backups")


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from pathlib import Path

    from triage_agent.commands.apply import plan, write

    res = plan(args.source, args.run, include_unmet=args.include_unmet, force=args.force)
    for file, key, reason in res.refused:
        err.print(literal(f"refused: {file} {key}: {reason}"))
    if not res.edits:
        err.print("nothing to apply", highlight=False)
        return 0
    if args.write or args.in_place:
        write(res, Path(args.write) if args.write else None, args.in_place)
        for path in res.written:
            err.print(literal(f"wrote {path}"))
        return 0
    for e in res.edits:
        out.file.write(neutralise(e.diff()))
    return 0


COMMAND = Command(
    "apply", "turn accepted adjustments into config edits (a diff by default)",
    "Edit the run's config values from a report JSON (or a run folder's offline report). Only values change; "
    "comments, order and formatting stay.",
    "example: triage report RUN --json > r.json && triage apply r.json --write fixed/",
    arguments, run, order=60)
