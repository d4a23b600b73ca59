"""`triage inspect`: the deterministic findings of a run (or a ranked table of a sweep's runs)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from triage_agent.cli.base import Command, emit, literal, progress, report_flags, write_html
from triage_agent.errors import BadInput

if TYPE_CHECKING:
    from rich.console import Console


def arguments(sp: argparse.ArgumentParser) -> None:
    report_flags(sp)
    sp.add_argument("--jobs", type=int, metavar="N", help="runs inspected in parallel in a sweep (default: the cores)")
    sp.add_argument("--executor", choices=("local", "ray"), default="local",
                    help="where a sweep's runs are inspected: local processes, or Ray tasks (extra [ray])")
    sp.add_argument("--ray-address", metavar="ADDR", help="the Ray cluster (default: $RAY_ADDRESS, else a local one)")
    sp.add_argument("--out", metavar="FILE", help="a sweep's table of results: one row per run and per finding "
                    "(FILE.parquet or FILE.jsonl; schema triage.results/v1, see the README)")
    sp.add_argument("--by", metavar="KEY", help="a sweep's finding prevalence by a config key (e.g. learning_rate) "
                    "or trainer/paradigm/kind/lifecycle: the share of runs with each finding per value")
    sp.add_argument("--shard", metavar="I/N", help="this job's share of a sweep split over N jobs (0 <= I < N); "
                    "each job takes its runs by a digest of their names and writes its own --out")
    sp.add_argument("--no-cache", action="store_true",
                    help="read every run of a sweep again (else unchanged runs are taken from the result cache)")
    sp.add_argument("--at", type=int, metavar="STEP",
                    help="why at step STEP: every series around that step and the findings whose onset is near it")
    sp.add_argument("--window", type=int, metavar="K", default=5,
                    help="with --at: the logged steps shown on each side (default 5, at most 50)")


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from triage_agent.commands.inspect import inspect
    from triage_agent.commands.sweep import SweepResult, parse_shard
    from triage_agent.render.results import check_path

    if args.jobs is not None and args.jobs < 1:
        raise BadInput("--jobs takes a number of processes >= 1")
    if args.at is not None:
        from triage_agent.commands.inspect import inspect_window

        if args.html or args.fail_on:
            raise BadInput("--at shows a step window: it takes --json, not --html or --fail-on")
        return emit(out, args.json, inspect_window(args.run, args.at, args.window, run=args.pick))
    fleet = args.out is not None or args.by is not None or args.shard is not None
    if fleet and (args.html or args.pick):
        raise BadInput("--out, --by and --shard are about a sweep: they take no --html or --run")
    table = check_path(args.out) if args.out else None
    report = inspect(args.run, progress(err), run=args.pick, jobs=args.jobs, executor=args.executor,
                     ray_address=args.ray_address, keep_reports=args.json,
                     one_run_only="--html shows one run: pick one with --run NAME, or put runs side by side with "
                                  "`triage compare A B --html FILE`" if args.html else None,
                     by=args.by, shard=parse_shard(args.shard) if args.shard else None, use_cache=not args.no_cache,
                     as_sweep=fleet, table=table)
    if isinstance(report, SweepResult):
        if table is not None:
            err.print(literal(f"wrote {report.written or 0:,} rows ({report.count:,} runs) to {table}", "dim"))
        return emit(out, args.json, report, args.fail_on)
    if fleet:  # one file given as the run: no sweep to tabulate
        raise BadInput(f"{args.run}: --out, --by and --shard take a folder of runs (or a remote one)")
    write_html(report, args.html, err)
    return emit(out, args.json, report, args.fail_on)


COMMAND = Command(
    "inspect", "deterministic findings for a run folder (no model)",
    "Read a run folder and print its findings, computed by the rules alone.",
    "example: triage inspect sample_runs/boundary_collapse --json --fail-on high\n"
    "         triage inspect sample_runs/verl_entropy_blowup --at 120 --window 5",
    arguments, run, order=10)
