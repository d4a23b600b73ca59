"""The typed picture of a run folder that every later stage reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from triage_agent import lazy
from triage_agent.runs.frames import ColumnFrame

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy.module("pandas")


# What kind of training a run is (post-training-findings.md, "Paradigm"); rules declare the ones they judge.
PARADIGMS = ("policy_gradient", "preference", "sft", "reward_model", "distillation", "selector_generator",
             "solver_calibration",
             "unknown")


@dataclass(frozen=True)
class ParseError:
    """A row or file that could not be read; `line` is 1-based, None for a whole file."""

    file: str
    line: int | None
    message: str

    def location(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass(frozen=True)
class ConfigValue:
    """One config entry, with the file and dotted key path a suggestion must point at."""

    file: str
    key: str
    value: Any
    # The logical path when the file wraps values (W&B's `{lr: {value: ...}}` gives `lr`).
    alias: str | None = None

    @property
    def name(self) -> str:
        return self.alias or self.key

    @property
    def leaf(self) -> str:
        return self.name.rsplit(".", 1)[-1]


class Table:
    """A data frame and the run-relative file it came from. Held as a `ColumnFrame`: a small run's metrics stay NumPy
    columns (`data`), and `frame`, the pandas frame of them, is made the first time something asks for it."""

    __slots__ = ("data", "source")

    def __init__(self, frame: pd.DataFrame | ColumnFrame, source: str) -> None:
        self.data = frame if isinstance(frame, ColumnFrame) else ColumnFrame.of(frame)
        self.source = source

    @property
    def frame(self) -> pd.DataFrame:
        return self.data.pandas()

    def __repr__(self) -> str:
        return f"Table({len(self.data)} rows x {len(self.data.columns)} columns, {self.source!r})"


@dataclass
class Round:
    role: str
    index: int
    history: Table | None = None
    samples: Table | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    meta_source: str | None = None
    # made by triage from a trainer run's reward components (their per-step table, for the reward tools), not a round
    # the run has: never listed, charted or summarised as one
    derived: bool = False

    @property
    def name(self) -> str:
        return f"{self.role}_round{self.index}"


@dataclass(frozen=True)
class Frame:
    """One traceback frame: `File "path", line N, in function`."""

    file: str
    line: int
    function: str


@dataclass(frozen=True)
class CrashInfo:
    exception: str
    message: str
    line: int
    fatal_pattern: str | None = None
    kind: str = "other"  # oom, nccl_timeout, engine_dead, import, disk, signal, nonfinite, config, other
    frame: Frame | None = None  # innermost frame of the training code
    # earlier errors of the same cascade, oldest first: (exception, message, line)
    cascade: tuple[tuple[str, str, int], ...] = ()
    step: int | None = None  # the step its launch had reached when the cascade began (None: before any)


@dataclass
class Skips:
    """A log's lines that say an optimizer step was skipped: DeepSpeed's `step=N, skipped=K` counter, an fp16 loss
    scaler's "overflow ... skipping step", a loop's "no valid groups at batch N, skipping"."""

    lines: int = 0  # skip lines (the counter's lines not among them)
    first_line: int | None = None
    example: str | None = None
    counter: tuple[int, int] | None = None  # DeepSpeed's counter at its furthest step: (step, skipped so far)
    counter_line: int | None = None
    first_skipped: int | None = None  # the first step whose counter line counts a skipped step
    at_floor: int = 0  # overflow lines whose loss scale could not be lowered (at its floor: "1.0, reducing to 1.0")
    floor_line: int | None = None


@dataclass
class LogScan:
    """What a streaming pass over one log found; bounded whatever the log's size."""

    path: str
    lines: int = 0
    metric_steps: int = 0
    last_step: int | None = None
    last_step_line: int | None = None
    crash: CrashInfo | None = None  # the crash of the log's last launch
    # the crashes of the launches a relaunch superseded (its banner again, its step counter back), oldest first
    superseded_crashes: list[CrashInfo] = field(default_factory=list)
    handled_tracebacks: int = 0
    progress_current: int | None = None
    progress_total: int | None = None
    progress_line: int | None = None
    started: bool = False
    # metric rows read off the console (verl `step:N - k:v`, TRL/ms-swift dict lines, OpenRLHF bar postfixes)
    metric_rows: list[dict[str, Any]] = field(default_factory=list)
    eval_rows: list[dict[str, Any]] = field(default_factory=list)
    planned_steps: int | None = None  # "Total training steps: N" (verl) or a training bar's N/TOTAL
    trainer: str | None = None  # which trainer wrote it, when the log says (banner, metric names, config dump)
    evidence: str | None = None  # what shows this is a training log (None: nothing does)
    # the run's end as the log tells it (lifecycle.py): the final summary dict, a completion line
    finished: str | None = None
    finished_line: int | None = None
    # metric-looking lines no reader understood: how many, their first line numbers, one example
    unread: int = 0
    unread_lines: list[int] = field(default_factory=list)
    unread_example: str | None = None
    readers: dict[str, int] = field(default_factory=dict)  # reader name -> metric rows it gave
    # step lines read but for their last pair, which no number could be read from (a line cut short: the real
    # verl run in tests/real_runs ends 16 of its 160 lines in `- val-aux` or `...:np.flo`): how many, where
    cut_short: int = 0
    cut_short_lines: list[int] = field(default_factory=list)
    cut_short_example: str | None = None
    left_unread: str | None = None  # how much of the log was left unread past a bound (bytes, time), said as a note
    skips: Skips = field(default_factory=Skips)
    # completions the log printed (console/samples.py): step and degenerate kind ("" for none); the first
    # degenerate ones as text
    samples: list[dict[str, Any]] = field(default_factory=list)
    excerpts: list[dict[str, Any]] = field(default_factory=list)

    def not_understood(self, lineno: int, text: str) -> None:
        self.unread += 1
        if len(self.unread_lines) < 10:
            self.unread_lines.append(lineno)
        if self.unread_example is None:
            self.unread_example = text.strip()[:200]

    def cut(self, lineno: int, pair: str) -> None:
        self.cut_short += 1
        if len(self.cut_short_lines) < 10:
            self.cut_short_lines.append(lineno)
        if self.cut_short_example is None:
            self.cut_short_example = pair[:80]


@dataclass(frozen=True)
class SourceFile:
    path: str
    role: str
    rows: int | None = None  # metric rows the file gave (None: not a metrics file)
    read_as: str | None = None  # what it was read as, when more specific than its role (e.g. "log: trl dicts")


@dataclass(frozen=True)
class Unread:
    """Metric data in a file that was not read (`data.unread`): the file, how many lines, which, an example."""

    file: str
    count: int
    lines: tuple[int, ...]
    example: str | None
    why: str


@dataclass(frozen=True)
class Resume:
    """Where the metric rows show the run was resumed (runs/formats/restarts.py)."""

    step: int  # the first step the resumed launch logged
    before: int  # the furthest step logged before it
    why: str
    source: str
    writers: int = 1  # runs whose rows interleave in the file from here (2 or more: they wrote it at once)


@dataclass
class Run:
    root: Path
    kind: str
    files: list[SourceFile] = field(default_factory=list)
    config_values: list[ConfigValue] = field(default_factory=list)
    rounds: list[Round] = field(default_factory=list)
    filter_stats: Table | None = None
    eval_history: Table | None = None
    solver_scores: Table | None = None
    calibration_events: Table | None = None
    perturbations: Table | None = None
    # Per-step metrics of a generic trainer run (TRL, verl, TensorBoard, W&B...), canonical names.
    metrics: Table | None = None
    metric_sources: dict[str, str] = field(default_factory=dict)  # canonical column -> raw key
    # canonical column -> raw key, for the columns no profile names and that were resolved by meaning
    metric_inferred: dict[str, str] = field(default_factory=dict)
    nonfinite: dict[str, tuple[int, int]] = field(default_factory=dict)  # column -> (first step, steps)
    resumes: list[Resume] = field(default_factory=list)  # where the metric rows show a resume
    resume_count: int = 0
    validation: Table | None = None  # (`step`, `validation`) from eval rows or val/ keys
    validation_key: str | None = None
    eval_loss: Table | None = None  # (`step`, `eval_loss`) from eval rows (eval_loss, eval/loss, val/loss)
    # per-sample rollout dumps (verl rollout_data_dir, NeMo-RL train_data_step*.jsonl): step, prompt, score
    rollouts: Table | None = None
    # the first degenerate completions read (analysis/degenerate.py), as text: source, sample, step, kind, text
    sample_excerpts: list[dict[str, Any]] = field(default_factory=list)
    planned_steps: tuple[int, str] | None = None  # (planned total, where it was read)
    trainer: str | None = None
    newest_mtime: float | None = None  # of the run's files: is it still being written?
    oldest_mtime: float | None = None  # with newest_mtime: files that all share one time were copied together
    mtime_files: int = 0  # how many files gave a modification time
    now: float = 0.0  # when the run was read (the clock rules compare mtimes with)
    logs: list[LogScan] = field(default_factory=list)
    parse_errors: list[ParseError] = field(default_factory=list)
    rule_overrides: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    display: str | None = None  # where the run lives when it is not `root` (a remote URL mirrored locally)
    single: str | None = None  # the one file of `root` that is the run, when a file was given as the run
    paradigm: str = "unknown"  # one of PARADIGMS
    paradigm_evidence: list[str] = field(default_factory=list)  # what decided it (metric names, config, banner)
    # traits of the paradigm: `agentic` (a policy-gradient run with turns or tool calls) -> the names that showed it
    traits: dict[str, list[str]] = field(default_factory=dict)
    unread: list[Unread] = field(default_factory=list)  # metric data that was not read (data.unread)
    # finished, crashed, stopped_early, in_progress or unknown (runs/lifecycle.py), and the evidence that decided
    lifecycle: str = "unknown"
    finished: str | None = None  # a structured file's own evidence that the run finished (a final summary row)
    lifecycle_evidence: str | None = None

    @property
    def where(self) -> str:
        """The run's location as the user gave it (a path, or an `s3://...` URL)."""
        return self.display or str(self.root)

    def config(self, leaf: str) -> ConfigValue | None:
        """The first config entry whose key ends in `leaf` (a leaf name or a dotted tail)."""
        for cv in self.config_values:
            if cv.name == leaf or cv.name.endswith("." + leaf):
                return cv
        return None

    def config_value(self, leaf: str, default: Any = None) -> Any:
        cv = self.config(leaf)
        return default if cv is None else cv.value

    @property
    def own_rounds(self) -> list[Round]:
        """The rounds the run has (a trainer run's derived components table left out)."""
        return [r for r in self.rounds if not r.derived]

    def rounds_of(self, role: str) -> list[Round]:
        return sorted((r for r in self.rounds if r.role == role), key=lambda r: r.index)

    def config_files(self) -> list[str]:
        return [f.path for f in self.files if f.role == "config"]
