"""files -> Run: read everything discovery found, tolerate bad input, never write."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from triage_agent.errors import TriageError
from triage_agent.runs import discover as disc
from triage_agent.runs.configs import load_config
from triage_agent.runs.formats import BY_NAME
from triage_agent.runs.formats.canonical import canonicalize
from triage_agent.runs.model import ParseError, Round, Run, SourceFile, Table
from triage_agent.runs.tables import normalize, read_table

KINDS = ("selector-generator", "solver-calibration", "generic")
Progress = Callable[[str, int, int], None]


def _round_key(found: disc.Found, fallback: dict[str, int]) -> tuple[str, int]:
    if found.round_role is not None and found.round_index is not None:
        return found.round_role, found.round_index
    # a history outside round folders (e.g. mapped by the manifest): one round per parent folder
    parent = str(Path(found.rel).parent)
    if parent not in fallback:
        fallback[parent] = len(fallback) + 1
    return "run", fallback[parent]


def load_run(path: str | Path, progress: Progress | None = None) -> Run:
    root = Path(path)
    manifest, errors = disc.load_manifest(root) if root.is_dir() else (disc.Manifest(), [])
    found, notes = disc.discover(root, manifest)
    run = Run(root=root, kind="generic", parse_errors=list(errors), notes=notes,
              rule_overrides=dict(manifest.rules))
    rounds: dict[tuple[str, int], Round] = {}
    fallback: dict[str, int] = {}
    trainer_rows: list[tuple[str, list[dict[str, Any]]]] = []
    for i, f in enumerate(found):
        if progress:
            progress(f.rel, i, len(found))
        run.files.append(SourceFile(f.rel, f.role))
        if f.role == "config":
            doc, values, errs = load_config(f.path, f.rel)
            run.parse_errors += errs
            if doc is not None:
                run.config_docs[f.rel] = doc
                run.config_values += values
        elif f.role in ("reward_history", "reward_samples"):
            frame, errs = read_table(f.path, f.rel)
            run.parse_errors += errs
            if frame is not None:
                frame, errs = normalize(frame, f.role, f.rel, manifest.columns)
                run.parse_errors += errs
            if frame is not None:
                key = _round_key(f, fallback)
                rnd = rounds.setdefault(key, Round(role=key[0], index=key[1]))
                frame = frame.sort_values("step", kind="stable").reset_index(drop=True)
                if f.role == "reward_history":
                    rnd.history = Table(frame, f.rel)
                else:
                    rnd.samples = Table(frame, f.rel)
        elif f.role == "round_meta":
            key = _round_key(f, fallback)
            try:
                meta = json.loads(f.path.read_text(encoding="utf-8"))
                if not isinstance(meta, dict):
                    raise ValueError("not a JSON object")
            except (OSError, UnicodeDecodeError, ValueError) as exc:
                run.parse_errors.append(ParseError(f.rel, getattr(exc, "lineno", None), f"unreadable round.json: {exc}"))
                continue
            rnd = rounds.setdefault(key, Round(role=key[0], index=key[1]))
            rnd.meta, rnd.meta_source = meta, f.rel
        elif f.role in disc.TABLE_ROLES:
            frame, errs = read_table(f.path, f.rel)
            run.parse_errors += errs
            if frame is not None:
                frame, errs = normalize(frame, f.role, f.rel, manifest.columns)
                run.parse_errors += errs
            if frame is not None and getattr(run, f.role) is None:
                setattr(run, f.role, Table(frame, f.rel))
        elif f.role in BY_NAME:
            got = BY_NAME[f.role].read(f.path, f.rel)
            run.parse_errors += got.errors
            run.notes += got.notes
            if got.log is not None:
                run.logs.append(got.log)
            if got.rows:
                trainer_rows.append((f.rel, got.rows))
    for key, rnd in rounds.items():
        if key[0] == "run" and rnd.history is not None:
            cols = set(rnd.history.frame.columns)
            rnd.role = "selector" if "boundary" in cols else "generator" if "accuracy" in cols else "run"
    run.rounds = sorted(rounds.values(), key=lambda r: (r.role, r.index))
    _attach_trainer_metrics(run, trainer_rows)
    run.kind = _kind(run, manifest.kind)
    if not run.files:
        raise TriageError(f"{root}: nothing recognisable (no configs, tables, trainer logs or *.log files; "
                          "see the run-folder format in the README)")
    return run


def _attach_trainer_metrics(run: Run, sources: list[tuple[str, list[dict[str, Any]]]]) -> None:
    """The richest trainer source becomes the run's per-step metrics and its one policy round."""
    best: tuple[pd.DataFrame, str] | None = None
    for rel, rows in sources:
        frame, _keys = canonicalize(rows)
        if frame.empty:
            continue
        if best is None or len(frame) * len(frame.columns) > len(best[0]) * len(best[0].columns):
            best = (frame, rel)
    if best is None:
        return
    frame, rel = best
    run.metrics = Table(frame, rel)
    components = [c for c in frame.columns if c.startswith("rc:")]
    if components and not run.rounds_of("policy"):
        hist = frame[["step", *components]].rename(columns={c: c[3:] for c in components})
        if "reward" in frame.columns:
            hist["total"] = frame["reward"]
        run.rounds.append(Round(role="policy", index=1, history=Table(hist.reset_index(drop=True), rel)))


def _kind(run: Run, declared: str | None) -> str:
    if declared in KINDS:
        return str(declared)
    if run.filter_stats is not None or run.rounds_of("selector") or run.rounds_of("generator"):
        return "selector-generator"
    if any(t is not None for t in (run.eval_history, run.solver_scores, run.calibration_events, run.perturbations)):
        return "solver-calibration"
    return "generic"
