"""The result cache of a sweep: a run whose inputs did not change since the last sweep is not read again.

A run's key is a digest of its location, each input's identity (a local file's size, mtime and inode; a remote
object's ETag or other version, and size), triage's version with a digest of its code, the rules' defaults and
what the row holds (`--by KEY`); a row kept without its JSON report is a miss for `--json`. The rows live in one
SQLite file, `$XDG_CACHE_HOME/triage/results/rows.sqlite` (folder 0700, file 0600): a sweep looks its runs up in
a few queries (a file a run cost a sweep of 10,000 cached runs ~10,000 opens). A row read back is untrusted like
any input: bounded in bytes, checked field by field, and a bad one is a miss (read again, written anew); a file
that is not such a database is replaced. The cache is bounded (CACHE_ENTRIES, CACHE_BYTES): past either, the
least recently used rows (looked up or written) are pruned at the end of a sweep, which says how many. Only rows
of runs that were read and had ended are kept: a run still in progress is judged against the clock, and a failed
read may pass next time. The cache is never needed: when it cannot be opened or written, the sweep reads every
run and says so.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from triage_agent import __version__
from triage_agent.findings.model import SEVERITY_RANK
from triage_agent.findings.rules import DEFAULTS
from triage_agent.runs import discover as disc
from triage_agent.safe import bounded, json_in

SCHEMA = "triage.result-cache/v2"  # v1 kept a file a row (results/<2 hex>/<key>.json); v2, one SQLite file
DB_NAME = "rows.sqlite"
ENTRY_BYTES = 64 << 20  # one cached row with its JSON report (a report is ~10-100 KB; a hostile row is refused)
# the cache's bound: past either, the least recently used rows go. A row is ~0.5-2 KB, ~10-100 KB with its --json
# report: 200,000 rows are twenty sweeps of 10,000 runs, and 1 GiB holds ~10,000 reports
CACHE_ENTRIES = 200_000  # TRIAGE_RESULT_CACHE_ROWS changes it
CACHE_BYTES = 1 << 30  # TRIAGE_RESULT_CACHE_MB changes it
QUERY_KEYS = 500  # keys looked up in one query (SQLite allows 999 parameters in older builds)
COMMIT_ROWS, COMMIT_SECONDS = 500, 2.0  # new rows written in one transaction: a sweep cut short keeps most of its
BUSY_SECONDS = 30.0  # waiting for another sweep's write to the same cache (shards of one job array on one node)
RUN_FILES = 10_000  # files stat'ed for one local run's key; a run with more is not cached (read every time)
MAX_TEXT = 100_000  # characters of one string field of a cached row
MAX_ITEMS = 10_000  # finding ids or finding rows of one cached row


def bound(env: Mapping[str, str] | None = None) -> tuple[int, int]:
    """(rows, bytes) the cache keeps at most: CACHE_ENTRIES and CACHE_BYTES, or the environment's."""
    env = os.environ if env is None else env
    out = [CACHE_ENTRIES, CACHE_BYTES]
    for i, (name, unit) in enumerate((("TRIAGE_RESULT_CACHE_ROWS", 1), ("TRIAGE_RESULT_CACHE_MB", 1 << 20))):
        with contextlib.suppress(ValueError):
            got = float(env.get(name, "nan"))
            if math.isfinite(got) and got >= 0:
                out[i] = int(got * unit)
    return out[0], out[1]


def root(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME") or Path.home()) / ".cache")
    return Path(base) / "triage" / "results"


@cache
def fingerprint() -> str:
    """triage's version, a digest of its code (a change between releases counts) and of the rules' defaults."""
    h = hashlib.sha256(f"{__version__}\0{json.dumps(DEFAULTS, sort_keys=True, default=str)}".encode())
    package = Path(__file__).resolve().parent.parent
    for path in sorted(package.rglob("*.py")):
        h.update(path.relative_to(package).as_posix().encode() + b"\0")
        with contextlib.suppress(OSError):
            h.update(bounded.read_bytes(path, 16 << 20))
    return h.hexdigest()


def _digest(location: str, salt: str, items: list[str]) -> str:
    h = hashlib.sha256(f"{SCHEMA}\0{fingerprint()}\0{salt}\0{location}\0".encode())
    for item in items:
        h.update(item.encode("utf-8", "surrogateescape") + b"\0")
    return h.hexdigest()


def local_key(path: Path, location: str, salt: str) -> str | None:
    """The key of a local run folder: every file below it (hidden folders but `.hydra` left out, as discovery
    does) by path, size, mtime and inode. None when it cannot be told (unreadable, too many files)."""
    items: list[str] = []
    stack = [(path, "", 0)]
    try:
        while stack:
            folder, below, depth = stack.pop()
            with os.scandir(folder) as it:
                for entry in it:
                    rel = f"{below}{entry.name}"
                    if entry.is_dir():
                        if (not entry.name.startswith(".") or entry.name == ".hydra") and depth < disc.MAX_DEPTH + 1:
                            stack.append((Path(entry.path), rel + "/", depth + 1))
                        continue
                    st = entry.stat()
                    items.append(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}\0{st.st_dev}")
                    if len(items) > RUN_FILES:
                        return None
    except OSError:
        return None
    return _digest(location, salt, sorted(items))


def remote_key(files: Mapping[str, Mapping[str, Any]], location: str, salt: str) -> str | None:
    """The key of a remote run from its listing: each object's path, size and version (ETag...). None when an
    object has no version (a change could not be seen)."""
    items = []
    for rel, info in sorted(files.items()):
        version = [f"{k}={v}" for k, v in info.items() if k not in ("name", "size")]
        if not version:
            return None
        items.append(f"{rel}\0{info.get('size')}\0{version[0]}")
    return _digest(location, salt, items)


class Store:
    """The result cache's rows, in one SQLite file; every call is a miss (or a no-op) once it has failed. A sweep
    looks runs up from the thread that takes the next batch and keeps rows from another: one lock serialises them."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self.path = root(env) / DB_NAME
        self.db: sqlite3.Connection | None = None
        self.error: str | None = None  # why the cache is not used (said once by the sweep)
        self.pending: list[tuple[str, bytes, int, int]] = []
        self.last_commit = time.monotonic()
        self.lock = threading.RLock()
        self._open()

    def _open(self) -> None:
        try:
            for folder in (self.path.parent.parent, self.path.parent):
                folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.db = self._connect()
            _drop_v1(self.path.parent)
        except sqlite3.DatabaseError:  # not a database (a broken or foreign file): ours to replace
            self.close()
            try:
                self.path.unlink(missing_ok=True)
                self.db = self._connect()
            except (OSError, sqlite3.Error) as exc:
                self._fail(exc)
        except (OSError, sqlite3.Error) as exc:
            self._fail(exc)

    def _connect(self) -> sqlite3.Connection:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)  # 0600 from its first byte
        os.close(fd)
        db = sqlite3.connect(self.path, timeout=BUSY_SECONDS, isolation_level=None, check_same_thread=False)
        try:
            db.execute("PRAGMA trusted_schema=OFF")
            db.execute("PRAGMA synchronous=OFF")  # a cache: a write a power cut loses is a miss, a file it breaks is
            # replaced; waiting for the disk at each of a sweep's commits is not worth it
            db.execute("PRAGMA auto_vacuum=FULL")  # pruned rows give their pages back to the file system
            db.execute("CREATE TABLE IF NOT EXISTS rows (key TEXT PRIMARY KEY, row BLOB NOT NULL, "
                       "bytes INTEGER NOT NULL, used INTEGER NOT NULL)")
            db.execute("CREATE INDEX IF NOT EXISTS rows_used ON rows (used)")
            db.execute("SELECT key, row, bytes, used FROM rows LIMIT 0")  # a table of this name but not ours
        except sqlite3.Error:
            db.close()
            raise
        return db

    def _fail(self, exc: BaseException) -> None:
        self.close()
        self.error = f"the result cache {self.path} is not used ({type(exc).__name__}: {str(exc)[:160]})"

    def close(self) -> None:
        with self.lock:
            if self.db is not None:
                with contextlib.suppress(sqlite3.Error):
                    self.flush()
                with contextlib.suppress(sqlite3.Error):
                    self.db.close()
            self.db = None

    def load(self, keys: list[str], want_report: bool) -> dict[str, dict[str, Any]]:
        """The valid rows kept under `keys` (with the report, when asked for), marked as just used."""
        with self.lock:
            if self.db is None or not keys:
                return {}
            got: dict[str, dict[str, Any]] = {}
            try:
                for at in range(0, len(keys), QUERY_KEYS):
                    part = keys[at:at + QUERY_KEYS]
                    marks = ",".join("?" * len(part))
                    for key, blob in self.db.execute(f"SELECT key, row FROM rows WHERE key IN ({marks}) AND "  # noqa: S608
                                                     "length(row) <= ?", (*part, ENTRY_BYTES)):
                        row = _row(blob, want_report)
                        if isinstance(key, str) and row is not None:
                            got[key] = row
                self.db.execute("BEGIN IMMEDIATE")  # one transaction marks them all used
                self.db.executemany("UPDATE rows SET used = ? WHERE key = ?", [(time.time_ns(), k) for k in got])
                self.db.execute("COMMIT")
            except sqlite3.Error as exc:
                self._fail(exc)
                return {}
            return got

    def store(self, key: str, row: Mapping[str, Any]) -> None:
        """Keep `row` under `key` (written in batches: every COMMIT_ROWS rows or COMMIT_SECONDS, and at the end)."""
        with self.lock:
            if self.db is None:
                return
            try:
                blob = json.dumps(dict(row)).encode()
            except (TypeError, ValueError):
                return
            if len(blob) <= ENTRY_BYTES:
                self.pending.append((key, blob, len(blob), time.time_ns()))
            if len(self.pending) >= COMMIT_ROWS or time.monotonic() - self.last_commit > COMMIT_SECONDS:
                self.flush()

    def flush(self) -> None:
        with self.lock:
            if self.db is None or not self.pending:
                return
            try:
                self.db.execute("BEGIN IMMEDIATE")
                self.db.executemany("INSERT OR REPLACE INTO rows (key, row, bytes, used) VALUES (?, ?, ?, ?)",
                                    self.pending)
                self.db.execute("COMMIT")
            except sqlite3.Error as exc:
                self._fail(exc)
            self.pending.clear()
            self.last_commit = time.monotonic()

    def prune(self, max_entries: int | None = None, max_bytes: int | None = None) -> int:
        """Remove the least recently used rows past `max_entries` rows or `max_bytes` bytes (the bounds, by
        default); how many."""
        with self.lock:
            max_entries = bound()[0] if max_entries is None else max_entries
            max_bytes = bound()[1] if max_bytes is None else max_bytes
            self.flush()
            if self.db is None:
                return 0
            try:
                count, total = self.db.execute("SELECT count(*), total(bytes) FROM rows").fetchone()
                if count <= max_entries and total <= max_bytes:
                    return 0
                drop, excess = max(0, count - max_entries), total - max_bytes
                if excess > 0:  # the oldest rows whose bytes make up the excess (and at least `drop` of them)
                    freed, n = 0, 0
                    for (size,) in self.db.execute("SELECT bytes FROM rows ORDER BY used, key"):
                        if freed >= excess and n >= drop:
                            break
                        freed, n = freed + int(size), n + 1
                    drop = n
                self.db.execute("BEGIN IMMEDIATE")
                self.db.execute("DELETE FROM rows WHERE key IN (SELECT key FROM rows ORDER BY used, key LIMIT ?)", (drop,))
                self.db.execute("COMMIT")
            except sqlite3.Error as exc:
                self._fail(exc)
                return 0
            return int(drop)


V1_FILE = re.compile(r"^\.?[0-9a-f]{64}\.json(\.\d+\.part)?$")


def _drop_v1(top: Path) -> None:
    """The rows an older triage kept a file each (`<2 hex>/<key>.json`): removed, as nothing reads them now."""
    with contextlib.suppress(OSError), os.scandir(top) as it:
        for entry in it:
            if len(entry.name) == 2 and all(c in "0123456789abcdef" for c in entry.name) and \
                    entry.is_dir(follow_symlinks=False):
                with contextlib.suppress(OSError), os.scandir(entry.path) as files:
                    for f in files:
                        if V1_FILE.match(f.name) and f.is_file(follow_symlinks=False):
                            os.unlink(f.path)
                with contextlib.suppress(OSError):
                    os.rmdir(entry.path)


def _row(blob: Any, want_report: bool) -> dict[str, Any] | None:
    """A stored row when it is what a sweep's row holds (and has the report, when asked for); None otherwise."""
    if not isinstance(blob, bytes):
        return None
    try:
        doc = json_in.loads(blob)
    except ValueError:
        return None
    row = valid_row(doc)
    if row is None or (want_report and not isinstance(row.get("report"), dict)):
        return None
    return row


def _text(v: Any) -> bool:
    return isinstance(v, str) and len(v) <= MAX_TEXT


def _opt(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: v is None or check(v)


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and abs(v) < 1 << 62


def _severity(v: Any) -> bool:
    return isinstance(v, str) and v in SEVERITY_RANK


def _numbers(v: Any) -> bool:
    return isinstance(v, dict) and len(v) <= 100 and all(
        _text(k) and isinstance(x, (int, float)) and not isinstance(x, bool) for k, x in v.items())


FINDING_FIELDS: dict[str, Callable[[Any], bool]] = {
    "id": _text, "severity": _severity, "onset": _opt(_int), "title": _text, "numbers": _numbers}


def _finding(v: Any) -> bool:
    return isinstance(v, dict) and set(v) == set(FINDING_FIELDS) and all(FINDING_FIELDS[k](x) for k, x in v.items())


ROW_FIELDS: dict[str, Callable[[Any], bool]] = {
    "trainer": _opt(_text), "kind": _opt(_text), "paradigm": _opt(_text), "lifecycle": _opt(_text),
    "steps": _opt(_int), "worst": _opt(_severity), "by": _opt(_text),
    "ids": lambda v: isinstance(v, list) and len(v) <= MAX_ITEMS and all(_text(x) for x in v),
    "findings": lambda v: isinstance(v, list) and len(v) <= MAX_ITEMS and all(_finding(x) for x in v),
    "report": _opt(lambda v: isinstance(v, dict)),
}


def valid_row(row: Any) -> dict[str, Any] | None:
    """A cached row when every field is what a sweep's row holds (its name and path are the task's, never the
    cache's); None otherwise."""
    if not isinstance(row, dict) or not set(row) <= set(ROW_FIELDS):
        return None
    if not all(check(row.get(name)) for name, check in ROW_FIELDS.items() if name in row):
        return None
    return dict(row)
