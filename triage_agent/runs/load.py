"""files -> Run: read everything discovery found, tolerate bad input, never write."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from triage_agent import lazy
from triage_agent.errors import BadInput
from triage_agent.runs import discover as disc
from triage_agent.runs import formats, gold, paradigm, round_names, trainers
from triage_agent.runs.configs import flatten, load_config
from triage_agent.runs.formats import FormatRead
from triage_agent.runs.formats.base import MAX_KEYS, Columns
from triage_agent.runs.formats.canonical import (
    Canonical,
    Naming,
    canonicalize_columns,
    eval_loss_series,
    is_eval_loss,
    is_validation,
    strip_prefix,
    validation_series,
)
from triage_agent.runs.formats.restarts import MAX_RESTARTS as MAX_RESUMES
from triage_agent.runs.formats.restarts import relaunches
from triage_agent.runs.frames import ColumnFrame
from triage_agent.runs.locate import Located, Where, one_run
from triage_agent.runs.model import ConfigValue, ParseError, Resume, Round, Run, SourceFile, Table, Unread
from triage_agent.runs.tables import normalize, read_table
from triage_agent.safe import bounded, json_in

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy.module("pandas")

KINDS = ("selector-generator", "solver-calibration", "generic")
# a file whose rows fold onto fewer than this share of distinct steps has lost rows (data.unread); a resumed run
# repeats only the steps since its last checkpoint
MERGE_SHARE, MERGE_MIN_ROWS = 0.5, 10
Progress = Callable[[str, int, int], None]


class Reader:
    """How files are read: whole, each time (this class), or incrementally for a run still being written
    (`runs/follow.py`, behind `triage watch`)."""

    def config(self, path: Path, rel: str) -> tuple[Any, list[Any], list[ParseError]]:
        return load_config(path, rel)

    def table(self, path: Path, rel: str) -> tuple[pd.DataFrame | None, list[ParseError]]:
        return read_table(path, rel)

    def trainer(self, role: str, path: Path, rel: str) -> FormatRead:
        return formats.named(role).read(path, rel)

    def canonical(self, rel: str, rows: list[dict[str, Any]] | Columns, columns: Naming) -> Canonical:
        # dict rows (logs, JSON lines) become columns first: a key at a time in C instead of a Python loop
        # over every value (100,000 log steps: ~1 s less); the same frame, held so by a property test
        return canonicalize_columns(rows if isinstance(rows, Columns) else Columns.from_rows(rows), columns)


DIRECT = Reader()


def planned_from_progress(rows: list[dict[str, Any]] | Columns, rel: str, step_key: str) -> tuple[int, str] | None:
    """The planned total from a logged share of the plan done (Tinker's `progress/done_frac`, a percentage): the
    last row that logs it, at step s with share f, plans s / f steps, or (s + 1) / f counted from 0 (its last step
    then (s + 1) / f - 1)."""
    if isinstance(rows, Columns):
        rows = rows.rows([k for k in trainers.progress_fields() if k in rows.values])
    # the fields some row holds, by one pass in C over the rows' keys: most logs log none of them, and a watch pass
    # asks again of all the rows of a log that grows (a Python test of each row for each field was 25 ms a pass
    # at 11,000 rows)
    held = set().union(*rows) if rows else set()
    for key in (k for k in trainers.progress_fields() if k in held):
        logged = [(r[step_key], r[key]) for r in rows if isinstance(r.get(key), (int, float))
                  and isinstance(r.get(step_key), (int, float))]
        if not logged:
            continue
        first = min(s for s, _ in logged)
        step, share = logged[-1]
        share = share / 100 if "percent" in key else share
        if 0 < share <= 1 and math.isfinite(step):
            # the plan's last step in the run's own numbering: steps 0..4 done at share 1.0 plan step 4
            total = round((step + 1) / share) - 1 if first == 0 else round(step / share)
            return total, f"{rel}: {key} {share:.3g} at step {int(step)}"
    return None


EPOCH_DECIMALS = 2  # the HF Trainer logged `round(epoch, 2)` until 2024 (transformers 4.38 and before)


STEP_KEYS = ("step", "global_step", "train/global_step")


def planned_from_epochs(rows: list[dict[str, Any]] | Columns, rel: str, epochs: ConfigValue,
                        fractional: bool) -> tuple[int, str] | None:
    """The planned total of a run planned in epochs (`num_train_epochs` E, `max_steps` unset): the last row that
    logs its epoch e at step s plans s x E / e steps. An epoch with at most two decimals may be rounded (the HF
    Trainer's `round(epoch, 2)`): the true one is below e + 0.005, so the plan is at least s x E / (e + 0.005), and
    is said as "at least" (ms-swift 2.x: epoch 0.0 at step 20 of one epoch: at least 4,000 steps)."""
    if isinstance(epochs.value, bool) or not isinstance(epochs.value, (int, float)) or not 0 < epochs.value < 10**6:
        return None
    if isinstance(rows, Columns):
        rows = rows.rows([k for k in ("epoch", *STEP_KEYS) if k in rows.values])
    step_key = next((k for k in STEP_KEYS if any(k in r for r in rows[-5:])), None)
    if step_key is None:
        return None
    logged = [(r[step_key], r["epoch"]) for r in rows if isinstance(r.get("epoch"), (int, float))
              and isinstance(r.get(step_key), (int, float)) and math.isfinite(r["epoch"]) and r["epoch"] >= 0]
    if not logged or not math.isfinite(logged[-1][0]) or logged[-1][0] <= 0:
        return None
    if not fractional and all(float(e).is_integer() for _, e in logged):
        return None  # a counter of whole epochs (NeMo Automodel's `epoch` 0, 1): it says no share of the plan
    step, epoch = logged[-1]
    rounded = all(round(e, EPOCH_DECIMALS) == e for _, e in logged)
    share = (epoch + 0.5 * 10 ** -EPOCH_DECIMALS if rounded else epoch) / epochs.value
    if not 0 < share < 1:
        return None
    said = " (to two decimals: a lower bound)" if rounded else ""
    return (math.ceil(step / share) if rounded else round(step / share),
            f"{rel}: epoch {epoch:g} at step {int(step)} of {epochs.file}:{epochs.key} {epochs.value:g}{said}")


def _round_key(found: disc.Found, fallback: dict[str, int]) -> tuple[str, int]:
    if found.round_role is not None and found.round_index is not None:
        return found.round_role, found.round_index
    # a history outside round folders (e.g. mapped by the manifest): one round per parent folder
    parent = str(Path(found.rel).parent)
    if parent not in fallback:
        fallback[parent] = len(fallback) + 1
    return "run", fallback[parent]


class NothingRecognisable(BadInput):
    """The folder holds nothing a run writes (yet: `triage watch` waits for it)."""


def load_run(run: Where, progress: Progress | None = None, now: float | None = None, *,
             reader: Reader = DIRECT) -> Run:
    """Read one run: as `runs/locate.py` located it, or a path or URL, located here first (a folder holding
    several runs raises `MultiRunError`). `now` is the clock that `run.in_progress` compares file times with."""
    located = one_run(run, progress=progress)
    with bounded.expecting():  # every file is opened as the one discovery listed
        return _load_run(located, progress, now, reader)


def _load_run(located: Located, progress: Progress | None, now: float | None, reader: Reader) -> Run:
    root, only, display = located.root, located.single, located.display
    if _is_dir(root):
        try:  # a folder that cannot be listed is said as such, not as "nothing recognisable"
            with os.scandir(root):
                pass
        except OSError as exc:
            raise BadInput(f"{display or root}: cannot read the folder ({exc.strerror or exc})") from None
    manifest, errors = disc.load_manifest(root) if _is_dir(root) and only is None else (disc.Manifest(), [])
    found, notes = disc.discover(root, manifest, only)
    run = Run(root=root, kind="generic", parse_errors=list(errors), notes=[*located.notes, *notes],
              rule_overrides=dict(manifest.rules), now=time.time() if now is None else now, display=display,
              single=only)
    rounds: dict[tuple[str, int], Round] = {}
    fallback: dict[str, int] = {}
    trainer = _TrainerParts()
    for i, f in enumerate(found):
        if progress:
            progress(f.rel, i, len(found))
        try:
            _read_one(run, f, manifest, rounds, fallback, trainer, reader)
        except OSError as exc:  # unreadable (permissions, vanished, a read error): reported, the rest goes on
            run.parse_errors.append(ParseError(f.rel, None, f"unreadable: {exc.strerror or exc}"))
    for key, rnd in rounds.items():
        if key[0] == "run" and rnd.history is not None:
            cols = set(rnd.history.data.columns)
            rnd.role = "selector" if "boundary" in cols else "generator" if "accuracy" in cols else "run"
    run.rounds = sorted(rounds.values(), key=lambda r: (r.role, r.index))
    trainer.attach(run, manifest.columns, reader)
    run.kind = _kind(run, manifest.kind)
    if run.kind != "generic":  # rounds and calibration tables decide over any trainer metric
        run.paradigm, run.paradigm_evidence = paradigm.detect((), (), None, run.kind)
    if not run.files or not _training_evidence(run):
        what = "" if not run.files else f" ({len(run.logs)} log file(s) with no training output in them)"
        raise NothingRecognisable(f"{run.where}: nothing recognisable{what}: no configs, tables, trainer outputs or training "
                          "logs; see the run-folder format in the README")
    return run


def run_from_rows(root: Path, source: str, rows: list[dict[str, Any]], *, planned: int | None = None,
                  trainer: str | None = None, config: dict[str, Any] | None = None, now: float | None = None) -> Run:
    """A run from metric rows logged in-process (the trainer callback): the same path from rows to the
    canonical series as files take, so the same rules judge it."""
    now = time.time() if now is None else now
    run = Run(root=root, kind="generic", now=now, newest_mtime=now)  # being written as we speak
    run.files.append(SourceFile(source, "trainer_log"))
    run.config_values = [ConfigValue("TrainingArguments", str(k), v) for k, v in (config or {}).items()
                         if isinstance(v, (int, float, str, bool)) or v is None]
    parts = _TrainerParts()
    parts.add(source, FormatRead(rows=rows, planned_steps=planned, trainer=trainer))
    parts.attach(run, {})
    return run


def _training_evidence(run: Run) -> bool:
    """Whether anything shows a training run: a file other than a log, or a log with a trainer's output."""
    logs = {s.path for s in run.logs}
    # metric lines no reader understood are training output too: said (data.unread), never "nothing recognisable"
    # ... and so is a crash: a launch that died before its first step (a NameError in the script under accelerate)
    # is a run's whole story, which "nothing recognisable" would hide
    return any(f.path not in logs for f in run.files) or any(s.evidence or s.metric_steps or s.unread or s.crash
                                                             for s in run.logs)


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False


def _read_one(run: Run, f: disc.Found, manifest: disc.Manifest, rounds: dict[tuple[str, int], Round],
              fallback: dict[str, int], trainer: _TrainerParts, reader: Reader = DIRECT) -> None:
    """Read one discovered file into the run (its rows, configs, log scan or trainer output)."""
    try:
        mtime = f.path.stat().st_mtime
        run.newest_mtime = mtime if run.newest_mtime is None else max(run.newest_mtime, mtime)
        run.oldest_mtime = mtime if run.oldest_mtime is None else min(run.oldest_mtime, mtime)
        run.mtime_files += 1
    except OSError:
        pass
    run.files.append(SourceFile(f.rel, f.role))
    if f.role == "config":
        _doc, values, errs = reader.config(f.path, f.rel)
        run.parse_errors += errs
        run.config_values += values
    elif f.role in ("reward_history", "reward_samples"):
        frame, errs = reader.table(f.path, f.rel)
        run.parse_errors += errs
        if frame is not None:
            frame, errs = normalize(frame, f.role, f.rel, manifest.columns)
            run.parse_errors += errs
        if frame is not None:
            key = _round_key(f, fallback)
            rnd = rounds.setdefault(key, Round(role=key[0], index=key[1]))
            if not frame["step"].is_monotonic_increasing:  # most logs are in order: no copy then
                frame = frame.sort_values("step", kind="stable").reset_index(drop=True)
            if f.role == "reward_history":
                rnd.history = Table(frame, f.rel)
            else:
                rnd.samples = Table(frame, f.rel)
    elif f.role == "round_meta":
        key = _round_key(f, fallback)
        try:
            meta = json_in.load_file(f.path, 1 << 20)
            if not isinstance(meta, dict):
                raise ValueError("not a JSON object")
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            run.parse_errors.append(ParseError(f.rel, getattr(exc, "lineno", None), f"unreadable round.json: {exc}"))
            return
        rnd = rounds.setdefault(key, Round(role=key[0], index=key[1]))
        rnd.meta, rnd.meta_source = meta, f.rel
    elif f.role in disc.TABLE_ROLES:
        frame, errs = reader.table(f.path, f.rel)
        run.parse_errors += errs
        if frame is not None:
            frame, errs = normalize(frame, f.role, f.rel, manifest.columns)
            run.parse_errors += errs
        if frame is not None and f.role == "eval_history":
            frame, alias = gold.by_meaning(frame)
            if alias:
                run.notes.append(f"{f.rel}: the gold series is {alias} (a pass rate by meaning: it serves as "
                                 f"{gold.GOLD})")
        if frame is not None and getattr(run, f.role) is None:
            setattr(run, f.role, Table(frame, f.rel))
    elif f.role in formats.names():
        got = reader.trainer(f.role, f.path, f.rel)
        run.parse_errors += got.errors
        run.notes += got.notes
        if got.config:  # the config a trainer file carries (TensorBoard's `args` text, W&B's run config)
            run.config_values += flatten(got.config, f.rel)
        read_as = None
        if got.log is not None:
            run.logs.append(got.log)
            read_as = ", ".join(f"{name} {n}" for name, n in got.log.readers.items()) or None
            if got.log.unread:
                run.unread.append(Unread(f.rel, got.log.unread, tuple(got.log.unread_lines), got.log.unread_example,
                                         "metric-looking lines that no reader understood"))
            if got.log.cut_short:
                log = got.log
                run.notes.append(
                    f"{f.rel}: {log.cut_short} step line{'s' if log.cut_short != 1 else ''} end in a pair no number "
                    f"could be read from, as a line cut short does (lines "
                    f"{', '.join(map(str, log.cut_short_lines[:5]))}{', ...' if log.cut_short > 5 else ''}: "
                    f"`{log.cut_short_example}`); the rest of each line was read, that metric is missing there")
        elif got.errors and (got.row_count or got.eval_rows or got.samples or any(e.line for e in got.errors)):
            # rows of a metrics file that could not be read: metric data lost, not just a malformed aside
            lines = tuple(e.line for e in got.errors if e.line is not None)[:10]
            first = got.errors[0]
            run.unread.append(Unread(f.rel, len(got.errors), lines, f"{first.location()}: {first.message}",
                                     "rows of a metrics file that could not be read"))
        if got.finished:
            run.finished = run.finished or f"{f.rel}: {got.finished}"
        run.files[-1] = SourceFile(f.rel, f.role, rows=got.row_count + len(got.eval_rows) + len(got.samples),
                                   read_as=read_as)
        if not _as_round_history(f, got, rounds, manifest):
            trainer.add(f.rel, got)


def _as_round_history(f: disc.Found, got: FormatRead, rounds: dict[tuple[str, int], Round],
                      manifest: disc.Manifest) -> bool:
    """A round's log of step lines (`generator_round2/train.log`) read as that round's reward history, when the
    round has no history table and the rows hold what the role logs (boundary reward, accuracy). True when taken:
    the rows are the round's, not the run's trainer metrics."""
    if f.round_role is None or f.round_index is None or not got.row_count:
        return False
    key = (f.round_role, f.round_index)
    if key in rounds and rounds[key].history is not None:
        return True  # the round's own table already holds its history; the log's rows are the same steps
    rows = got.rows if got.rows else got.columns.rows() if got.columns is not None else []
    frame = round_names.history_from_rows(rows, f.round_role)
    if frame is None:
        return False
    frame, _errs = normalize(frame, "reward_history", f.rel, manifest.columns)
    if frame is None:
        return False
    rnd = rounds.setdefault(key, Round(role=key[0], index=key[1]))
    rnd.history = Table(frame.sort_values("step", kind="stable").reset_index(drop=True), f.rel)
    return True


_PARADIGM_ROWS = 200  # rows per source whose keys tell the paradigm (every key shows up early; bounded work)
MAX_EXCERPTS = 3  # degenerate completions kept as text for the evidence and the model (bounded, masked on output)


@dataclass
class _TrainerParts:
    """What the trainer-format files of a run gave, before it is merged into the Run."""

    rows: list[tuple[str, list[dict[str, Any]] | Columns]] = field(default_factory=list)
    evals: list[dict[str, Any]] = field(default_factory=list)
    eval_source: str | None = None
    samples: list[dict[str, Any]] = field(default_factory=list)
    sample_sources: list[str] = field(default_factory=list)
    excerpts: list[dict[str, Any]] = field(default_factory=list)
    planned: tuple[int, str] | None = None
    trainer: str | None = None

    def add(self, rel: str, got: FormatRead) -> None:
        if got.rows:
            self.rows.append((rel, got.rows))
        elif got.columns is not None and got.columns.n:
            self.rows.append((rel, got.columns))
        if got.eval_rows:
            self.evals += got.eval_rows
            self.eval_source = self.eval_source or rel
        if got.samples:
            self.samples += got.samples
            self.sample_sources.append(rel)
        self.excerpts += got.excerpts[:max(0, MAX_EXCERPTS - len(self.excerpts))]
        if got.planned_steps and (self.planned is None or got.planned_steps > self.planned[0]):
            self.planned = (got.planned_steps, rel)
        self.trainer = self.trainer or got.trainer

    def planned_from_epochs(self, run: Run) -> tuple[int, str] | None:
        """A plan in epochs, from the first trainer source that logs the epoch beside its steps (`epoch` in a
        `logging.jsonl` whose TensorBoard twin has the more rows but no epoch)."""
        for leaf in trainers.plan_epoch_keys():
            if (epochs := run.config(leaf)) is None:
                continue
            for rel, rows in self.rows:
                if (got := planned_from_epochs(rows, rel, epochs, trainers.fractional_epoch(self.trainer))) is not None:
                    return got
        return None

    def attach(self, run: Run, columns: dict[str, str], reader: Reader = DIRECT) -> None:
        """The richest trainer source becomes the run's per-step metrics (and its one policy round). The run's
        paradigm is told from the raw names first: it decides how they map onto canonical series."""
        raw_keys = {k for _, rows in self.rows
                    for k in (rows.keys if isinstance(rows, Columns) else (k for row in rows[:_PARADIGM_ROWS] for k in row))}
        raw_keys |= {k for row in self.evals[:_PARADIGM_ROWS] for k in row}
        if self.trainer is None and (told := trainers.recognise(sorted(raw_keys), [cv.key for cv in run.config_values])):
            self.trainer = told[0]
            run.notes.append(f"trainer: {told[0]}, recognised by the names its profile knows ({', '.join(told[1])})")
        # a flattened export's `actor_entropy` hints what verl's `actor/entropy` does
        flat = trainers.restored(raw_keys)
        hinted = {flat.get(k, k) for k in raw_keys}
        run.paradigm, run.paradigm_evidence = paradigm.detect(hinted, run.config_values, self.trainer)
        naming = Naming(columns, self.trainer, run.paradigm)
        best: tuple[Canonical, str, list[dict[str, Any]] | Columns] | None = None
        for rel, rows in self.rows:
            can = reader.canonical(rel, rows, naming)
            n_rows = rows.n if isinstance(rows, Columns) else len(rows)
            if can.cut:  # a file of too many distinct names: the rest were counted, not kept
                run.notes.append(f"{rel}: {can.cut:,} of its {can.cut + len(can.raw_keys):,} distinct metric names "
                                 f"were not read (at most {MAX_KEYS:,} are kept, fewer over {n_rows:,} rows: those "
                                 "logged on the fewest rows go first)")
            if n_rows >= MERGE_MIN_ROWS and len(can.data) < MERGE_SHARE * n_rows:
                # two counts of one file disagree: its rows were folded onto fewer steps than they are
                run.unread.append(Unread(rel, n_rows - len(can.data), (), None,
                                         f"{n_rows} metric rows fell on only {len(can.data)} distinct steps"))
            if can.data.empty:
                continue
            if best is None or can.data.size > best[0].data.size:
                best = (can, rel, rows)
        run.trainer = self.trainer
        if self.planned is not None:
            run.planned_steps = self.planned
        elif best is not None:
            step_key = best[0].plan[0] if best[0].plan else "step"
            run.planned_steps = planned_from_progress(best[2], best[1], step_key) or self.planned_from_epochs(run)
        keys = list(dict.fromkeys([*(k for r in self.evals for k in r), *(best[0].raw_keys if best else [])]))
        train = best[2] if best else []
        if isinstance(train, Columns):  # only the rows that hold a validation key, as dicts
            train = train.rows([k for k in train.keys if is_validation(strip_prefix(k))])
        val, key = validation_series(self.evals + train, keys)
        if val is not None and not val.empty:
            run.validation = Table(val, self.eval_source if key and key.startswith("eval_") and self.eval_source
                                   else (best[1] if best else "eval rows"))
            run.validation_key = key
        losses = best[2] if best else []
        if isinstance(losses, Columns):  # only the rows that hold an eval loss, as dicts
            losses = losses.rows([k for k in losses.keys if is_eval_loss(k)])
        eval_loss = eval_loss_series(self.evals + losses, keys)
        if eval_loss is not None and not eval_loss.empty:
            run.eval_loss = Table(eval_loss, self.eval_source or (best[1] if best else "eval rows"))
        run.sample_excerpts = self.excerpts
        if self.samples:
            run.rollouts = Table(pd.DataFrame.from_records(self.samples), ", ".join(self.sample_sources[:3])
                                 + (f" (+{len(self.sample_sources) - 3} files)" if len(self.sample_sources) > 3 else ""))
        if best is None:
            return
        can, rel, _ = best
        frame = can.data
        run.metrics, run.metric_sources, run.nonfinite = Table(frame, rel), can.sources, can.nonfinite
        run.metric_inferred = can.inferred
        relaunched = [Resume(r.step, r.before, r.why, src) for r, src in relaunches(self.rows, rel)]
        run.resumes = [*relaunched, *(Resume(r.step, r.before, r.why, rel, r.writers) for r in can.restarts)][:MAX_RESUMES]
        run.resume_count = len(relaunched) + can.restart_count
        if run.paradigm in ("policy_gradient", "distillation", "unknown"):
            turns = frame.max("num_turns") if "num_turns" in frame else None
            agentic = trainers.agentic(can.raw_keys, self.trainer, None if turns is None else float(turns))
            if agentic:
                run.traits["agentic"] = agentic[:4]
        for series, names in can.ties.items():
            shown = ", ".join(names[:4])
            run.notes.append(f"{rel}: {series} could be any of {shown} by their names; none was chosen (name one "
                             f"with [columns] {series} = \"...\" in triage.toml)")
        components = [c for c in frame.columns if c.startswith("rc:")]
        if components and not run.rounds_of("policy"):
            # built from the columns' arrays in one go: selecting, renaming and adding to a frame cost ~1.5 ms a
            # run, a third of a small run's load in a sweep
            cols = {"step": frame.column("step"), **{c[3:]: frame.column(c) for c in components}}
            if "reward" in frame:
                cols["total"] = frame.column("reward")
            run.rounds.append(Round(role="policy", index=1, history=Table(ColumnFrame(cols), rel), derived=True))


def _kind(run: Run, declared: str | None) -> str:
    if declared in KINDS:
        return str(declared)
    if run.filter_stats is not None or run.rounds_of("selector") or run.rounds_of("generator"):
        return "selector-generator"
    if any(t is not None for t in (run.eval_history, run.solver_scores, run.calibration_events, run.perturbations)):
        return "solver-calibration"
    return "generic"

