"""`triage inspect DIR` on a folder of several runs: one report per run, ranked worst first.

The per-run work is one function, `inspect_one`, run in-process (`--jobs 1`), in a process pool
(`--jobs N`) or as Ray tasks on a cluster (`--executor ray`); only plain, small results travel back
(a row, and the run's JSON report when `--json` asks for it). Rows are kept, reports only when asked
for, so memory grows with the number of rows, not with the runs' data.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from triage_agent.errors import BadInput, TriageError, Unreachable
from triage_agent.extras import install_hint
from triage_agent.findings.model import SEVERITY_RANK
from triage_agent.runs import budget
from triage_agent.runs.sweep import Split

if TYPE_CHECKING:
    from rich.console import Console

SCHEMA = "triage.sweep/v1"
EXECUTORS = ("local", "ray")
RAY_IN_FLIGHT = 4  # Ray tasks submitted per cluster CPU at a time: the driver never holds the whole queue
Progress = Callable[[str, int, int], None]


@dataclass
class SweepRow:
    name: str
    path: str
    trainer: str | None = None
    kind: str | None = None
    steps: int | None = None
    worst: str | None = None  # the most severe finding's severity; None when there is none
    ids: list[str] = field(default_factory=list)
    error: str | None = None
    report: dict[str, Any] | None = None

    @property
    def rank(self) -> tuple[int, int, str]:
        """Worst first: runs that could not be read, then by the worst severity, then by finding count."""
        sev = -1 if self.error else SEVERITY_RANK.get(self.worst or "", len(SEVERITY_RANK))
        return (sev, -len(self.ids), self.name)


@dataclass
class SweepResult:
    root: str
    rows: list[SweepRow]
    notes: list[str] = field(default_factory=list)
    executor: str = "local"
    jobs: int = 1
    seconds: float = 0.0

    @property
    def worst(self) -> str | None:
        found = [r.worst for r in self.rows if r.worst]
        return min(found, key=lambda s: SEVERITY_RANK[s]) if found else None

    def fails(self, severity: str | None) -> bool:
        return bool(severity) and any(r.worst and SEVERITY_RANK[r.worst] <= SEVERITY_RANK[severity or "info"]
                                      for r in self.rows)

    def view(self, console: Console) -> None:
        from triage_agent.render.sweep import render

        render(self, console)

    def exit_code(self, fail_on: str | None = None) -> int:
        """1 when a run has a finding as severe as `fail_on` or worse (--fail-on), as one run's report would."""
        return 1 if self.fails(fail_on) else 0

    def document(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "root": self.root, "executor": self.executor, "jobs": self.jobs,
                "runs": [{"name": r.name, "path": r.path, "trainer": r.trainer, "kind": r.kind, "steps": r.steps,
                          "worst": r.worst, "ids": r.ids, **({"error": r.error} if r.error else {}),
                          **({"report": r.report} if r.report is not None else {})} for r in self.rows],
                "notes": self.notes}


def _steps(run: Any) -> int | None:
    if run.metrics is not None:
        return len(run.metrics.frame)
    lengths = [len(r.history.frame) for r in run.rounds if r.history is not None]
    if lengths:
        return sum(lengths)
    logged = [s.metric_steps for s in run.logs if s.metric_steps]
    return max(logged) if logged else None


def inspect_one(location: str, name: str, display: str | None, now: float, keep_report: bool) -> dict[str, Any]:
    """One run of a sweep: its row (and JSON report when asked). The same in every executor."""
    from triage_agent.report import offline_report
    from triage_agent.runs.load import load_run

    row: dict[str, Any] = {"name": name, "path": display or location}
    try:
        with budget.run_budget():  # a run past its budget is a row that says so; the other runs still report
            report = offline_report(load_run(location, now=now, split=False, display=display))
    except TriageError as exc:
        row["error"] = str(exc)
        return row
    except budget.OverBudget as exc:
        row["error"] = str(exc)
        return row
    except MemoryError:
        row["error"] = budget.out_of_memory()
        return row
    ranked = sorted(report.findings, key=lambda f: SEVERITY_RANK[f.severity])
    row.update(trainer=report.run.trainer, kind=report.run.kind, steps=_steps(report.run),
               worst=ranked[0].severity if ranked else None, ids=[f.id for f in ranked])
    if keep_report:
        row["report"] = report.document()
    return row


def _tasks(split: Split, display_root: str | None, by_url: bool) -> list[tuple[str, str, str | None]]:
    """(location, name, display) per run. A remote sweep's runs are shown by their URLs; Ray tasks get
    the URL itself (the worker may be on another machine: it fetches into its own cache)."""
    out = []
    for r in split.runs:
        shown = (display_root.rstrip("/") + ("" if r.name == "." else "/" + r.name)) if display_root else None
        out.append((shown if by_url and shown else str(r.path), r.name, shown))
    return out


def _local(tasks: list[tuple[str, str, str | None]], jobs: int, now: float, keep: bool) -> Iterator[dict[str, Any]]:
    """The runs read by `jobs` processes: this one and jobs - 1 workers, taking batches from one queue. This
    process starts reading at once, while the workers start (~0.7 s for the imports), and reads on while they
    do (it was idle, waiting for results: --jobs 2 gave 1.4x instead of 2x)."""
    if jobs <= 1:
        for loc, name, shown in tasks:
            yield inspect_one(loc, name, shown, now, keep)
        return
    import multiprocessing as mp
    import queue
    import threading
    from collections import deque
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

    ctx = _context(mp)
    # runs are taken a few at a time: one message per small run cost about as much as reading it
    size = max(1, min(16, len(tasks) // (jobs * 8)))
    batches = deque(tasks[i:i + size] for i in range(0, len(tasks), size))
    lock, stop = threading.Lock(), threading.Event()
    results: queue.Queue[list[dict[str, Any]] | BaseException | None] = queue.Queue()

    def take() -> list[tuple[str, str, str | None]] | None:
        with lock:
            return batches.popleft() if batches and not stop.is_set() else None

    def feed(pool: ProcessPoolExecutor, early: Future[list[dict[str, Any]]] | None) -> None:
        """Keeps each worker two batches ahead until the queue is empty; their rows go to `results`."""
        try:
            running: set[Future[list[dict[str, Any]]]] = {early} if early is not None else set()
            while True:
                while len(running) < 2 * (jobs - 1) and (batch := take()) is not None:
                    running.add(pool.submit(inspect_batch, batch, now, keep))
                if not running:
                    break
                finished, running = wait(running, return_when=FIRST_COMPLETED)
                for fut in finished:
                    results.put(fut.result())
        except BaseException as exc:  # noqa: BLE001  # a worker's failure is raised in this process, below
            results.put(exc)
        finally:
            results.put(None)

    fed = threading.Event()  # the feeder's last word (None) was read

    def drained(block: bool) -> Iterator[dict[str, Any]]:
        while not fed.is_set():
            try:
                got = results.get(block=block)
            except queue.Empty:
                return
            if got is None:
                fed.set()
                return
            if isinstance(got, BaseException):
                raise got
            yield from got

    with ProcessPoolExecutor(max_workers=jobs - 1, mp_context=ctx) as pool:
        # the first submit starts the workers: from this thread, before the feeder's exists (a fork sees one thread)
        first = take()
        early = pool.submit(inspect_batch, first, now, keep) if first is not None else None
        feeder = threading.Thread(target=feed, args=(pool, early), name="triage-sweep-feed", daemon=True)
        feeder.start()
        try:
            while (batch := take()) is not None:
                yield from inspect_batch(batch, now, keep)
                yield from drained(block=False)
            yield from drained(block=True)  # the workers' last batches, until the feeder is done
        finally:
            stop.set()  # on an error or Ctrl-C here, the feeder submits nothing more
            feeder.join()


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


def inspect_batch(batch: list[tuple[str, str, str | None]], now: float, keep: bool) -> list[dict[str, Any]]:
    """A few runs of a sweep in one worker task (see `_local`)."""
    return [inspect_one(loc, name, shown, now, keep) for loc, name, shown in batch]


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


def _ray(tasks: list[tuple[str, str, str | None]], address: str | None, now: float,
         keep: bool) -> Iterator[dict[str, Any]]:
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
        remote = ray.remote(inspect_one).options(num_cpus=1, max_retries=1)
        limit = max(1, int(ray.cluster_resources().get("CPU", 1)) * RAY_IN_FLIGHT)  # type: ignore[no-untyped-call]
        queue, pending = list(tasks), []  # type: list[tuple[str, str, str | None]], list[Any]
        while queue or pending:
            while queue and len(pending) < limit:
                loc, name, shown = queue.pop(0)
                pending.append(remote.remote(loc, name, shown, now, keep))
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                yield ray.get(ref)
    finally:
        if started_here:
            ray.shutdown()


def inspect_sweep(split: Split, *, jobs: int | None = None, executor: str = "local", ray_address: str | None = None,
                  keep_reports: bool = False, progress: Progress | None = None, now: float | None = None,
                  display_root: str | None = None) -> SweepResult:
    """Inspect every run of a split folder; rows ranked worst first (errors on top)."""
    start = time.monotonic()
    now = time.time() if now is None else now
    jobs = max(1, jobs or os.cpu_count() or 1)
    tasks = _tasks(split, display_root, by_url=executor == "ray")
    results: Iterable[dict[str, Any]] = (_ray(tasks, ray_address, now, keep_reports) if executor == "ray"
                                         else _local(tasks, min(jobs, len(tasks)), now, keep_reports))
    rows: list[SweepRow] = []
    for i, got in enumerate(results):
        rows.append(SweepRow(**got))
        if progress:
            progress(got["name"], i, len(tasks))
    rows.sort(key=lambda r: r.rank)
    if rows and all(r.error for r in rows):
        # nothing was inspected: the same one-line refusal (exit 2) as a single folder with nothing recognisable
        raise BadInput(f"{display_root or split.root}: none of its {len(rows)} folders holds a recognisable run "
                       f"(first: {rows[0].error})")
    return SweepResult(display_root or str(split.root), rows, list(split.notes), executor,
                       jobs if executor == "local" else 0, time.monotonic() - start)
