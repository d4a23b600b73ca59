#!/usr/bin/env python3
"""What the driver of a remote sweep holds, by phase (issue 39), measured with tracemalloc, not guessed: runs
`triage inspect URL --out t.parquet --jobs 1` in this process with the runs' reading faked (each run's row made
from its name: the driver's own memory, without a reader's), and at the end of each phase (listed, located,
swept, written) prints Python's traced memory then and its peak during the phase, and what is held by file:line.

    AWS_ENDPOINT_URL=http://127.0.0.1:PORT python tools/trace_sweep_memory.py s3://bench/n10000 [--top 10]

Run it at two sizes (the runs of tools/bench_fleet.py's upload, on a moto server of your own) and compare.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import tracemalloc
from typing import Any

PHASES = ("swept",)  # the listing, the split and the table now stream inside the sweep (issue 39)


def fake_batch(batch: list[Any], opts: Any) -> list[dict[str, Any]]:
    """A row per run as a reader would send it back: every tenth run (`lr0/...`) with one finding."""
    rows = []
    for task in batch:
        found = [{"id": "policy.entropy_collapse", "severity": "high", "onset": 20, "title": "Entropy collapsed",
                  "numbers": {"from": 1.0, "to": 0.02}}] if task.name.startswith("lr0/") else []
        rows.append({"name": task.name, "path": task.display or task.location, "trainer": "trl", "kind": "grpo",
                     "paradigm": "rl", "lifecycle": "finished", "steps": 50, "worst": "high" if found else None,
                     "ids": [f["id"] for f in found], "findings": found, "by": None, "fetched": 0, "seconds": 0.01})
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("url")
    p.add_argument("--top", type=int, default=10)
    args = p.parse_args()
    os.environ.setdefault("COLUMNS", "200")
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="trace-sweep-")  # no result cache: every run "read"
    tracemalloc.start(1)
    import triage_agent.commands.inspect as inspect_cmd
    from triage_agent.cli import main as triage
    from triage_agent.commands import sweep

    marks: list[tuple[str, tracemalloc.Snapshot]] = []

    def mark(what: str) -> None:
        now, peak = tracemalloc.get_traced_memory()
        marks.append((what, tracemalloc.take_snapshot()))
        tracemalloc.reset_peak()
        print(f"{what:8s} now {now / 1e6:6.1f} MB, peak during the phase {peak / 1e6:6.1f} MB", flush=True)

    def wrap(fn: Any, what: str, before: str | None = None) -> Any:
        def wrapped(*a: Any, **k: Any) -> Any:
            if before:
                mark(before)
            out = fn(*a, **k)
            mark(what)
            return out
        return wrapped

    sweep.inspect_batch = fake_batch  # type: ignore[assignment]
    inspect_cmd.inspect_sweep = wrap(sweep.inspect_sweep, "swept", before="located")  # type: ignore[assignment]
    mark("start")
    out = os.path.join(os.environ["XDG_CACHE_HOME"], "t.parquet")
    triage(["inspect", args.url, "--out", out, "--jobs", "1"])
    mark("end")
    for what, snap in marks:
        if what in PHASES:
            print(f"== held at the end of '{what}' (the imports' own left out)")
            stats = [s for s in snap.statistics("lineno") if "<frozen" not in str(s) and "json/decoder" not in str(s)]
            for st in stats[:args.top]:
                print("  ", st)


if __name__ == "__main__":
    main()
