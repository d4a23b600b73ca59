"""Hostile input, round 4 (issue 38): a TensorBoard file's resync after a corrupt header crawled through a
sparse file's hole at 0.7 MB/s (a CRC computed at every zero offset). Twelve zero bytes are never a valid
header (a length of 0 has a CRC that is not 0), so such offsets are now left out before any CRC."""

from __future__ import annotations

import struct

import pytest

from tests.hostile import run_fn
from triage_agent.runs.formats import tensorboard as tb

pytest.importorskip("tensorboard")
from tests.test_tensorboard import official, raw_records, scalar_events, write  # noqa: E402

HOLE = 256 << 20  # sparse: no disk written; before the fix ~45 s of CPU to cross, now about 2 s


def test_twelve_zero_bytes_are_never_a_valid_header():
    assert tb.masked_crc32c(bytes(8)) != 0  # so a header of zeros always fails its CRC


def test_a_resync_crosses_a_sparse_hole_of_zeros_and_finds_the_records_after_it(tmp_path):
    src = write(tmp_path / "tb", scalar_events(10, ["r"]))
    records = raw_records(src)
    header = struct.pack("<Q", 50)
    corrupt = header + struct.pack("<I", tb.masked_crc32c(header) ^ 1)  # a wrong length CRC
    path = tmp_path / "events.out.tfevents.hole"
    with open(path, "wb") as fh:
        fh.write(b"".join(records[:4]) + corrupt)
        fh.seek(HOLE, 1)  # a hole: zeros read back, nothing stored
        fh.write(b"".join(records[4:]))
    assert path.stat().st_blocks * 512 < 1 << 20  # really sparse

    def read(out, err):
        got, errors = tb.read_events(path, "ev")
        out.write(repr(([r["step"] for r in got], [e.message for e in errors])))
        return 0

    res = run_fn(read, ["read_events", "hole"], None, timeout=20)  # a bound, not a measure: the old crawl (~45 s CPU) is cut here
    assert res.code == 0, (res.code, res.stderr[-800:])
    steps, messages = eval(res.stdout)  # noqa: S307 - our own repr of two lists
    assert steps == sorted(official(src))  # records 1-3 (steps 0-2) before the hole, the rest after it
    assert len(messages) == 1 and "corrupt record header" in messages[0]
