"""Console output of any trainer (verl, TRL/transformers, ms-swift, OpenRLHF, NeMo-RL), whatever its name.

A `*.log` is always read as a log. Any other text file (`nohup.out`, `train.txt`, `slurm-123.out`,
W&B's `files/output.log`, a terminal capture pasted into a `.md`) is read when its first or last
64 KiB hold training output: verl metric lines, trainer dict lines, a training progress bar, or a
Python traceback next to a trainer's name.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from triage_agent import bounded
from triage_agent.runs.formats.base import Format, FormatRead
from triage_agent.runs.logs import scan_log

SNIFF_BYTES = 1 << 16
TEXT_SUFFIXES = ("", ".out", ".txt", ".md", ".err", ".stdout", ".stderr", ".console")
_METRICS = re.compile(rb"step:\d+ - [\w/@.-]+:|\{'(?:loss|reward|grad_norm|learning_rate|kl|entropy)'\s*:|"
                      rb"'global_step/max_steps'|\d+/\d+ \[[\d:]+<[\d:?]+,[^\]]*(?:act_loss|reward|kl)=")
_CRASH = re.compile(rb"Traceback \(most recent call last\)|CUDA out of memory|Watchdog caught collective")
_TRAINER = re.compile(rb"verl|trl|transformers|GRPO|PPO|openrlhf|nemo_rl|swift|deepspeed|accelerate|torchrun|"
                      rb"Running training|Training Progress", re.I)


def _ends(path: Path) -> bytes:
    """The first and the last 64 KiB: discovery never reads a whole file."""
    try:
        with bounded.open_binary(path) as fh:
            size = os.fstat(fh.fileno()).st_size
            head = fh.read(SNIFF_BYTES)
            if size <= 2 * SNIFF_BYTES:
                return head + fh.read(SNIFF_BYTES)
            fh.seek(size - SNIFF_BYTES)
            return head + b"\n" + fh.read(SNIFF_BYTES)
    except OSError:
        return b""


def sniff(path: Path, rel: str) -> bool:
    suffix = path.suffix.lower()
    if suffix == ".log":
        return True
    if suffix not in TEXT_SUFFIXES or not path.is_file():
        return False
    data = _ends(path)
    if b"\x00" in data[:4096]:
        return False  # binary
    if _METRICS.search(data):
        return True
    # a crash counts only beside a trainer's name, and never in Markdown prose
    return suffix != ".md" and bool(_CRASH.search(data) and _TRAINER.search(data))


def _read(path: Path, rel: str) -> FormatRead:
    scan = scan_log(path, rel)
    return FormatRead(rows=scan.metric_rows, log=scan, eval_rows=scan.eval_rows,
                      planned_steps=scan.planned_steps, trainer=scan.trainer)


FORMAT = Format("log", sniff, _read, follow="log")
