"""The console wing: streaming scans of free-text training logs, whatever the trainer (spec: architecture.md, "v4:
trainers and the console wing").

Logs can be gigabytes, so a scan reads them by blocks and parses only the lines holding a live dialect's marker
(blockscan.py, at close to disk speed), and keeps only bounded state. One module per kind of output, each a
`Dialect` (dialect.py) that tells the scan what it read through a narrow `Sink`:

- crashes.py: tracebacks (one per rank) and fatal lines, their kind, the root of a cascade, a crash per launch;
- bars.py: progress bars, the training bar among them, episode bars;
- verl.py: `step:N - key:value - ...` lines; transformers.py (with swift.py): `{'loss': ...}` dict lines;
  nemo.py: NeMo-RL's `===== Step N/T =====` blocks; openrlhf.py: the training bar's tqdm postfix;
  deepspeed_chat.py: DeepSpeed-Chat's step-3 loss line and reward line, one row;
- banners.py: the trainers' own banner lines from their profiles (trainer, planned total, completion);
- generic.py: a custom loop's metric lines, tried last;
- scanner.py: the one loop; reading.py: a file into it (line by line, or by blocks).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from triage_agent.runs.console.limits import MAX_LINE
from triage_agent.runs.console.text import clean

if TYPE_CHECKING:
    from triage_agent.runs.console.reading import scan_log, scan_log_lines, scan_range
    from triage_agent.runs.console.scanner import Scanner

__all__ = ["MAX_LINE", "Scanner", "clean", "scan_log", "scan_log_lines", "scan_range"]
# the scanner reads every trainer profile when it is imported, and a profile with its own dialect (Tinker's tables)
# imports this package: the scanner loads at first use, so that importing a profile first finds no half-read cycle
_LAZY = {"scan_log": "reading", "scan_log_lines": "reading", "scan_range": "reading", "Scanner": "scanner"}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
