#!/usr/bin/env python3
"""Scan a generated log of --gb gigabytes (verl-style console output with Ray prefixes, ANSI
codes, rollout dumps, a metric line every 500 lines and a crash at the end) and print the
scan's wall time, throughput and peak memory, measured in one run.

    python tools/bench_logs.py [--gb 1.0]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NOISE = ("\x1b[36m(CursorLoopWorker pid=57714)\x1b[0m <think>The cursor is near the button; let me reason about "
         "where the target element is on the screen before answering with coordinates.</think>\n")
METRIC = ("\x1b[36m(TaskRunner pid=38606)\x1b[0m step:{s} - critic/score/mean:np.float64(0.{r}) - "
          "response_length/mean:512.0 - response_length/clip_ratio:0.1 - actor/entropy:0.6 - timing_s/gen:12.0\n")
CHILD = """
import resource, sys, time
from pathlib import Path
from triage_agent.runs.logs import scan_log
t = time.perf_counter()
scan = scan_log(Path(sys.argv[1]), "big.log")
wall = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{wall:.2f} {peak:.1f} {scan.lines} {scan.metric_steps} {scan.crash.exception if scan.crash else None}")
"""
BASELINE = """
import resource
import triage_agent.runs.logs  # noqa: F401
print(f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f}")
"""


def write_log(path: Path, size: int) -> None:
    block = "".join(NOISE for _ in range(499))
    written, step = 0, 0
    with path.open("w") as fh:
        while written < size:
            step += 1
            chunk = block + METRIC.format(s=step, r=step % 97)
            fh.write(chunk)
            written += len(chunk)
        fh.write('Traceback (most recent call last):\n  File "main_ppo.py", line 53, in main\n'
                 "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gb", type=float, default=1.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "big.log"
        t = time.perf_counter()
        write_log(log, int(args.gb * 1e9))
        size_mb = os.path.getsize(log) / 1e6
        print(f"generated {size_mb:.0f} MB in {time.perf_counter() - t:.1f} s")
        base = float(subprocess.run([sys.executable, "-c", BASELINE], capture_output=True, text=True,
                                    check=True).stdout)
        out = subprocess.run([sys.executable, "-c", CHILD, str(log)], capture_output=True, text=True, check=True).stdout
        wall, peak, lines, steps, crash = out.split()
        print(f"scan: {wall} s ({size_mb / float(wall):.0f} MB/s), {int(lines):,} lines, {int(steps):,} metric steps, "
              f"crash: {crash}")
        print(f"peak RSS {float(peak):.0f} MB (interpreter + imports alone: {base:.0f} MB); "
              f"peak / file size = {float(peak) / size_mb:.3f}")


if __name__ == "__main__":
    main()
