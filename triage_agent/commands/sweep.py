"""`triage inspect DIR` on a folder of several runs: one report per run, ranked worst first.

The per-run work is one function, `inspect_one`, run in-process (`--jobs 1`), in a process pool
(`--jobs N`) or as Ray tasks on a cluster (`--executor ray`), in batches sized from the measured cost of a run;
only plain, small results travel back (a row, and the run's JSON report when `--json` asks for it). A remote
sweep's runs carry their files' names from the driver's one listing and are fetched by the worker that reads
them. Rows are kept, reports only when asked for, so memory grows with the number of rows, not with the runs'
data. A run unchanged since a sweep before is taken from the result cache (sweep_cache.py), and `--shard I/N`
takes one job's share of the runs.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from triage_agent.commands import sweep_cache
from triage_agent.errors import BadInput, TriageError, Unreachable
from triage_agent.extras import install_hint
from triage_agent.findings.model import SEVERITY_RANK
from triage_agent.runs import budget, remote, stores
from triage_agent.runs.sweep import Split
from triage_agent.safe import bounded, redact

if TYPE_CHECKING:
    from rich.console import Console

SCHEMA = "triage.sweep/v1"
EXECUTORS = ("local", "ray")
RAY_IN_FLIGHT = 2  # Ray tasks (batches) submitted per cluster CPU at a time: the driver never holds the whole queue
# a task (a batch of runs) aims at this long: Ray's guide puts a task's overhead near 1 ms and sees no gain from
# tasks under ~10 ms; a run of a small sweep takes ~2-20 ms (more with its fetch), so runs go in batches
TASK_SECONDS = 0.5
MAX_BATCH = 64  # runs in one task, at most (a batch that fails is retried run by run)
FIRST_COST = 0.03  # seconds a run is taken to cost before one is measured
# a remote batch's runs fetched at a time (threads: the fetch waits on the store); each thread holds one object of
# at most ONE_REQUEST_BYTES in memory, or streams it to disk
FETCH_THREADS = 8
BY_FIELDS = ("trainer", "paradigm", "kind", "lifecycle")  # --by KEY: these are the run's own; other keys are config
MAX_NUMBERS = 20  # key numbers of one finding kept in its row (its evidence's top-level numbers)
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class Task:
    """One run of a sweep, as sent to a worker: where it is, its name, how it is shown, and for a remote run the
    listing of its files (the worker fetches them: nothing passes through the driver)."""

    location: str
    name: str
    display: str | None = None
    files: dict[str, dict[str, Any]] | None = None
    key: str | None = None  # the result cache's key, when the run has one


@dataclass(frozen=True)
class Options:
    now: float
    keep: bool = False  # the run's JSON report travels back (--json)
    by: str | None = None  # --by KEY: the value of KEY is in the row


@dataclass
class SweepRow:
    name: str
    path: str
    trainer: str | None = None
    kind: str | None = None
    paradigm: str | None = None
    lifecycle: str | None = None
    steps: int | None = None
    worst: str | None = None  # the most severe finding's severity; None when there is none
    ids: list[str] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)  # id, severity, onset, title, numbers
    by: str | None = None  # the value of --by KEY for this run ("(not set)" never: None)
    error: str | None = None
    report: dict[str, Any] | None = None
    seconds: float = 0.0  # reading it (and fetching it) in its worker; 0 when reused
    fetched: int = 0  # bytes its worker fetched
    cached: bool = False  # reused from the result cache

    @property
    def rank(self) -> tuple[int, int, str]:
        """Worst first: runs that could not be read, then by the worst severity, then by finding count."""
        sev = -1 if self.error else SEVERITY_RANK.get(self.worst or "", len(SEVERITY_RANK))
        return (sev, -len(self.ids), self.name)


KEEP_ROWS = 200  # ranked rows the driver keeps of a sweep for the terminal (render.sweep shows the 200 worst)
# with --json: the worst runs kept with their reports (~10-50 KB each); the rest are counted and said, and the table
# of results (--out) has every run
JSON_ROWS = 1_000
ORDER = ("unreadable", "high", "medium", "low", "info", "clean")  # a run's tally: by its worst severity


def tally_key(r: SweepRow) -> str:
    return "unreadable" if r.error else r.worst or "clean"


@dataclass
class SweepResult:
    root: str
    rows: list[SweepRow]  # ranked worst first: every run, or the worst of a large sweep (`runs` counts them all)
    notes: list[str] = field(default_factory=list)
    executor: str = "local"
    jobs: int = 1
    seconds: float = 0.0
    by: str | None = None
    shard: tuple[int, int] | None = None
    total: int = 0  # runs in the sweep (a shard's rows are its share of them)
    reused: int = 0  # rows taken from the result cache
    driver_bytes: int = 0  # bytes of runs fetched by this process (none when the workers fetch them all)
    runs: int | None = None  # runs reported (None: the rows are all of them)
    tally: dict[str, int] | None = None  # runs by their worst severity (ORDER) (None: counted from the rows)
    groups: list[Prevalence] | None = None  # --by KEY's counts (None: counted from the rows)
    written: int | None = None  # rows written to the table of results (--out), when there is one

    @property
    def count(self) -> int:
        return len(self.rows) if self.runs is None else self.runs

    def tallies(self) -> dict[str, int]:
        if self.tally is not None:
            return self.tally
        counts: dict[str, int] = {}
        for r in self.rows:
            counts[tally_key(r)] = counts.get(tally_key(r), 0) + 1
        return counts

    @property
    def worst(self) -> str | None:
        found = [s for s in self.tallies() if s in SEVERITY_RANK]
        return min(found, key=lambda s: SEVERITY_RANK[s]) if found else None

    def fails(self, severity: str | None) -> bool:
        return bool(severity) and any(SEVERITY_RANK[s] <= SEVERITY_RANK[severity or "info"]
                                      for s in self.tallies() if s in SEVERITY_RANK)

    def prevalence(self) -> list[Prevalence]:
        """--by KEY: per value, the runs read and how many of them have each finding (errors left out)."""
        if not self.by:
            return []
        return self.groups if self.groups is not None else prevalence(self.rows)

    def view(self, console: Console) -> None:
        from triage_agent.render.sweep import render

        render(self, console)

    def exit_code(self, fail_on: str | None = None) -> int:
        """1 when a run has a finding as severe as `fail_on` or worse (--fail-on), as one run's report would."""
        return 1 if self.fails(fail_on) else 0

    def document(self) -> dict[str, Any]:
        left = self.count - len(self.rows)
        return {"schema": SCHEMA, "root": self.root, "executor": self.executor, "jobs": self.jobs,
                **({"shard": f"{self.shard[0]}/{self.shard[1]}", "total": self.total} if self.shard else {}),
                "reused": self.reused, "driver_fetched_bytes": self.driver_bytes,
                **({"runs_total": self.count, "runs_left_out": left,
                    "runs_left_out_by_worst": self.by_worst(self.rows)} if left else {}),
                "runs": [{"name": r.name, "path": r.path, "trainer": r.trainer, "kind": r.kind, "paradigm": r.paradigm,
                          "lifecycle": r.lifecycle, "steps": r.steps, "worst": r.worst, "ids": r.ids,
                          **({"by": r.by} if self.by else {}), **({"error": r.error} if r.error else {}),
                          **({"report": r.report} if r.report is not None else {})} for r in self.rows],
                **({"by": {"key": self.by, "values": [p.document() for p in self.prevalence()]}} if self.by else {}),
                "notes": self.notes}

    def by_worst(self, besides: Sequence[SweepRow] = ()) -> dict[str, int]:
        """The runs by their worst severity, in ORDER, less those in `besides` (a head of `rows`: the ones shown)."""
        left = dict(self.tallies())
        for r in besides:
            left[tally_key(r)] -= 1
        return {k: left[k] for k in ORDER if left.get(k)}


@dataclass
class Prevalence:
    value: str | None  # None: runs without the key
    runs: int
    counts: dict[str, int]  # finding id -> runs with it

    def share(self, finding: str) -> float:
        return self.counts.get(finding, 0) / self.runs if self.runs else 0.0

    def document(self) -> dict[str, Any]:
        return {"value": self.value, "runs": self.runs,
                "findings": {k: {"runs": n, "share": round(n / self.runs, 4)} for k, n in self.counts.items()}}


def _value_order(value: str | None) -> tuple[int, float, str]:
    """Values in their numeric order when they are numbers (1e-06 before 1e-05), else by text; unset last."""
    if value is None:
        return (2, 0.0, "")
    try:
        return (0, float(value), value)
    except ValueError:
        return (1, 0.0, value)


def count_prevalence(groups: dict[str | None, Prevalence], r: SweepRow) -> None:
    """One run into --by KEY's counts (a run that could not be read is left out)."""
    if r.error:
        return
    g = groups.setdefault(r.by, Prevalence(r.by, 0, {}))
    g.runs += 1
    for fid in set(r.ids):
        g.counts[fid] = g.counts.get(fid, 0) + 1


def ordered(groups: dict[str | None, Prevalence]) -> list[Prevalence]:
    out = sorted(groups.values(), key=lambda p: _value_order(p.value))
    return [Prevalence(p.value, p.runs, dict(sorted(p.counts.items(), key=lambda kv: (-kv[1], kv[0])))) for p in out]


def prevalence(rows: Iterable[SweepRow]) -> list[Prevalence]:
    groups: dict[str | None, Prevalence] = {}
    for r in rows:
        count_prevalence(groups, r)
    return ordered(groups)


def _steps(run: Any) -> int | None:
    if run.metrics is not None:
        return len(run.metrics.data)
    lengths = [len(r.history.data) for r in run.rounds if r.history is not None]
    if lengths:
        return sum(lengths)
    logged = [s.metric_steps for s in run.logs if s.metric_steps]
    return max(logged) if logged else None


def _by_value(run: Any, key: str) -> str | None:
    """--by KEY's value in a run: one of its own fields, else its config's (a dotted key or a leaf), as text."""
    if key in BY_FIELDS:
        got = getattr(run, key)
    else:
        cv = run.config(key)
        got = None if cv is None else cv.value
    if got is None:
        return None
    return redact.text(got if isinstance(got, str) else json.dumps(got, default=str))[:200]


def _numbers(evidence: dict[str, Any]) -> dict[str, float]:
    """A finding's key numbers: its evidence's top-level numbers (finite), at most MAX_NUMBERS."""
    out: dict[str, float] = {}
    for k, v in evidence.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and len(out) < MAX_NUMBERS:
            out[str(k)[:100]] = v
    return out


def _failed(task: Task, error: str, started: float, fetched: int = 0) -> dict[str, Any]:
    return {"name": task.name, "path": task.display or task.location, "error": error,
            "seconds": time.monotonic() - started, "fetched": fetched}


def inspect_one(task: Task, opts: Options, ahead: Future[remote.Mirror] | None = None) -> dict[str, Any]:
    """One run of a sweep: its row (and JSON report when asked). The same in every executor. A remote run's files
    are fetched here, in the worker, within the run's budget (or were being fetched since its batch began: `ahead`,
    whose wait is within the budget)."""
    from triage_agent.report import offline_report
    from triage_agent.runs.load import load_run
    from triage_agent.runs.locate import Located

    started = time.monotonic()
    fetched = 0
    try:
        if task.files is not None:  # the store's client, imported and opened before the run's budget starts
            remote.open_store(task.location)
        with budget.run_budget():  # a run past its budget is a row that says so; the other runs still report
            location: str | Path = task.location
            notes: list[str] = []
            if task.files is not None:
                got = ahead.result() if ahead is not None else remote.fetch_files(task.location, task.files)
                location, fetched, notes = got.path, got.fetched_bytes, got.summary()
            # the run as the split found it: located already, never split again
            shown = task.display or (task.location if task.files else None)
            report = offline_report(load_run(Located(Path(location), display=shown), now=opts.now))
            report.notes[:0] = notes
    except (TriageError, budget.OverBudget) as exc:
        return _failed(task, str(exc), started, fetched)
    except MemoryError:
        return _failed(task, budget.out_of_memory(), started, fetched)
    ranked = sorted(report.findings, key=lambda f: SEVERITY_RANK[f.severity])
    run = report.run
    row: dict[str, Any] = {
        "name": task.name, "path": task.display or task.location, "trainer": run.trainer, "kind": run.kind,
        "paradigm": run.paradigm, "lifecycle": run.lifecycle, "steps": _steps(run),
        "worst": ranked[0].severity if ranked else None, "ids": [f.id for f in ranked],
        "findings": [{"id": f.id, "severity": f.severity, "onset": f.onset_step, "title": redact.text(f.title),
                      "numbers": _numbers(f.evidence)} for f in ranked],
        "by": _by_value(run, opts.by) if opts.by else None, "fetched": fetched}
    if opts.keep:
        row["report"] = report.document()
    row["seconds"] = time.monotonic() - started
    return row


def inspect_batch(batch: list[Task], opts: Options) -> list[dict[str, Any]]:
    """A few runs of a sweep in one worker task (see `_local`, `_ray`). A remote batch's runs are fetched
    FETCH_THREADS at a time ahead of the one being read: a small run's fetch is mostly waiting on the store (two
    objects from moto: ~50 ms of waiting against ~10 ms of reading), which threads overlap; the reading stays in
    this thread, where the run's budget holds."""
    remote_runs = [t for t in batch if t.files is not None]
    if len(remote_runs) < 2:
        return [_one(task, opts) for task in batch]
    from concurrent.futures import ThreadPoolExecutor

    remote.open_store(remote_runs[0].location)  # the client imported once, here, before its threads use it
    pool = ThreadPoolExecutor(min(FETCH_THREADS, len(remote_runs)), thread_name_prefix="triage-fetch")
    try:
        ahead = {id(t): pool.submit(remote.fetch_files, t.location, t.files or {}) for t in remote_runs}
        return [_one(task, opts, ahead.get(id(task))) for task in batch]
    finally:  # a fetch still running (its run was past its budget) ends on its own bounds; nothing waits for it
        pool.shutdown(wait=False, cancel_futures=True)


def _one(task: Task, opts: Options, ahead: Future[remote.Mirror] | None = None) -> dict[str, Any]:
    _mark(task.name)  # in a local sweep's worker: the run it reads now, should it die
    row = inspect_one(task, opts, ahead)
    _mark("")
    return row


class Cost:
    """The measured seconds per run, for the size of the next batch (shared by the threads of `_local`)."""

    def __init__(self) -> None:
        self.seconds, self.runs = 0.0, 0

    def add(self, rows: Iterable[dict[str, Any]]) -> None:
        for r in rows:
            self.seconds += float(r.get("seconds") or 0.0)
            self.runs += 1

    def batch(self, remaining: int, workers: int) -> int:
        """Runs in the next task: about TASK_SECONDS of work, at most MAX_BATCH, and never so many that a worker
        would sit idle while another holds the last runs (a share of what remains for each worker, halved)."""
        per_run = self.seconds / self.runs if self.runs else FIRST_COST
        size = int(TASK_SECONDS / max(per_run, 1e-4))
        return max(1, min(MAX_BATCH, size, -(-remaining // (2 * max(1, workers)))))


def _tasks(split: Split, display_root: str | None, base_url: str | None = None,
           files: dict[str, dict[str, dict[str, Any]]] | None = None) -> list[Task]:
    """A task per run. A remote sweep's runs are given by their URLs below `base_url` with their files from the
    driver's listing; each worker fetches its own (the worker may be on another machine, with its own cache)."""
    out = []
    for r in split.runs:
        shown = (display_root.rstrip("/") + ("" if r.name == "." else "/" + r.name)) if display_root else None
        if base_url is not None and files is not None:
            url = base_url.rstrip("/") + ("" if r.name == "." else "/" + r.name)
            out.append(Task(url, r.name, shown, files.get(r.name, {})))
        else:
            out.append(Task(str(r.path), r.name, shown))
    return out


class Waiting:
    """The runs not sent yet: taken from the sweep's stream of runs as batches are made, at most `ahead` of them
    taken before they are sent (the stream's listing waits meanwhile), so the driver never queues the sweep."""

    def __init__(self, source: Iterable[Task], ahead: int) -> None:
        self.source, self.ahead = iter(source), max(1, ahead)
        self.queue: deque[Task] = deque()
        self.ended = False

    def _fill(self, n: int) -> None:
        while not self.ended and len(self.queue) < n:
            try:
                self.queue.append(next(self.source))
            except StopIteration:
                self.ended = True

    def __bool__(self) -> bool:
        self._fill(1)
        return bool(self.queue)

    def known(self) -> int | None:
        """How many runs there are to send, once the stream has ended; None before."""
        self._fill(self.ahead)
        return len(self.queue) if self.ended else None

    def take(self, cost: Cost, workers: int) -> list[Task]:
        """The next batch (`Cost.batch`; while the stream goes on, as if the runs to come were many)."""
        size = cost.batch(len(self.queue) if self.known() is not None else 1 << 30, workers)
        self._fill(size)
        return [self.queue.popleft() for _ in range(min(size, len(self.queue)))]

    def back(self, runs: list[Task]) -> None:
        self.queue.extendleft(reversed(runs))


def _local(given: Waiting | Iterable[Task], jobs: int, opts: Options) -> Iterator[dict[str, Any]]:
    """The runs read by `jobs` processes: this one and jobs - 1 workers, taking batches from one queue. This
    process starts reading at once, while the workers start (~0.7 s for the imports), and reads on while they
    do (it was idle, waiting for results: --jobs 2 gave 1.4x instead of 2x). Batches are sized from the measured
    cost of a run (`Cost`): one message per small run cost about as much as reading it. The first batch goes to a
    worker. A worker that dies (the OOM killer, a crash in a reader, its run's CPU limit) is a row for the run it
    was reading, and the pool is started anew for the others (`Pool`)."""
    tasks = given if isinstance(given, Waiting) else Waiting(given, MAX_BATCH * 2 * jobs)
    if jobs <= 1:  # in batches too: a remote batch's fetches overlap (inspect_batch)
        cost = Cost()
        while chunk := tasks.take(cost, 1):
            rows = inspect_batch(chunk, opts)
            cost.add(rows)
            yield from rows
        return
    import queue
    import threading

    waiting = tasks
    cost = Cost()
    lock, stop = threading.Lock(), threading.Event()
    results: queue.Queue[list[dict[str, Any]] | BaseException | None] = queue.Queue()

    def take() -> list[Task] | None:
        with lock:  # the stream of runs (its listing, its cache lookups) is advanced by one thread at a time
            if stop.is_set():
                return None
            return waiting.take(cost, jobs) or None

    def measured(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        with lock:
            cost.add(rows)
        return rows

    def again(runs: list[Task]) -> None:  # the runs of a dead worker's batches that it was not reading
        with lock:
            waiting.back(runs)

    def feed(pool: Pool) -> None:
        """Keeps each worker two batches ahead until the queue is empty; their rows go to `results`."""
        try:
            while True:
                while pool.room(2 * (jobs - 1)) and (batch := pool.alone() or take()) is not None:
                    pool.submit(batch)
                if not pool.running:
                    break
                for got in pool.finished(again):
                    results.put(measured(got))
        except BaseException as exc:  # noqa: BLE001  # a worker's failure is raised in this process, below
            results.put(exc)
        finally:
            pool.close()
            results.put(None)

    fed = threading.Event()  # the feeder's last word (None) was read

    def drained(wait: float) -> Iterator[dict[str, Any]]:
        """The workers' rows so far, waiting up to `wait` seconds for the first."""
        while not fed.is_set():
            try:
                got = results.get(timeout=wait) if wait else results.get(block=False)
            except queue.Empty:
                return
            wait = 0
            if got is None:
                fed.set()
                return
            if isinstance(got, BaseException):
                raise got
            yield from got

    # the first submit starts the workers: from this thread, before the feeder's exists (a fork sees one thread)
    pool = Pool(jobs - 1, opts)
    feeder = threading.Thread(target=feed, args=(pool,), name="triage-sweep-feed", daemon=True)
    try:
        if (first := take()) is not None:
            pool.submit(first)
        feeder.start()
        while not fed.is_set():  # until the feeder is done; runs a dead worker left come back to the queue
            if (batch := take()) is not None:
                yield from measured(inspect_batch(batch, opts))
                yield from drained(0)
            else:
                yield from drained(0.05)  # the workers' last batches
    finally:
        stop.set()  # on an error or Ctrl-C here, the feeder submits nothing more
        if feeder.ident is not None:
            feeder.join()  # it closes the pool
        else:
            pool.close()


MAX_RESTARTS = 32  # pools started anew after a worker died, in one sweep; past it, this process reads the rest


class Pool:
    """The worker processes of a local sweep, started anew when one dies. Each worker writes the name of the run it
    is reading to a file named by its pid (in a folder of this sweep's), so the run that was being read when a
    worker died is known, and is a row that says how it died; the other runs of the batches the dead pool held
    go back to the queue. A run named by no file (a worker that died between runs) is read again on its own, one
    at a time, and a row if that worker dies too."""

    def __init__(self, workers: int, opts: Options) -> None:
        import tempfile

        self.workers, self.opts = workers, opts
        self.folder = tempfile.mkdtemp(prefix="triage-sweep-")
        self.running: dict[Future[list[dict[str, Any]]], list[Task]] = {}
        self.suspects: list[Task] = []  # runs of a dead pool that no worker named: each read alone
        self.restarts = 0
        self.procs: set[Any] = set()  # this pool's processes (multiprocessing's), for their exit codes
        self.executor: Any = None
        self._start()

    def _start(self) -> None:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        self.procs = set()
        self.executor = ProcessPoolExecutor(max_workers=self.workers, mp_context=_context(mp),
                                            initializer=_worker_start, initargs=(self.folder, budget.settings()))

    def room(self, most: int) -> bool:
        """Whether another batch may be sent: fewer than `most` in flight, and while a run is read alone, none."""
        if self.suspects and self.running:
            return False
        return len(self.running) < most and self.restarts <= MAX_RESTARTS

    def alone(self) -> list[Task] | None:
        return [self.suspects.pop(0)] if self.suspects else None

    def submit(self, batch: list[Task]) -> None:
        import multiprocessing as mp
        from concurrent.futures.process import BrokenProcessPool

        try:
            fut = self.executor.submit(inspect_batch, batch, self.opts)
        except BrokenProcessPool as exc:  # the pool died since the last batch: this one is its too
            fut = Future()
            fut.set_exception(exc)
        self.running[fut] = batch
        self.procs.update(mp.active_children())  # a new worker started for it, if one did

    def finished(self, again: Callable[[list[Task]], None]) -> list[list[dict[str, Any]]]:
        """The rows of the batches that end next. When the pool died: a row for each run a dead worker was
        reading, its other runs back to the queue (`again`), and a new pool."""
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool

        done, _ = wait(self.running, return_when=FIRST_COMPLETED)
        out, broken = [], False
        for fut in done:
            batch = self.running.pop(fut)
            exc = fut.exception()
            if exc is None:
                out.append(fut.result())
            elif isinstance(exc, BrokenProcessPool):
                broken = True
                self.running[fut] = batch  # handled with the rest of the pool's batches, below
            else:
                raise exc
        if broken:
            out.extend(self._died(again))
        return out

    def _died(self, again: Callable[[list[Task]], None]) -> list[list[dict[str, Any]]]:
        from concurrent.futures import wait

        wait(self.running)  # every batch of a dead pool ends (with its rows, or failed)
        self.executor.shutdown(wait=True)  # the workers are gone: their exit codes are known
        dead = {p.pid: _death(p.exitcode) for p in self.procs if p.exitcode not in (None, 0, -15)}
        reading = {name: why for pid, why in dead.items() if (name := _reading(self.folder, pid))}
        out, back = [], []
        for fut, batch in self.running.items():
            if fut.exception() is None:
                out.append(fut.result())
                continue
            for task in batch:
                why = reading.get(task.name)
                if why is None and len(batch) == 1 and not reading and len(self.running) == 1 and dead:
                    why = next(iter(dead.values()))  # read alone, and its worker died: it was this run
                if why is not None:
                    out.append([_failed(task, f"worker died: {why}", time.monotonic())])
                elif reading:
                    back.append(task)  # another run killed the worker: this one is read as before
                else:
                    self.suspects.append(task)
        self.running = {}
        again(back)
        self.restarts += 1
        if self.restarts <= MAX_RESTARTS:
            self._start()
        else:  # workers that keep dying: the runs no worker named go back to this process's queue
            again(self.suspects)
            self.suspects = []
        return out

    def close(self) -> None:
        import shutil

        if self.executor is not None:
            self.executor.shutdown(wait=True, cancel_futures=True)
        shutil.rmtree(self.folder, ignore_errors=True)


def _worker_start(folder: str, budgets: dict[str, str | None]) -> None:
    """A local sweep's worker, as it starts: the sweep's budgets, its runs' CPU-time limit on (budget.as_worker), and
    where it says which run it is reading."""
    budget.as_worker(budgets)
    _Reading.folder = folder


class _Reading:
    folder: str | None = None  # set in a local sweep's worker: a file named by its pid holds the run it reads


def _mark(name: str) -> None:
    """Say which run this worker reads now ("" between runs): one small write, read only if the worker dies."""
    if _Reading.folder is None:
        return
    import contextlib

    with contextlib.suppress(OSError):
        bounded.write_new(os.path.join(_Reading.folder, str(os.getpid())), name.encode("utf-8", "surrogateescape"))


def _reading(folder: str, pid: int) -> str | None:
    """The run the worker `pid` said it was reading, if any (the file is this sweep's own, written by its worker)."""
    try:
        got = bounded.read_bytes(os.path.join(folder, str(pid)), 1 << 16).decode("utf-8", "surrogateescape")
    except OSError:
        return None
    return got or None


def _death(code: int | None) -> str:
    """How a worker ended, from its exit code (minus a signal's number when a signal ended it)."""
    import signal

    if code is None or code >= 0:
        return f"exited with status {code}"
    try:
        sig = signal.Signals(-code)
    except ValueError:
        return f"killed by signal {-code}"
    why = {signal.SIGXCPU: "its run's CPU time passed the budget, TRIAGE_RUN_CPU_SECONDS",
           signal.SIGKILL: "the out-of-memory killer, or another process", signal.SIGSEGV: "a crash in a reader",
           signal.SIGBUS: "a crash in a reader", signal.SIGABRT: "a reader aborted"}.get(sig)
    return f"killed by {sig.name}" + (f" ({why})" if why else "")


def _context(mp: Any) -> Any:
    """How the workers start. A fork of this process when it runs no other thread: it has imported the readers
    and rules already, so a worker starts reading at once. Else forkserver (a fork of a process with a thread
    running could copy a lock that thread holds): the server imports the readers and rules once and each worker
    forks from it, ~0.9 s after the start. Spawn where neither exists."""
    import threading

    methods = mp.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return mp.get_context("fork")
    if "forkserver" not in methods:
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["triage_agent.commands.sweep", "triage_agent.report", "triage_agent.runs.load"])
    return ctx


RAY_CONNECT_SECONDS = 5.0  # Ray itself retries an unreachable head for minutes before it gives up


def _reachable(address: str | None) -> None:
    """Fail fast, in one line, when a given Ray head (`HOST:PORT`, `ray://HOST:PORT`) does not accept a
    connection: only the address given is tried (Ray would go on to the node's own addresses)."""
    if not address or address in ("auto", "local"):
        return
    import socket

    hostport = address.split("://", 1)[-1].rstrip("/")
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise BadInput(f"--ray-address {address!r}: give HOST:PORT (or ray://HOST:PORT, auto, local)")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=RAY_CONNECT_SECONDS).close()
    except OSError as exc:
        raise Unreachable(f"cannot reach Ray at {address} ({exc.strerror or type(exc).__name__}); is the head "
                          "running, on that port?") from None


def _ray(tasks: Waiting | Iterable[Task], address: str | None, opts: Options) -> Iterator[dict[str, Any]]:
    try:
        import ray
    except ImportError:
        raise BadInput(f"--executor ray needs Ray: {install_hint('ray')}") from None
    started_here = not ray.is_initialized()
    if started_here:
        address = address or os.environ.get("RAY_ADDRESS") or None
        _reachable(address)
        try:
            ray.init(address=address, include_dashboard=False,
                     log_to_driver=False, configure_logging=False)
        except Exception as exc:  # noqa: BLE001 - Ray's connection errors come in many types
            raise BadInput(f"cannot start or reach Ray ({type(exc).__name__}: {str(exc)[:200]})") from None
    try:
        yield from _ray_batches(ray, tasks, opts)
    finally:
        if started_here:
            ray.shutdown()


def _ray_batches(ray: Any, given: Waiting | Iterable[Task], opts: Options) -> Iterator[dict[str, Any]]:
    """Batches of runs as Ray tasks, a few per CPU in flight, sized from the measured cost of a run; the rows of
    each batch as it ends. A batch whose task fails (its worker died: a crash, the OOM killer) is sent again run
    by run, so one poisoned run is a row with its reason and the others of its batch are read."""
    tasks = given if isinstance(given, Waiting) else Waiting(given, MAX_BATCH * 4)
    remote = ray.remote(inspect_batch).options(num_cpus=1, max_retries=0)
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    alone: deque[Task] = deque()
    pending: dict[Any, list[Task]] = {}
    cost = Cost()
    while tasks or alone or pending:
        while (alone or tasks) and len(pending) < cpus * RAY_IN_FLIGHT:
            batch = [alone.popleft()] if alone else tasks.take(cost, cpus)
            pending[remote.remote(batch, opts)] = batch
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            batch = pending.pop(ref)
            try:
                rows = ray.get(ref)
            except ray.exceptions.RayError as exc:
                if len(batch) > 1:
                    alone.extend(batch)
                    continue
                rows = [_failed(batch[0], f"not read: its Ray task failed ({stores.short(exc)[:160]})",
                                time.monotonic())]
            cost.add(rows)
            yield from rows


SHARD = re.compile(r"^(\d+)/(\d+)$")


def parse_shard(text: str) -> tuple[int, int]:
    """`i/N` (0 <= i < N): this job's share of a sweep split over N independent jobs."""
    m = SHARD.match(text.strip())
    if m is None or not 0 <= int(m.group(1)) < int(m.group(2)) <= 100_000:
        raise BadInput(f"--shard {text!r}: give i/N with 0 <= i < N (e.g. 0/4 .. 3/4: $SLURM_ARRAY_TASK_ID/N)")
    return int(m.group(1)), int(m.group(2))


def in_shard(name: str, shard: tuple[int, int]) -> bool:
    """Whether the run named `name` (its path below the sweep) is shard i's of N: by a digest of the name, so
    every job, listing on its own, agrees on each run's shard whatever else it lists."""
    digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).digest()
    return int.from_bytes(digest[:8], "big") % shard[1] == shard[0]


LOOKUP_RUNS = 256  # runs looked up in the result cache at a time, as the stream of runs gives them


def _lookups(tasks: Iterable[Task], opts: Options, store: sweep_cache.Store | None,
             reused: Callable[[dict[str, Any]], None]) -> Iterator[Task]:
    """The tasks to send: a task whose key's row is in the result cache is not sent (a remote run's key is made
    from the listing: it is not fetched either); its row goes to `reused`."""
    if store is None:
        yield from tasks
        return
    import itertools

    salt = json.dumps({"by": opts.by})  # an entry with the report serves a sweep without; one without, a miss
    source = iter(tasks)
    while chunk := list(itertools.islice(source, LOOKUP_RUNS)):
        keyed = [replace(task, key=sweep_cache.remote_key(task.files, task.display or task.location, salt)
                         if task.files is not None
                         else sweep_cache.local_key(Path(task.location), task.display or task.location, salt))
                 for task in chunk]
        found = store.load([t.key for t in keyed if t.key], opts.keep)
        for task in keyed:
            row = found.get(task.key) if task.key else None
            if row is not None:
                reused({**row, "name": task.name, "path": task.display or task.location, "cached": True})
            else:
                yield task


CACHED_FIELDS = tuple(sweep_cache.ROW_FIELDS)


class Kept:
    """What the driver keeps of a sweep's rows as they arrive (from its workers, or the result cache, from two
    threads: one lock): the `keep` worst, ranked; the runs counted by worst severity; --by's counts per value;
    the table's rows written at once. Never a row per run: flat in memory from 1,000 runs to 10,000."""

    def __init__(self, keep: int, by: str | None, table: Any, store: sweep_cache.Store | None,
                 keys: dict[str, str | None], progress: Progress | None) -> None:
        import threading

        self.keep, self.by, self.table, self.store, self.keys, self.progress = keep, by, table, store, keys, progress
        self.lock = threading.Lock()
        self.ranked: list[SweepRow] = []
        self.tally: dict[str, int] = {}
        self.groups: dict[str | None, Prevalence] = {}
        self.runs = self.reused = self.died = self.fetched = 0

    def add(self, got: dict[str, Any]) -> None:
        with self.lock:
            key = self.keys.pop(got["name"], None) if not got.get("cached") else None
            if self.store and key and not got.get("error") and got.get("lifecycle") != "in_progress":
                self.store.store(key, {k: got[k] for k in CACHED_FIELDS if k in got})
            row = SweepRow(**got)
            self.runs += 1
            self.reused += row.cached
            self.fetched += row.fetched
            self.died += bool(row.error and row.error.startswith("worker died: "))
            self.tally[tally_key(row)] = self.tally.get(tally_key(row), 0) + 1
            if self.by:
                count_prevalence(self.groups, row)
            if self.table is not None:
                self.table.add(row)
            if not self.keep_report(row):
                row.report = None
            self.ranked.append(row)
            if len(self.ranked) >= 2 * self.keep:
                self.ranked.sort(key=lambda r: r.rank)
                del self.ranked[self.keep:]
            if self.progress:
                self.progress(row.name, self.runs - 1, 0)

    def keep_report(self, row: SweepRow) -> bool:
        return True

    def rows(self) -> list[SweepRow]:
        self.ranked.sort(key=lambda r: r.rank)
        del self.ranked[self.keep:]
        return self.ranked


class _Counted:
    def __init__(self) -> None:
        self.every = self.chosen = self.sent = 0


def _chosen(tasks: Iterable[Task], shard: tuple[int, int] | None, counted: _Counted) -> Iterator[Task]:
    for task in tasks:
        counted.every += 1
        if shard is None or in_shard(task.name, shard):
            counted.chosen += 1
            yield task


def _streamed(stream: Any, display_root: str | None, base_url: str | None) -> Iterator[Task]:
    """A remote sweep's runs as its listing gives them (locate.RunStream): a task each, with its files."""
    for name, files in stream:
        shown = (display_root.rstrip("/") + ("" if name == "." else "/" + name)) if display_root else None
        url = (base_url or "").rstrip("/") + ("" if name == "." else "/" + name)
        yield Task(url, name, shown, files)


def inspect_sweep(split: Split, *, jobs: int | None = None, executor: str = "local", ray_address: str | None = None,
                  keep_reports: bool = False, progress: Progress | None = None, now: float | None = None,
                  display_root: str | None = None, base_url: str | None = None,
                  files: dict[str, dict[str, dict[str, Any]]] | None = None, by: str | None = None,
                  shard: tuple[int, int] | None = None, use_cache: bool = True, stream: Any = None,
                  table: Path | None = None) -> SweepResult:
    """Inspect every run of a split folder, or of a remote sweep's `stream` (locate.RunStream), or this shard's
    share of them; the worst rows ranked (errors on top), the table of results written as the runs end. Runs
    unchanged since a sweep before are taken from the result cache; the others are read (and fetched, for a
    remote sweep, by their workers). A stream whose split a late file undid is swept again, split whole."""
    from triage_agent.runs.sweep import Misspeculated

    start = time.monotonic()
    again: list[str] = []
    while True:
        try:
            result = _sweep(split, jobs, executor, ray_address, keep_reports, progress, now, display_root, base_url,
                            files, by, shard, use_cache, stream, table)
        except Misspeculated as exc:
            if stream is None or not stream.speculate:
                raise
            again.append(f"{exc.args[0] or '.'}: trainer output beside runs listed after them: the sweep was "
                         "split again from its whole listing")
            stream.again()
            continue
        result.notes[:0] = again
        result.seconds = time.monotonic() - start
        return result


def _sweep(split: Split, jobs: int | None, executor: str, ray_address: str | None, keep_reports: bool,
           progress: Progress | None, now: float | None, display_root: str | None, base_url: str | None,
           files: dict[str, dict[str, dict[str, Any]]] | None, by: str | None, shard: tuple[int, int] | None,
           use_cache: bool, stream: Any, table_path: Path | None) -> SweepResult:
    opts = Options(time.time() if now is None else now, keep_reports, by)
    jobs = max(1, jobs or os.cpu_count() or 1)
    counted = _Counted()
    source = _streamed(stream, display_root, base_url) if stream is not None else \
        _tasks(split, display_root, base_url, files)
    store = sweep_cache.Store() if use_cache else None
    table: Any = None
    if table_path is not None:
        from triage_agent.render.results import Table

        table = Table(table_path, shard, by)
    keys: dict[str, str | None] = {}
    kept = Kept(JSON_ROWS if keep_reports else KEEP_ROWS, by, table, store, keys, progress)

    def sent(tasks: Iterable[Task]) -> Iterator[Task]:
        for task in tasks:
            keys[task.name] = task.key
            counted.sent += 1
            yield task

    try:
        waiting = Waiting(sent(_lookups(_chosen(source, shard, counted), opts, store, kept.add)),
                          MAX_BATCH * 2 * jobs)
        here = remote.fetched_here()
        if not waiting:
            results: Iterable[dict[str, Any]] = ()
        elif executor == "ray":
            results = _ray(waiting, ray_address, opts)
        else:
            results = _local(waiting, min(jobs, waiting.known() or jobs), opts)
        for got in results:
            kept.add(got)
        pruned = store.prune() if store else 0
        written = table.finish(ordered(kept.groups)) if table is not None else None
    finally:
        if store:
            store.close()
        if table is not None:
            table.abort()
    rows = kept.rows()
    if rows and kept.tally.get("unreadable", 0) == kept.runs:
        # nothing was inspected: the same one-line refusal (exit 2) as a single folder with nothing recognisable
        raise BadInput(f"{display_root or split.root}: none of its {kept.runs} folders holds a recognisable run "
                       f"(first: {rows[0].error})")
    notes = [*(stream.notes if stream is not None else []), *split.notes]
    if shard:
        notes.append(f"shard {shard[0]}/{shard[1]}: {counted.chosen:,} of the sweep's {counted.every:,} runs")
    if store:
        notes.append(f"reused {kept.reused:,} of {counted.chosen:,} run(s) from the result cache; read "
                     f"{counted.sent:,}")
        if pruned:
            rows_at_most, bytes_at_most = sweep_cache.bound()
            notes.append(f"pruned {pruned:,} least recently used row(s) from the result cache (it keeps at most "
                         f"{rows_at_most:,} rows and {bytes_at_most >> 20:,} MB)")
        if store.error:
            notes.append(store.error)
    if kept.died:
        notes.append(f"{kept.died:,} run(s) ended the worker reading them (their rows say how); a new worker read on")
    if kept.runs > len(rows):
        notes.append(f"the {len(rows):,} worst of {kept.runs:,} runs are kept here"
                     + (" (--json lists them; --out has every run)" if keep_reports else ""))
    fetched_here = remote.fetched_here() - here
    if files is not None or stream is not None:
        notes.append(f"the runs were fetched by the processes that read them: {kept.fetched:,} bytes, "
                     f"{fetched_here:,} of them by this one")
    if progress and kept.runs:
        progress("", kept.runs - 1, kept.runs)
    return SweepResult(display_root or str(split.root), rows, notes, executor,
                       jobs if executor == "local" else 0, 0.0, by, shard, counted.every,
                       kept.reused, fetched_here, kept.runs, dict(kept.tally), ordered(kept.groups) if by else None,
                       written)
