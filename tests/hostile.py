"""Run CLI cases in forked children: each case gets its own process, a wall-clock limit and a memory cap,
and reports its exit code, output, time and peak memory (from wait4), so one bad case cannot take the
test run with it."""

from __future__ import annotations

import io
import json
import os
import resource
import signal
import time
from dataclasses import dataclass
from typing import Any

from rich.console import Console

MEMORY_CAP = 3 << 30  # a case past this fails with MemoryError instead of swapping the machine
RESULTS: list[Result] = []  # every case of this test session, for the summary line


@dataclass
class Result:
    argv: list[str]
    code: int | None  # None: killed (timeout or signal)
    stdout: str
    stderr: str
    seconds: float
    peak_mb: float
    signal: int | None = None

    def problems(self, allowed: set[int], limit_mb: float) -> list[str]:
        """What went wrong: the exit, a traceback, more than one error line, the memory. No time is asserted (a
        loaded machine makes every case slow): the case's own timeout is the hang guard, and a killed case is
        an exit of None."""
        out = []
        if self.code not in allowed:
            out.append(f"exit {self.code} (signal {self.signal})")
        if "Traceback (most recent call last)" in self.stderr:
            out.append("traceback on stderr")
        if len([x for x in self.stderr.strip().splitlines() if x.startswith("triage:")]) > 1:
            out.append("more than one error line")
        if self.peak_mb > limit_mb:
            out.append(f"{self.peak_mb:.0f} MB")
        return out


def _address_space() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def run(argv: list[str], env: dict[str, str] | None = None, timeout: float = 30.0, stdin: str | None = None) -> Result:
    """`triage ARGV` in a forked child with `env` applied; stdout/stderr captured at width 100."""
    from triage_agent.cli import main

    def call(out: io.StringIO, err: io.StringIO) -> int:
        if stdin is not None:
            import sys

            sys.stdin = io.StringIO(stdin)
        return main(argv, stdout=Console(file=out, width=100), stderr=Console(file=err, width=100, soft_wrap=True))

    return run_fn(call, argv, env, timeout)


def run_fn(fn: Any, argv: list[str] | None = None, env: dict[str, str] | None = None, timeout: float = 30.0) -> Result:
    """`fn(stdout, stderr) -> exit code` in a forked child (see `run`)."""
    r, w = os.pipe()
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(r)
        code: int | None = None
        out, err = io.StringIO(), io.StringIO()
        try:
            # a real `triage` starts as a fresh process: a forkserver the test process started earlier (a sweep
            # test run in-process) is not this child's to use, and waitpid on it fails
            import multiprocessing.forkserver as forkserver

            fs = forkserver._forkserver  # type: ignore[attr-defined]
            fs._forkserver_pid = fs._forkserver_address = fs._forkserver_alive_fd = None
            # the cap is on what the case adds: a child inherits the address space of a test process that has
            # grown (pyarrow's thread pools and arenas: 2.3 GB of address space after a hundred tests)
            cap = _address_space() + MEMORY_CAP
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
            os.environ.update(env or {})
            code = fn(out, err)
        except SystemExit as exc:  # argparse
            code = exc.code if isinstance(exc.code, int) else 2
        except BaseException as exc:  # noqa: BLE001 - reported to the parent as a failure
            err.write(f"Traceback (most recent call last):\nuncaught {type(exc).__name__}: {exc}\n")
            code = 99
        with os.fdopen(w, "w") as fh:
            json.dump({"code": code, "stdout": out.getvalue()[-8000:], "stderr": err.getvalue()[-8000:]}, fh)
        os._exit(0)
    os.close(w)
    deadline = t0 + timeout
    status, usage = 0, None
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if time.perf_counter() > deadline:
            os.kill(pid, signal.SIGKILL)
            _, status, usage = os.wait4(pid, 0)
            break
        time.sleep(0.01)
    seconds = time.perf_counter() - t0
    with os.fdopen(r) as fh:
        raw = fh.read()
    doc: dict[str, Any] = json.loads(raw) if raw else {"code": None, "stdout": "", "stderr": ""}
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    result = Result(argv or [], doc["code"] if sig is None else None, doc["stdout"], doc["stderr"], seconds,
                    usage.ru_maxrss / 1024 if usage else 0.0, sig)
    RESULTS.append(result)
    return result
