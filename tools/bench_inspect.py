#!/usr/bin/env python3
"""Wall time of `triage inspect --json` on the largest sample run and on a generated run
with 1,000,000 per-step rows (JSONL and CSV), measured in one run of this script.

    python tools/bench_inspect.py [--rows 1000000]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent


def timed(run: Path) -> tuple[float, float]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "triage_agent", "inspect", str(run), "--json"],
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(proc.stderr)
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return wall, peak_mb


def big_run(root: Path, rows: int, ext: str) -> Path:
    rng = np.random.default_rng(0)
    run = root / f"big_{ext}"
    (run / "configs").mkdir(parents=True)
    (run / "configs" / "train_config.yaml").write_text(
        "reward:\n  weights:\n    boundary: 1.0\n    relevance: 0.5\n    format: 0.2\n    count: 0.1\n")
    step = np.arange(rows)
    frame = pd.DataFrame({"step": step, "boundary": np.clip(0.3 + 0.4 * step / rows + rng.normal(0, 0.02, rows), 0, 1),
                          "relevance": rng.uniform(0.4, 0.6, rows), "format": rng.uniform(0.8, 1.0, rows),
                          "count": rng.uniform(0.5, 0.7, rows)})
    folder = run / "selector_round1"
    folder.mkdir()
    if ext == "csv":
        frame.to_csv(folder / "reward_history.csv", index=False, float_format="%.5f")
    else:
        frame.round(5).to_json(folder / "reward_history.jsonl", orient="records", lines=True)
    return run


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    args = ap.parse_args()
    samples = sorted((ROOT / "sample_runs").iterdir(),
                     key=lambda p: sum(f.stat().st_size for f in p.rglob("*") if f.is_file()))
    largest = samples[-1]
    wall, _ = timed(largest)
    print(f"largest sample run ({largest.name}): {wall:.2f} s")
    with tempfile.TemporaryDirectory() as tmp:
        for ext in ("jsonl", "csv"):
            run = big_run(Path(tmp), args.rows, ext)
            size = sum(f.stat().st_size for f in run.rglob("*") if f.is_file()) / 1e6
            wall_big, peak = timed(run)
            print(f"{args.rows:,} per-step rows ({ext}, {size:.0f} MB): {wall_big:.2f} s "
                  f"(ratio to the sample run {wall_big / wall:.1f}x), peak RSS so far {peak:.0f} MB")


if __name__ == "__main__":
    main()
