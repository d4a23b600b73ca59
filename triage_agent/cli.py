"""Argument parsing only: each command returns a typed result that is rendered here."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from rich.console import Console

from triage_agent import __version__
from triage_agent.errors import TriageError
from triage_agent.findings.model import SEVERITIES

EXAMPLES = {
    "inspect": "example: triage inspect sample_runs/boundary_collapse --json --fail-on high",
}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="triage", description="Diagnose failing RL fine-tuning runs.")
    p.add_argument("--version", action="version", version=f"triage {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sp = sub.add_parser("inspect", help="deterministic findings for a run folder (no model)",
                        description="Read a run folder and print its findings, computed by the rules alone.",
                        epilog=EXAMPLES["inspect"], formatter_class=argparse.RawDescriptionHelpFormatter)
    sp.add_argument("run", help="the run folder")
    sp.add_argument("--json", action="store_true", help="print the JSON report document on stdout")
    sp.add_argument("--fail-on", choices=SEVERITIES[:3], help="exit 1 when a finding this severe or worse exists")
    return p


def _fail_code(report, fail_on: str | None) -> int:  # type: ignore[no-untyped-def]
    if fail_on and any(f.at_least(fail_on) for f in report.findings):
        return 1
    return 0


def main(argv: Sequence[str] | None = None, stdout: Console | None = None, stderr: Console | None = None) -> int:
    out = stdout or Console(soft_wrap=False)
    err = stderr or Console(stderr=True, soft_wrap=True)
    args = _parser().parse_args(argv)
    if args.command is None:
        _parser().print_help()
        return 2
    try:
        if args.command == "inspect":
            from triage_agent.commands.inspect import inspect
            from triage_agent.render import jsondoc, terminal

            report = inspect(args.run)
            if args.json:
                out.file.write(jsondoc.dumps(report) + "\n")
            else:
                terminal.render(report, out)
            return _fail_code(report, args.fail_on)
    except TriageError as exc:
        err.print(f"triage: {exc}", markup=False, highlight=False)
        return exc.exit_code
    except KeyboardInterrupt:
        err.print("triage: interrupted")
        return 130
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
