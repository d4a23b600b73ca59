"""A sweep as a table of results: `--out results.parquet` (or `.jsonl`), schema `triage.results/v1`.

One table, one row per record: `record` says which. A `run` row per run of the sweep (or of this shard), a
`finding` row per finding of each run, and with `--by KEY` a `prevalence` row per value of KEY and finding (the
share of that value's runs with it). Every column is in every row (null where it does not apply), so pyarrow,
polars and DuckDB read the file as it is, and the tables of N shards are one table by concatenation
(docs/many-runs.md: "Results table"). Adding a column is a new minor version of the schema; changing one a new major.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from triage_agent.errors import BadInput
from triage_agent.findings.model import SEVERITY_RANK
from triage_agent.safe import bounded

if TYPE_CHECKING:  # render draws results, never imports them at run time (tests/test_layers.py)
    from triage_agent.commands.sweep import Prevalence, SweepResult, SweepRow

SCHEMA = "triage.results/v1"
SUFFIXES = (".parquet", ".jsonl")
# (column, Arrow type) in order; the table in docs/many-runs.md lists the same
COLUMNS: tuple[tuple[str, str], ...] = (
    ("schema", "string"), ("record", "string"), ("shard", "string"),
    ("run", "string"), ("location", "string"),
    ("trainer", "string"), ("kind", "string"), ("paradigm", "string"), ("lifecycle", "string"),
    ("steps", "int64"), ("worst", "string"), ("findings", "int64"),
    *((sev, "int64") for sev in SEVERITY_RANK),
    ("error", "string"), ("cached", "bool_"), ("seconds", "float64"),
    ("finding", "string"), ("severity", "string"), ("onset", "int64"), ("title", "string"), ("numbers", "string"),
    ("by_key", "string"), ("by_value", "string"), ("runs", "int64"), ("with_finding", "int64"), ("share", "float64"),
)


def check_path(path: str) -> Path:
    """The table's path, refused in one line before any run is read when its suffix says no format (pyarrow,
    which writes Parquet, is one of triage's own dependencies)."""
    out = Path(path)
    if out.suffix.lower() not in SUFFIXES:
        raise BadInput(f"--out {path}: give a .parquet or .jsonl file")
    if not out.parent.is_dir():
        raise BadInput(f"--out {path}: no such folder {out.parent}")
    return out


def run_records(r: SweepRow, shard: tuple[int, int] | None, by: str | None) -> Iterator[dict[str, Any]]:
    """One run's rows of the table: its `run` row and a `finding` row per finding, each with every column."""
    base = {**dict.fromkeys(c for c, _ in COLUMNS), "schema": SCHEMA,
            "shard": f"{shard[0]}/{shard[1]}" if shard else None}
    counts = {sev: sum(1 for f in r.findings if f["severity"] == sev) for sev in SEVERITY_RANK}
    run = {"run": r.name, "location": r.path}
    yield {**base, **run, "record": "run", "trainer": r.trainer, "kind": r.kind, "paradigm": r.paradigm,
           "lifecycle": r.lifecycle, "steps": r.steps, "worst": r.worst,
           "findings": None if r.error else len(r.ids), **({} if r.error else counts), "error": r.error,
           "cached": r.cached, "seconds": round(r.seconds, 6), "by_key": by, "by_value": r.by}
    for f in r.findings:
        yield {**base, **run, "record": "finding", "finding": f["id"], "severity": f["severity"],
               "onset": f["onset"], "title": f["title"], "numbers": json.dumps(f["numbers"], sort_keys=True),
               "by_key": by, "by_value": r.by}


def prevalence_records(groups: list[Prevalence], shard: tuple[int, int] | None,
                       by: str | None) -> Iterator[dict[str, Any]]:
    """--by KEY: a `prevalence` row per value of KEY and finding."""
    base = {**dict.fromkeys(c for c, _ in COLUMNS), "schema": SCHEMA,
            "shard": f"{shard[0]}/{shard[1]}" if shard else None}
    for p in groups:
        for fid, n in p.counts.items():
            yield {**base, "record": "prevalence", "by_key": by, "by_value": p.value, "finding": fid,
                   "runs": p.runs, "with_finding": n, "share": round(n / p.runs, 6)}


def records(result: SweepResult) -> Iterator[dict[str, Any]]:
    """The table's rows of a sweep's kept rows (in the order of their names), then its prevalence rows."""
    for r in sorted(result.rows, key=lambda r: r.name):
        yield from run_records(r, result.shard, result.by)
    yield from prevalence_records(result.prevalence(), result.shard, result.by)


BATCH_RECORDS = 1024  # records built and written at a time (a Parquet row group): the table never sits whole in
# memory (a sweep of 10,000 runs built all its ~11,000 records, ~30 MB, then their Arrow copy, before writing; 8,192
# at a time still added ~12 MB at 10,000 runs over 1,000, by tracemalloc, tools/bench_fleet.py)


def write(result: SweepResult, path: Path) -> int:
    """Write the table of a sweep's kept rows at once (see `Table` for a sweep's own, written as its runs end)."""
    table = Table(path, result.shard, result.by)
    try:
        for r in result.rows:
            table.add(r)
        return table.finish(result.prevalence())
    finally:
        table.abort()


class Table:
    """The table of results written as a sweep's runs end, BATCH_RECORDS records at a time (a Parquet row group),
    into a new file moved into place by `finish` (a reader never sees half of it): the driver holds no run's rows
    for it. The `run` and `finding` rows are in the order the runs ended; the `prevalence` rows last."""

    def __init__(self, path: Path, shard: tuple[int, int] | None, by: str | None) -> None:
        self.path, self.shard, self.by = path, shard, by
        self.tmp = path.with_name(f".{path.name}.{os.getpid()}.part")
        self.parquet = path.suffix.lower() == ".parquet"
        self.pending: list[dict[str, Any]] = []
        self.written = 0
        self.writer: Any = None
        try:
            bounded.write_new(self.tmp)
            self.fh: BinaryIO | None = os.fdopen(os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL |
                                                         os.O_NOFOLLOW, 0o600), "wb")
        except OSError as exc:
            raise BadInput(f"--out {path}: cannot write ({exc.strerror or exc})") from None

    def add(self, row: SweepRow) -> None:
        self.pending.extend(run_records(row, self.shard, self.by))
        if len(self.pending) >= BATCH_RECORDS:
            self._flush()

    def _flush(self) -> None:
        if not self.pending or self.fh is None:
            return
        try:
            if self.parquet:
                import pyarrow as pa
                import pyarrow.parquet as pq

                if self.writer is None:
                    self.writer = pq.ParquetWriter(self.fh, schema())
                self.writer.write_table(pa.Table.from_pylist(self.pending, schema=schema()))
            else:
                self.fh.write("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in self.pending).encode())
        except OSError as exc:
            raise BadInput(f"--out {self.path}: cannot write ({exc.strerror or exc})") from None
        self.written += len(self.pending)
        self.pending = []

    def finish(self, groups: list[Prevalence]) -> int:
        """The prevalence rows, the file closed and moved into place; the rows written."""
        for batch in _batches(prevalence_records(groups, self.shard, self.by)):
            self.pending.extend(batch)
            self._flush()
        self._flush()
        try:
            if self.parquet:
                import pyarrow.parquet as pq

                if self.writer is None:
                    self.writer = pq.ParquetWriter(self.fh, schema())
                    self.writer.write_table(schema().empty_table())
                self.writer.close()
            if self.fh is not None:
                self.fh.close()
                self.fh = None
            os.replace(self.tmp, self.path)
        except OSError as exc:
            raise BadInput(f"--out {self.path}: cannot write ({exc.strerror or exc})") from None
        return self.written

    def abort(self) -> None:
        """The file left unwritten (an error, a sweep begun again): its part removed; no-op after `finish`."""
        with contextlib.suppress(Exception):
            if self.writer is not None and self.fh is not None:
                self.writer.close()
        with contextlib.suppress(OSError):
            if self.fh is not None:
                self.fh.close()
        self.fh = None
        with contextlib.suppress(OSError):
            self.tmp.unlink()


def _batches(rows: Iterator[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    while batch := list(itertools.islice(rows, BATCH_RECORDS)):
        yield batch


def schema() -> Any:
    import pyarrow as pa

    return pa.schema([pa.field(name, getattr(pa, kind)()) for name, kind in COLUMNS],
                     metadata={"schema": SCHEMA})
