"""verl's console metric lines, `step:N - key:value - ...` (`concat_dict_to_str`, Ray prefixes and colours around
them), and the rule that goes with them: in a verl log the step lines are the rows, and a dict it printed (a reward
function's record, a dict inside a completion) never is one.

A dense log has one a step, so a plain step line is read from its bytes (`plain_step_row`), and once a shape (its
keys, each value bare or in its numpy wrapper) has been seen twice, by that shape's one pattern (`Shapes`): the same
row as the general way (`parse_metric_line(clean(line))`), as a test holds them."""

from __future__ import annotations

import functools
import re
from typing import Any

from triage_agent.runs import values
from triage_agent.runs.console import limits
from triage_agent.runs.console.dialect import Dialect, Line, Sink

_METRIC_START = re.compile(r"(?:^|\s)step:(\d+)\s+-\s+")
# verl's step line in its plain shape, read straight from the raw bytes (a dense log has one a step, each at ~30
# µs through clean + parse_metric_line): an optional Ray prefix in colour, then `step:N - ` and `key:number` pairs
_RAY_WORKER = rb"\([\w.:-]+ pid=\d+(?:, ip=[\w.:]+)?\)"  # `(TaskRunner pid=4242)`, `(main_task pid=1, ip=...)`
STEP_FAST = re.compile(rb"(?:\x1b\[[0-9;]*m)?(?:" + _RAY_WORKER + rb" ?)?(?:\x1b\[0m ?)?step:(\d+) - ")
_NP_SCALAR = re.compile(rb":np\.\w+\(")  # a value as numpy prints a scalar of any type
_NOT_SHAPE = bytes(c for c in range(256) if c not in b"\x01:()")  # translate deletes these: a rest's shape remains
_VALUE = rb"([^:()\x01\x1b\x80-\xff\r\n]*)"  # what a plain value may hold; float() decides the rest
MAX_SHAPES = 8
MAX_SEEN = 1024


@functools.lru_cache(maxsize=256)
def _names(kb: tuple[bytes, ...]) -> tuple[str, ...] | None:
    """The keys of a plain line's shape (the keys' bytes), or None when one is `step` (parse_metric_line skips a
    `step` key: the general way reads such a line). A pure function: cached for the process."""
    names = tuple(k.decode().strip() for k in kb)
    return None if "step" in names else names


def plain_step_row(raw: bytes) -> dict[str, Any] | None:
    """A plain verl step line's row, exactly as `parse_metric_line(clean(line))` reads it, by whole-line bytes
    operations (a dense log has a line a step, and the Python work per line is what its read costs); None for
    any other line, which then goes the general way.

    Plain: after the step (and a Ray prefix in colour), ASCII `key:value` parts, one colon each, and each value
    a number `float` reads, bare or as numpy prints a scalar: `np.float64(X)`, `np.int32(X)`, the brackets around
    the whole value.
    Anything else (a `tensor(...)`, a percentage, a colon in a value, colours or Ray's repeat marker in the
    rest, a `step` key) goes the general way. (Joining a block's lines to do this once for all was slower:
    the operations on one line stay in the cache.)
    """
    m = STEP_FAST.match(raw)
    if m is None:
        return None
    rest = raw[m.end():].rstrip(b"\r\n")
    if not rest.isascii() or b"\x1b" in rest or b"\x01" in rest or b"[repeated " in rest:
        return None
    framed = rest.replace(b" - ", b"\x01")
    parts = framed.count(b"\x01") + 1
    shape = framed.translate(None, _NOT_SHAPE)  # `:\x01:\x01...:`, with `()` after the colon of a wrapped value
    if b"(" in shape or b")" in shape:
        n = shape.count(b"(")
        wrapped = framed.count(b":np.float64(")
        if wrapped != n:  # np.int32(16), np.float32(0.5): parse_value reads them alike
            framed = _NP_SCALAR.sub(b":np.float64(", framed)
            wrapped = framed.count(b":np.float64(")
        # each `(` ends a `np.float64(` just after its part's colon, each `)` ends its part, and the two are
        # adjacent in the shape: in the same part
        if shape.count(b")") != n or wrapped != n or (framed + b"\x01").count(b")\x01") != n:
            return None
        shape = shape.replace(b"()", b"")
        framed = framed.replace(b"np.float64(", b"").replace(b")", b"")
    if shape != b":\x01" * (parts - 1) + b":":
        return None  # a part without its one colon
    flat = framed.replace(b"\x01", b":").split(b":")  # key, value, key, value, ...
    keys = _names(tuple(flat[0::2]))
    if keys is None:
        return None
    try:
        vals = list(map(float, flat[1::2]))
    except ValueError:
        return None  # parse_value may still read it (a percentage, a quoted number): the general way
    row: dict[str, Any] = {"step": int(m.group(1))}
    row.update(zip(keys, vals))
    return row


def _shape(raw: bytes) -> tuple[bytes, list[bytes]]:
    """The pattern of a plain step line's shape (plain_step_row read it), and its keys' bytes: its prefix as
    STEP_FAST, then its keys literally, each value bare or in the same numpy wrapper, nothing after but the
    line end."""
    m = STEP_FAST.match(raw)
    assert m is not None  # plain_step_row read the line
    parts, keys = [], []
    for part in raw[m.end():].rstrip(b"\r\n").split(b" - "):
        key, _, value = part.partition(b":")
        keys.append(key)
        wrap = value[:value.index(b"(") + 1] if value.endswith(b")") else b""  # `np.float64(`, `np.int32(`
        parts.append(re.escape(key) + b":" + (re.escape(wrap) + _VALUE + rb"\)" if wrap else _VALUE))
    return STEP_FAST.pattern + b" - ".join(parts) + rb"[\r\n]*", keys


class Shapes:
    """The step-line shapes one scan has seen, each as one pattern once seen twice (a dense log repeats one or two
    shapes, and one match of the line's shape reads all its values: ~7 µs a line, not ~14). Per scan, bounded."""

    def __init__(self) -> None:
        self.learned: list[tuple[re.Pattern[bytes], tuple[str, ...]]] = []
        self.seen: set[bytes] = set()  # the shapes (uncompiled patterns) of plain step lines read once

    def row(self, raw: bytes) -> dict[str, Any] | None:
        """`plain_step_row`, read with the pattern of a shape already seen when the line has one (the same row: a
        test holds them equal)."""
        if b"step:" not in raw or len(raw) > limits.MAX_LINE:
            return None  # not a step line (a bar's redraw, in a dense log), or not parsed for metrics (the general way)
        for pattern, keys in self.learned:
            m = pattern.fullmatch(raw)
            if m is not None:
                g = m.groups()
                try:
                    vals = list(map(float, g[1:]))
                except ValueError:
                    break  # not a number float reads (`1 - 2` between two keys): as plain_step_row decides
                row: dict[str, Any] = {"step": int(g[0])}
                row.update(zip(keys, vals))
                return row
        got = plain_step_row(raw)
        if got is not None:
            # learned on its second line: a log whose every line has a shape of its own (keys that count on, too)
            # compiles nothing
            shape, kb = _shape(raw)
            if shape in self.seen:
                names = tuple(k.decode().strip() for k in kb)
                self.learned[:] = [(re.compile(shape), names), *self.learned[:MAX_SHAPES - 1]]  # the latest first
            else:
                if len(self.seen) >= MAX_SEEN:
                    self.seen.clear()
                self.seen.add(shape)
        return got


def parse_metric_line(text: str) -> dict[str, Any] | None:
    """`step:3 - key:value - ...` (verl's concat_dict_to_str) -> {"step": 3, key: value, ...}."""
    m = _METRIC_START.search(text)
    if not m:
        return None
    row: dict[str, Any] = {"step": int(m.group(1))}
    for part in text[m.end():].split(" - "):
        key, sep, val = part.partition(":")
        key = key.strip()
        if not sep or key == "step":  # the line's own step stays the integer it started with
            continue
        value = values.parse(val)
        if value is not None:
            row[key] = value
    return row


def lost_tail(text: str) -> str | None:
    """The last pair of a step line when parse_metric_line could read nothing from it (no `:`, or no number
    after it), as a line cut short ends; None when it was read (or is the line's own step)."""
    m = _METRIC_START.search(text)
    if m is None:
        return None
    last = text[m.end():].rsplit(" - ", 1)[-1].strip()
    key, sep, val = last.partition(":")
    if key.strip() == "step" or (sep and values.parse(val) is not None):
        return None
    return last


class Verl(Dialect):
    order = 30
    name = "verl"
    sniff = rb"step:\d+ - [\w/@.-]+:"
    trainer = "verl"
    markers = (b"step:",)
    supersedes = ("transformers dicts",)
    examples = (
        "\x1b[36m(TaskRunner pid=38606)\x1b[0m step:12 - critic/score/mean:np.float64(0.41) - actor/entropy:0.6 - "
        "response_length/mean:512.0 - response_length/clip_ratio:0.1 - timing_s/gen:12.0",
        "(main_task pid=1, ip=10.0.0.1) step:3 - actor/pg_loss:-0.01 - actor/kl_loss:0.001 - actor/grad_norm:0.25",
        "step:0 - val-core/openai/gsm8k/reward/mean@1:0.25",
        "step:7 - actor/entropy:np.float64(0.5) - val-aux/gsm8k/reward/best@16/mean:np.flo",
    )

    def __init__(self) -> None:
        self.shapes = Shapes()
        self.last: int | None = None  # the last step line's step

    def row(self, row: dict[str, Any], lineno: int, sink: Sink) -> None:
        step = int(row["step"])
        if self.last is not None and step < self.last:
            sink.relaunched(lineno)  # the step counter went back: a new launch
        self.last = step
        sink.add_row(row, lineno, self.name)

    def fast(self, raw: bytes, lineno: int, sink: Sink) -> bool:
        row = self.shapes.row(raw)
        if row is None:
            return False
        self.row(row, lineno, sink)
        return True

    def read(self, line: Line, sink: Sink) -> bool:
        if b"step:" not in line.raw:
            return False
        text = line.text
        row = parse_metric_line(text)
        if row is not None and len(row) > 1:
            self.row(row, line.lineno, sink)
            if (lost := lost_tail(text)) is not None:
                sink.cut(line.lineno, lost)
            return True
        if row is not None:
            sink.unread(line.lineno, text)
            return True
        return False


__all__ = ["STEP_FAST", "Shapes", "Verl", "lost_tail", "parse_metric_line", "plain_step_row"]
