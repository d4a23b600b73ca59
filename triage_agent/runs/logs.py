"""Streaming scans of free-text logs: crashes, progress bars and verl-style metric lines.

Logs can be gigabytes, so a scan reads one line at a time, tests cheap byte
substrings before any regex, and keeps only bounded state: counters, the last
traceback, the last progress bar, and the metric values of a fixed set of keys.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from triage_agent.runs.model import CrashInfo, LogScan

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# Ray prefixes such as "(TaskRunner pid=38606)" or "(main_task pid=1, ip=10.0.0.1)"
_RAY_PREFIX = re.compile(r"^\((?:[\w.:-]+ )?pid=\w*(?:, ip=[\w.:]+)?\)\s?")
_RAY_REPEAT = re.compile(r"\s*\[repeated \d+x across cluster\]\s*$")
_METRIC_START = re.compile(r"(?:^|\s)step:(\d+)\s+-\s+")
_VALUE_WRAP = re.compile(r"^(?:np\.\w+|numpy\.\w+|tensor|torch\.tensor)\((.*?)(?:,\s*\w+=.*)?\)$")
_EXC_LINE = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:\((?P<inner>[A-Za-z_][\w.]*)\))?)(?::\s?(?P<msg>.*))?$")
_PROGRESS = re.compile(r"(?P<desc>[^|\r]*?):?\s*(?P<pct>\d+)%\|[^|]*\|\s*(?P<cur>\d+)/(?P<tot>\d+)\s*\[")
_FATAL = [
    (re.compile(r"CUDA out of memory|torch\.(?:cuda\.)?OutOfMemoryError|CUDA error: out of memory"), "CUDA OOM"),
    (re.compile(r"NCCL.*(?:[Tt]imeout|timed out)|Watchdog caught collective operation timeout"), "NCCL timeout"),
    (re.compile(r"Segmentation fault|core dumped|SIGSEGV"), "Segmentation fault"),
    (re.compile(r"^Killed$"), "Killed"),
    (re.compile(r"\b(?:loss|Loss)\b(?: is|:|=)\s*(?:nan|NaN|inf|-inf)\b|NaN or Inf found|non-finite loss", re.I), "NaN/inf loss"),
    (re.compile(r"ray\.exceptions\.\w+Error|RayTaskError|ActorDiedError"), "Ray task error"),
]
_FATAL_HINTS = (b"memory", b"NCCL", b"Watchdog", b"Segmentation", b"core dumped", b"SIGSEGV", b"Killed",
                b"nan", b"NaN", b"inf", b"Ray", b"Actor")
_EXC_SKIP = ("During handling", "The above exception", "Traceback")
# The console keys worth keeping per step (everything else is counted, not stored).
KEEP_PREFIXES = ("critic/score", "critic/rewards", "response_length/", "actor/entropy", "actor/kl", "actor/pg_loss",
                 "actor/ppo_kl", "val-core/", "val/", "reward", "rollout/", "frac_reward", "training/global_step",
                 "score", "loss")
MAX_METRIC_ROWS = 200_000  # bounded memory: beyond this, every other row is dropped (downsampling)


def clean(text: str) -> str:
    """Strip ANSI colours, the Ray worker prefix and Ray's repeat marker."""
    text = _ANSI.sub("", text)
    text = _RAY_PREFIX.sub("", text)
    return _RAY_REPEAT.sub("", text)


def parse_value(raw: str) -> float | None:
    raw = raw.strip()
    m = _VALUE_WRAP.match(raw)
    if m:
        raw = m.group(1)
    try:
        return float(raw)
    except ValueError:
        return None


def parse_metric_line(text: str) -> dict[str, Any] | None:
    """`step:3 - key:value - ...` (verl's concat_dict_to_str) -> {"step": 3, key: value, ...}."""
    m = _METRIC_START.search(text)
    if not m:
        return None
    row: dict[str, Any] = {"step": int(m.group(1))}
    for part in text[m.end():].split(" - "):
        key, sep, val = part.partition(":")
        if not sep:
            continue
        value = parse_value(val)
        if value is not None:
            row[key.strip()] = value
    return row


class _Traceback:
    """State of the traceback being read: whether a logger printed it, and its last exception line."""

    def __init__(self, logged: bool) -> None:
        self.logged = logged
        self.exception: tuple[str, str, int] | None = None


def _continues(tb: _Traceback, text: str, lineno: int) -> bool:
    """Whether `text` still belongs to the traceback being read (frames, chained causes, the exception)."""
    if text.startswith((" ", "\t")) or (not text.strip() and tb.exception is None):
        return True
    if text.startswith(_EXC_SKIP):
        return True
    em = _EXC_LINE.match(text.strip())
    if em and ("Error" in text or "Exception" in text or "Interrupt" in text or em.group("msg") is None):
        tb.exception = (em.group("inner") or em.group("type"), (em.group("msg") or "").strip()[:300], lineno)
        return True
    return False


def scan_log(path: Path, rel: str) -> LogScan:
    scan = LogScan(path=rel)
    tb: _Traceback | None = None
    last_crash: CrashInfo | None = None
    last_crash_after_progress = False
    stride = 1
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            scan.lines = lineno
            if not scan.started and raw.strip():
                scan.started = True
            interesting = (b"step:" in raw or b"Traceback" in raw or b"%|" in raw or tb is not None
                           or b"Error" in raw or any(h in raw for h in _FATAL_HINTS))
            if not interesting:
                continue
            text = clean(raw.decode("utf-8", errors="replace").rstrip("\r\n"))
            if tb is not None:
                if _continues(tb, text, lineno):
                    continue
                if tb.exception and not tb.logged:
                    etype, msg, eline = tb.exception
                    last_crash = CrashInfo(etype, msg, eline)
                    last_crash_after_progress = False
                tb = None
            if b"step:" in raw:
                row = parse_metric_line(text)
                if row is not None:
                    scan.metric_steps += 1
                    scan.last_step = row["step"]
                    scan.last_step_line = lineno
                    last_crash_after_progress = last_crash is not None
                    kept = {k: v for k, v in row.items() if k == "step" or k.startswith(KEEP_PREFIXES)}
                    if scan.metric_steps % stride == 0:
                        scan.metric_rows.append(kept)
                    if len(scan.metric_rows) >= MAX_METRIC_ROWS:
                        scan.metric_rows = scan.metric_rows[::2]
                        stride *= 2
                    continue
            if b"%|" in raw:
                for seg in text.split("\r"):
                    pm = _PROGRESS.search(seg)
                    if pm and re.search(r"train|epoch|step|iter", pm.group("desc"), re.I):
                        cur = int(pm.group("cur"))
                        if scan.progress_current is not None and cur > scan.progress_current:
                            last_crash_after_progress = last_crash is not None
                        scan.progress_current, scan.progress_total = cur, int(pm.group("tot"))
                        scan.progress_line = lineno
            idx = text.find("Traceback (most recent call last)")
            if idx >= 0:
                # a logger-printed traceback (ERROR:...:Traceback) is a handled error, not the end of the run
                tb = _Traceback(logged=idx > 0)
                if tb.logged:
                    scan.handled_tracebacks += 1
                continue
            for pattern, label in _FATAL:
                if pattern.search(text):
                    last_crash = CrashInfo(label, text.strip()[:300], lineno, fatal_pattern=label)
                    last_crash_after_progress = False
                    break
    if tb is not None and tb.exception and not tb.logged:
        etype, msg, eline = tb.exception
        last_crash = CrashInfo(etype, msg, eline)
        last_crash_after_progress = False
    # a crash counts only when nothing shows the run went on after it
    if last_crash is not None and not last_crash_after_progress:
        scan.crash = last_crash
    return scan
