#!/usr/bin/env python3
"""A `triage watch` pass after 1 MB is appended to a run's log, for logs of 100 MB and --gb gigabytes,
measured in one run: the pass must cost what was appended, not what the log holds.

Each size: the first pass (the whole log, once), then 1 MB appended (rollout text and metric lines),
then one pass (read the append, rebuild the series, evaluate every rule). Prints both passes' times,
the bytes each read, and the ratio of the append passes between the two sizes.

    python tools/bench_watch.py [--gb 1.0]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_logs import METRIC, NOISE, write_log  # noqa: E402

from triage_agent.commands.watch import WatchState, evaluate_pass  # noqa: E402
from triage_agent.runs.follow import Follower  # noqa: E402
from triage_agent.runs.load import load_run  # noqa: E402


def one_pass(run: Path, follower: Follower, state: WatchState) -> tuple[float, int, list[str]]:
    follower.read_bytes = 0
    t = time.perf_counter()
    loaded = load_run(run, reader=follower)
    events = evaluate_pass(loaded, state, time.time(), 3600.0)
    return time.perf_counter() - t, follower.read_bytes, [e.id for e in events]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gb", type=float, default=1.0)
    args = ap.parse_args()
    appended: dict[float, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in (0.1, args.gb):
            run = Path(tmp) / f"run{size}"
            run.mkdir()
            log = run / "verl_demo.log"
            write_log(log, int(size * 1e9))
            follower, state = Follower(), WatchState()
            first, read_first, _ = one_pass(run, follower, state)
            block = "".join(NOISE for _ in range(499))
            with log.open("a") as fh:
                written, step = 0, 10**6
                while written < 1_000_000:
                    chunk = block + METRIC.format(s=step, r=step % 97)
                    fh.write(chunk)
                    written += len(chunk)
                    step += 1
            second, read_second, events = one_pass(run, follower, state)
            appended[size] = second
            print(f"{log.stat().st_size / 1e6:,.0f} MB log: first pass {first:.2f} s (read {read_first / 1e6:,.0f} MB); "
                  f"after appending 1 MB: {second:.3f} s (read {read_second / 1e6:.1f} MB); events {events}")
            log.unlink()
    small, big = appended[0.1], appended[args.gb]
    print(f"append pass at {args.gb:g} GB / at 0.1 GB: {big / small:.2f}x (flat: the pass follows the append)")


if __name__ == "__main__":
    main()
