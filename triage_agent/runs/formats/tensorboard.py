"""TensorBoard event files, read by a small reader of our own (no `tensorboard` package, no TensorFlow).

An event file is a sequence of TFRecords: uint64 length, masked crc32c of those 8 bytes, the data,
masked crc32c of the data. Each record's data is an `Event` protobuf; only scalars are kept:
`Summary.Value.simple_value`, and `Value.tensor` holding exactly one float or integer element.

What is checked: every record's length CRC; the data CRC of every record that gives a scalar (records
that give none, such as images, graphs or histograms, are skipped unchecked, since nothing is read from
them). The data CRCs are computed with a crc32c table in NumPy, many records of one length at a time.

Everything in the file is untrusted: a length over MAX_RECORD or a bad length CRC is a corrupt header
(reported, then the reader looks for the next valid header); a bad data CRC or a malformed protobuf is
a corrupt record (reported and skipped; the framing around it is intact). A record cut off at the end of
the file is one still being written: it is left for the next `absorb`, not reported.
"""

from __future__ import annotations

import re
import struct
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from triage_agent import bounded
from triage_agent.runs.formats.base import Format, FormatRead
from triage_agent.runs.model import ParseError

MAX_RECORD = 16 << 20  # a record longer than this is a corrupt length (scalar events are ~50 bytes)
CHUNK = 8 << 20  # bytes read at a time: memory stays near CHUNK + one record
MAX_TAGS = 4096  # distinct scalar tags kept per file (memory is tags x steps)
MAX_TAG_BYTES = 1024
MAX_ERRORS = 20  # corrupt records reported per file; the rest are counted in one last error
SYNC_WINDOW = 1 << 16  # bytes searched at a time for the next valid header after a corrupt one


class _Corrupt(Exception):
    pass


# -- crc32c (Castagnoli), masked as TFRecord does ------------------------------------------------
def _table() -> list[int]:
    out = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        out.append(c)
    return out


_CRC = _table()
_CRC_NP = np.array(_CRC, dtype=np.uint32)


def _mask(crc: int) -> int:
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def masked_crc32c(data: bytes | memoryview) -> int:
    crc = 0xFFFFFFFF
    table = _CRC
    for b in bytes(data):
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return _mask(crc ^ 0xFFFFFFFF)


def _masked_crcs(buf: np.ndarray, starts: np.ndarray, length: int) -> np.ndarray:
    """The masked crc32c of buf[s:s+length] for every s in `starts` at once (one NumPy step per byte)."""
    crc = np.full(len(starts), 0xFFFFFFFF, dtype=np.uint32)
    for j in range(length):
        crc = _CRC_NP[(crc ^ buf[starts + j]) & 0xFF] ^ (crc >> 8)
    crc ^= np.uint32(0xFFFFFFFF)
    out: np.ndarray = ((crc >> 15) | (crc << 17)) + np.uint32(0xA282EAD8)  # uint32 arithmetic wraps, as the mask does
    return out


# -- protobuf wire format --------------------------------------------------------------------------
def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise _Corrupt("bad varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


def _skip(buf: bytes, pos: int, end: int, wire: int) -> int:
    if wire == 0:
        return _varint(buf, pos, end)[1]
    if wire == 1:
        pos += 8
    elif wire == 2:
        n, pos = _varint(buf, pos, end)
        pos += n
    elif wire == 5:
        pos += 4
    else:
        raise _Corrupt(f"wire type {wire}")
    if pos > end:
        raise _Corrupt("field runs past its message")
    return pos


def _signed(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


# TensorProto dtype -> (struct format of one element in tensor_content, the repeated *_val field, its kind)
_DTYPES: dict[int, tuple[str, int, str]] = {
    1: ("<f", 5, "f"), 2: ("<d", 6, "d"), 19: ("<e", 13, "h"),  # float, double, half
    3: ("<i", 7, "i32"), 4: ("<B", 7, "i32"), 5: ("<h", 7, "i32"), 6: ("<b", 7, "i32"), 17: ("<H", 7, "i32"),
    9: ("<q", 10, "i64"),
}
_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")


def _tensor_scalar(buf: bytes, pos: int, end: int) -> float | None:
    """A TensorProto's value when it holds exactly one float or integer element, else None."""
    dtype = 0
    elements = 1
    content: bytes | None = None
    vals: dict[int, list[Any]] = {}
    while pos < end:
        key, pos = _varint(buf, pos, end)
        field, wire = key >> 3, key & 7
        if field == 1 and wire == 0:
            dtype, pos = _varint(buf, pos, end)
        elif field == 2 and wire == 2:  # TensorShapeProto{dim=2 Dim{size=1}}
            n, pos = _varint(buf, pos, end)
            stop = pos + n
            if stop > end:
                raise _Corrupt("shape runs past its tensor")
            elements = 1
            while pos < stop:
                k, pos = _varint(buf, pos, stop)
                if k >> 3 == 2 and k & 7 == 2:
                    m, pos = _varint(buf, pos, stop)
                    dim_end = pos + m
                    if dim_end > stop:
                        raise _Corrupt("dim runs past its shape")
                    size = 1
                    while pos < dim_end:
                        dk, pos = _varint(buf, pos, dim_end)
                        if dk == 0x08:
                            size, pos = _varint(buf, pos, dim_end)
                            size = _signed(size, 64)
                        else:
                            pos = _skip(buf, pos, dim_end, dk & 7)
                    elements *= size
                else:
                    pos = _skip(buf, pos, stop, k & 7)
        elif field == 4 and wire == 2:
            n, pos = _varint(buf, pos, end)
            if pos + n > end:
                raise _Corrupt("tensor_content runs past its tensor")
            content = buf[pos:pos + n]
            pos += n
        elif field in (5, 6, 7, 10, 13):
            got = vals.setdefault(field, [])
            if wire == 2:  # packed
                n, pos = _varint(buf, pos, end)
                stop = pos + n
                if stop > end:
                    raise _Corrupt("packed values run past their tensor")
                if field in (5, 6):
                    size = 4 if field == 5 else 8
                    if n % size:
                        raise _Corrupt("packed floats of a bad length")
                    if n // size + len(got) <= 2:  # a scalar has one; more are never read
                        got += [(_F32 if size == 4 else _F64).unpack_from(buf, p)[0] for p in range(pos, stop, size)]
                    else:
                        got += [None, None]
                    pos = stop
                else:
                    while pos < stop and len(got) <= 2:
                        v, pos = _varint(buf, pos, stop)
                        got.append(v)
                    pos = stop
            elif field == 5 and wire == 5 and pos + 4 <= end:
                got.append(_F32.unpack_from(buf, pos)[0])
                pos += 4
            elif field == 6 and wire == 1 and pos + 8 <= end:
                got.append(_F64.unpack_from(buf, pos)[0])
                pos += 8
            elif field in (7, 10, 13) and wire == 0:
                v, pos = _varint(buf, pos, end)
                got.append(v)
            else:
                pos = _skip(buf, pos, end, wire)
        else:
            pos = _skip(buf, pos, end, wire)
    spec = _DTYPES.get(dtype)
    if spec is None or elements != 1:
        return None
    fmt, field, kind = spec
    if content:
        if len(content) != struct.calcsize(fmt):
            return None
        return float(struct.unpack(fmt, content)[0])
    got = vals.get(field, [])
    if len(got) != 1:
        return None
    v = got[0]
    if kind in ("f", "d"):
        return float(v)
    if kind == "h":
        return float(struct.unpack("<e", struct.pack("<H", v & 0xFFFF))[0])
    if kind == "i64":
        return float(_signed(v, 64))
    # int32-carried types: the value cast to the dtype, as NumPy's array constructor does
    width = struct.calcsize(fmt) * 8
    return float(_signed(v, width) if fmt in ("<i", "<h", "<b") else v & ((1 << width) - 1))


# The common event, one `simple_value` per event as every writer logs a scalar: wall_time, step,
# Summary{Value{tag, simple_value}}, single-byte lengths. Matched in one go (the lengths it holds are
# checked by the caller); anything else goes through decode_event.
_SIMPLE = re.compile(rb"\x09.{8}\x10([\x80-\xff]{0,9}[\x00-\x7f])\x2a[\x00-\x7f]\x0a[\x00-\x7f]\x0a[\x00-\x7f]", re.DOTALL)


def decode_event(buf: bytes, pos: int, end: int) -> tuple[int, list[tuple[str, float]]]:
    """One Event's step and its scalar (tag, value) pairs. Raises _Corrupt on malformed data."""
    step = 0
    scalars: list[tuple[str, float]] = []
    while pos < end:
        key, pos = _varint(buf, pos, end)
        if key == 0x10:  # step, int64
            step, pos = _varint(buf, pos, end)
            step = _signed(step, 64)
        elif key == 0x2A:  # summary
            n, pos = _varint(buf, pos, end)
            stop = pos + n
            if stop > end:
                raise _Corrupt("summary runs past its event")
            while pos < stop:
                k, pos = _varint(buf, pos, stop)
                if k != 0x0A:  # Summary.value
                    pos = _skip(buf, pos, stop, k & 7)
                    continue
                m, pos = _varint(buf, pos, stop)
                value_end = pos + m
                if value_end > stop:
                    raise _Corrupt("value runs past its summary")
                tag: str | None = None
                scalar: float | None = None
                while pos < value_end:
                    vk, pos = _varint(buf, pos, value_end)
                    if vk == 0x0A:  # tag
                        t, pos = _varint(buf, pos, value_end)
                        if pos + t > value_end:
                            raise _Corrupt("tag runs past its value")
                        tag = buf[pos:pos + min(t, MAX_TAG_BYTES)].decode("utf-8", "replace") if t else ""
                        pos += t
                    elif vk == 0x15:  # simple_value, float
                        if pos + 4 > value_end:
                            raise _Corrupt("simple_value runs past its value")
                        scalar = _F32.unpack_from(buf, pos)[0]
                        pos += 4
                    elif vk == 0x42:  # tensor
                        t, pos = _varint(buf, pos, value_end)
                        if pos + t > value_end:
                            raise _Corrupt("tensor runs past its value")
                        scalar = _tensor_scalar(buf, pos, pos + t)
                        pos += t
                    elif vk >> 3 in (3, 4, 5, 6):  # another kind of the value oneof: the last one wins
                        scalar = None
                        pos = _skip(buf, pos, value_end, vk & 7)
                    else:
                        pos = _skip(buf, pos, value_end, vk & 7)
                if tag is not None and scalar is not None:
                    scalars.append((tag, scalar))
        else:
            pos = _skip(buf, pos, end, key & 7)
    if pos != end:
        raise _Corrupt("field runs past the event")
    return step, scalars


# -- records -------------------------------------------------------------------------------------
_HEADER = struct.Struct("<QI")
_U32 = struct.Struct("<I")


def read_events(path: Path, rel: str) -> tuple[list[dict[str, Any]], list[ParseError]]:
    """Scalars by tag, merged per step: [{"step": N, tag: value, ...}]."""
    events = Events()
    errors = events.absorb(path, rel)
    return events.rows(), errors


class Events:
    """One event file's scalars by step. `absorb` reads the records written since its last call (the
    reader keeps its byte offset), so a file still being written is read once in all."""

    def __init__(self) -> None:
        self.by_step: dict[int, dict[str, float]] = defaultdict(dict)
        self.offset = 0  # the start of the first record not read yet
        self.records = 0  # records read so far (their 1-based number is a ParseError's `line`)
        self.syncing = False  # after a corrupt header: looking for the next valid one
        self.tags: set[str] = set()
        self.errors = 0
        self._header_crc: dict[int, int] = {}  # length -> its header's masked CRC (few distinct lengths)

    def absorb(self, path: Path, rel: str) -> list[ParseError]:
        errors: list[ParseError] = []
        try:
            with bounded.open_binary(path) as fh:
                if fh.seek(0, 2) < self.offset:  # truncated or rewritten: read afresh
                    self.__init__()  # type: ignore[misc]
                fh.seek(self.offset)
                buf, base = b"", self.offset  # base: the file offset of buf[0]
                while True:
                    more = fh.read(CHUNK)
                    buf += more
                    used = self._records(buf, base, rel, errors)
                    buf, base = buf[used:], base + used
                    if not more:
                        break
                self.offset = base
        except OSError as exc:
            errors.append(ParseError(rel, None, f"unreadable event file: {exc.strerror or exc}"))
        return errors

    def _records(self, buf: bytes, base: int, rel: str, errors: list[ParseError]) -> int:
        """Read the complete records at the start of buf; returns the bytes handled (records read or skipped)."""
        pos, end = 0, len(buf)
        arr: np.ndarray | None = None
        header_crc = self._header_crc
        unpack, simple = _HEADER.unpack_from, _SIMPLE.match
        # records that gave scalars, waiting for their data CRC check: flat lists (no container per record,
        # which would cost the garbage collector more than the reading)
        starts: list[int] = []
        lengths: list[int] = []
        recnos: list[int] = []
        firsts: list[int] = []  # the index of each record's first scalar in the lists below
        steps: list[int] = []
        tags: list[str] = []
        values: list[float] = []
        records = self.records
        f32 = _F32.unpack_from
        syncing = self.syncing
        while pos + 12 <= end:
            if syncing:
                if arr is None:
                    arr = np.frombuffer(buf, dtype=np.uint8)
                found = _next_header(arr, pos, end)
                if found is None:
                    pos = max(pos, end - 11)  # a header may start in the last 11 bytes
                    break
                pos, syncing = found, False
            length, crc = unpack(buf, pos)
            want = header_crc.get(length)
            if want is None and length <= MAX_RECORD:
                want = masked_crc32c(buf[pos:pos + 8])
                if len(header_crc) < 65536:  # distinct lengths are few in a real file
                    header_crc[length] = want
            if want != crc:
                self._error(errors, rel, records + 1, base + pos,
                            "corrupt record header (bad length or CRC); looking for the next record")
                syncing = True
                pos += 1
                continue
            start = pos + 12
            stop = start + length
            if stop + 4 > end:
                break  # still being written (or the next chunk holds the rest)
            records += 1
            pos = stop + 4
            # the common event, one simple_value (see _SIMPLE): the lengths it holds must agree
            m = simple(buf, start, stop)
            if m is not None:
                p = m.end()
                n = buf[p - 1]  # the tag's length; the value is 7 bytes longer, the summary 9
                q = p + n
                if q + 5 == stop and buf[q] == 0x15 and buf[p - 3] == n + 7 and buf[p - 5] == n + 9:
                    a, b = m.span(1)
                    starts.append(start)
                    lengths.append(length)
                    recnos.append(records)
                    firsts.append(len(tags))
                    if b - a == 1:
                        steps.append(buf[a])
                    elif b - a == 3:  # steps 16,384 to 2,097,151
                        steps.append((buf[a] & 0x7F) | (buf[a + 1] & 0x7F) << 7 | buf[a + 2] << 14)
                    else:
                        steps.append(_signed(_varint(buf, a, b)[0], 64))
                    tags.append(buf[p:q].decode("utf-8", "replace"))
                    values.append(f32(buf, q + 1)[0])
                    continue
            try:
                step, scalars = decode_event(buf, start, stop)
            except (_Corrupt, IndexError, struct.error) as exc:
                # a bad CRC is the likelier story; either way the record is skipped
                crc_ok = masked_crc32c(buf[start:stop]) == _U32.unpack_from(buf, stop)[0]
                self._error(errors, rel, records, base + start - 12,
                            f"malformed event ({exc})" if crc_ok else "data CRC mismatch; record skipped")
                continue
            if scalars:
                starts.append(start)
                lengths.append(length)
                recnos.append(records)
                firsts.append(len(tags))
                for tag, value in scalars:
                    steps.append(step)
                    tags.append(tag)
                    values.append(value)
        self.records, self.syncing = records, syncing
        if starts:
            bad = _bad_crcs(buf, starts, lengths)
            for i in sorted(bad):
                self._error(errors, rel, recnos[i], base + starts[i] - 12, "data CRC mismatch; record skipped")
            skip = {j for i in bad for j in range(firsts[i], firsts[i + 1] if i + 1 < len(firsts) else len(tags))}
            self._keep(steps, tags, values, skip, rel, errors)
        return pos

    def _keep(self, steps: list[int], tags: list[str], values: list[float], skip: set[int], rel: str,
              errors: list[ParseError]) -> None:
        by_step = self.by_step
        known = self.tags
        for i, (step, tag, value) in enumerate(zip(steps, tags, values)):
            if skip and i in skip:
                continue
            if tag not in known:
                if len(known) >= MAX_TAGS:
                    continue
                known.add(tag)
                if len(known) == MAX_TAGS:
                    errors.append(ParseError(rel, None, f"more than {MAX_TAGS} scalar tags; later new tags skipped"))
            by_step[step][tag] = value

    def _error(self, errors: list[ParseError], rel: str, record: int, at: int, message: str) -> None:
        self.errors += 1
        if self.errors <= MAX_ERRORS:
            errors.append(ParseError(rel, record, f"record {record} at byte {at}: {message}"))
        elif self.errors == MAX_ERRORS + 1:
            errors.append(ParseError(rel, record, f"more than {MAX_ERRORS} corrupt records; the rest not listed"))

    def rows(self) -> list[dict[str, Any]]:
        return [{"step": step, **vals} for step, vals in sorted(self.by_step.items()) if vals]


def _bad_crcs(buf: bytes, starts: list[int], lengths: list[int]) -> set[int]:
    """The indexes i whose data buf[starts[i]:+lengths[i]] does not match the CRC stored after it."""
    arr = np.frombuffer(buf, dtype=np.uint8)
    by_len: dict[int, list[int]] = defaultdict(list)
    for i, n in enumerate(lengths):
        by_len[n].append(i)
    bad: set[int] = set()
    for n, idx in by_len.items():
        if len(idx) < 8:  # few: the table loop is cheaper than NumPy's per-call overhead
            bad.update(i for i in idx if masked_crc32c(buf[starts[i]:starts[i] + n]) != _U32.unpack_from(buf, starts[i] + n)[0])
            continue
        at = np.array([starts[i] for i in idx], dtype=np.int64)
        want = arr[(at + n)[:, None] + np.arange(4)].copy().view("<u4").reshape(-1)
        bad.update(idx[j] for j in np.flatnonzero(_masked_crcs(arr, at, n) != want).tolist())
    return bad


def _next_header(arr: np.ndarray, pos: int, end: int) -> int | None:
    """The first offset >= pos where 12 bytes form a valid record header (length <= MAX_RECORD, its CRC
    right), searched SYNC_WINDOW bytes at a time; None when the buffer has none."""
    from numpy.lib.stride_tricks import sliding_window_view

    while pos + 12 <= end:
        stop = min(end - 11, pos + SYNC_WINDOW)
        windows = sliding_window_view(arr[pos:stop + 11], 12)
        crc = np.full(len(windows), 0xFFFFFFFF, dtype=np.uint32)
        for j in range(8):
            crc = _CRC_NP[(crc ^ windows[:, j]) & 0xFF] ^ (crc >> 8)
        crc ^= np.uint32(0xFFFFFFFF)
        crc = ((crc >> 15) | (crc << 17)) + np.uint32(0xA282EAD8)
        stored = np.ascontiguousarray(windows[:, 8:12]).view("<u4").reshape(-1)
        lengths = np.ascontiguousarray(windows[:, :8]).view("<u8").reshape(-1)
        hits = np.flatnonzero((crc == stored) & (lengths <= MAX_RECORD))
        if len(hits):
            return pos + int(hits[0])
        pos = stop
    return None


def available() -> bool:
    """Event files need nothing beyond the core install (kept for callers that ask)."""
    return True


def _read(path: Path, rel: str) -> FormatRead:
    rows, errors = read_events(path, rel)
    return FormatRead(rows=rows, errors=errors)


FORMAT = Format("tfevents", lambda path, rel: path.name.lower().startswith("events.out.tfevents"), _read,
                follow="events")
