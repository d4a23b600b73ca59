"""`triage eval`: score models on runs with planted faults."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from triage_agent.cli.base import Command, emit, endpoint_flags, progress, settings_from, write_page
from triage_agent.errors import BadInput

if TYPE_CHECKING:
    from rich.console import Console


def arguments(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--models", help="comma-separated model names (default: the configured model)")
    sp.add_argument("--suite", metavar="DIR", help="a folder of runs, each with expected.json listing its finding ids")
    sp.add_argument("--runs", type=int, metavar="N", help="only the first N runs of the suite")
    sp.add_argument("--json", action="store_true", help="print the scores and every per-run result as JSON")
    sp.add_argument("--html", metavar="FILE", help="also write an HTML page with one row per model")
    endpoint_flags(sp)


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    import os
    from pathlib import Path

    from triage_agent.commands.eval import evaluate
    from triage_agent.render import evaluation

    settings = settings_from(args)
    models = [m.strip() for m in (args.models or settings.model or "").split(",") if m.strip()]
    if not models:
        raise BadInput("name the models to score: --models a,b (or set TRIAGE_MODEL)")
    if args.runs is not None and args.runs < 1:
        raise BadInput("--runs takes a number of runs >= 1")
    result = evaluate(models, settings, dict(os.environ), Path(args.suite) if args.suite else None, args.runs,
                      save=not args.no_save, progress=progress(err))
    write_page(args.html, lambda: evaluation.html(result), err, "HTML page")
    return emit(out, args.json, result)


COMMAND = Command(
    "eval", "score models on runs with planted faults before trusting one",
    "Run `triage report` with each model over a suite of runs with known, planted faults (the sample runs, or "
    "--suite DIR of your own runs with expected.json) and score the diagnosis: recall and precision of the cited "
    "finding ids, changes that pass the checks and reach their target, repair turns, fallbacks, requests, tokens "
    "and time.",
    "example: OPENAI_BASE_URL=http://127.0.0.1:8080/v1 triage eval --models qwen2.5-7b,llama-3.1-8b --json",
    arguments, run, order=100)
