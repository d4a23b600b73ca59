"""The custom-loop reader, tried last: a line no dialect took that holds a metric name and two `key<sep>number`
pairs (metricline.py reads it) is a candidate row; at the end, the shapes that recur are the run's rows, stepped by
the steps the lines name or by their order. Only while no dialect has given rows: then these lines change nothing.

Its metric names are markers only with what follows a key (a separator, a suffix, a number), so prose that mentions
a reward ("the reward should be high") is never even cut out of its block; and a line holding only these is parsed
only when its bytes hold two number pairs (a cheap count), so rollout text that names a reward stays cheap."""

from __future__ import annotations

import re
from typing import Any

from triage_agent.runs.console import limits, metricline
from triage_agent.runs.console.dialect import Dialect, Marker, Sink
from triage_agent.runs.console.text import clean

_METRIC_NAMES = (b"loss", b"Loss", b"reward", b"Reward", b"REWARD", b"entropy", b"Entropy", b"kl", b"KL", b"grad_norm")
_KEY_ENDS = (b"=", b":", b"_", b"/", b"s:", b"s=", b"'", b'"', b"  ", b" =", b" :",
             *(b" " + bytes([c]) for c in b"0123456789-+."))
METRIC_MARKERS: tuple[bytes, ...] = tuple(n + e for n in _METRIC_NAMES for e in _KEY_ENDS)
# METRIC_MARKERS as one small pattern (a name, then what follows a key): an alternation of every marker is slow in `re`
METRIC_MARK = re.compile(b"(?:" + b"|".join(_METRIC_NAMES) + rb""")(?:[=:_/'"]|s[:=]|  | [=:0-9+.-])""")
_NUM_PAIR = re.compile(rb"(?<!pid)(?<!ip)[:=][ \t]*'?[-+]?\.?\d")  # Ray's `(Worker pid=5, ip=...)` is no pair
_SPACED_NUM = re.compile(rb"\s[-+]?\.?\d")
_PROSE_PAIR = re.compile(rb"[A-Za-z_] (?:is|was) [-+]?\.?\d")  # "kl is 0.83": a pair in prose
# one pair whose key is itself a metric name (`reward: 0.5`): a metric line the generic reader cannot step alone
_SINGLE = re.compile(rb"(?<![a-z])((?i:loss|reward|kl|entropy|grad_norm|acc\w*|score)\w*)['\"]?\s*[:=]\s*'?[-+]?\.?\d")
_EVAL_KEY = re.compile(r"^(?:eval|val|valid|validation|test)[_/-]", re.I)
MAX_SINGLES = 1000
# a launch command and its echoes are configuration, however often a script prints it: a shell trace line (`set -x`
# prints `+ VAR=...` and `+ python3 ...`), or a line that runs a Python launcher with its overrides
# (`Executing command: python3 -m verl.trainer.main_ppo ... actor_rollout_ref.actor.optim.lr=5e-7`: a Logic-RL
# log of batch J echoes its command six times and was read as six metric rows of a run that never stepped)
_COMMAND = re.compile(rb"^\s*(?:\++ \S|\$ \S)|(?:^|[\s:])(?:python[0-9.]*|torchrun|deepspeed|accelerate launch|srun|mpirun)"
                      rb"\s+(?:-m\s|-u\s|\S+\.py\b)")


class Generic(Dialect):
    name = "generic lines"
    markers = METRIC_MARKERS
    examples = (
        "step:5 | policy_loss=0.0312 | kl_divergence=0.0041 | mean_reward=0.1875 | clip_fraction=0.0 | grad_norm=7.3",
        "  Epoch 3 | loss=0.0500 | reward= 0.003",
        "epoch: 0|step: 12|ppo_ep: 1|act_loss: 0.2099|cri_loss: 0.1204|unsuper_loss: 0.0",
        "iter 40: loss 2.3141, reward 0.25, entropy 1.02",
        "[12/300] reward: 0.41 kl: 0.0032 entropy: 0.88",
    )

    def __init__(self) -> None:
        self.rows: list[tuple[dict[str, Any], int | None, int]] = []  # (row, step from the line, line)
        self.example = ""
        # metric-looking lines with one pair (line, text, key): unread when one key recurs (a per-step line), not
        # when each key comes once (a config dump's `'kl_coef': 0.001,`)
        self.singles: list[tuple[int, str, str]] = []

    def live(self, sink: Sink) -> tuple[Marker, ...]:
        return () if sink.rows else self.markers

    def words(self, raw: bytes, lineno: int, sink: Sink) -> None:
        """A line no dialect took, past a cheap gate (a metric name and what follows a key): parsed only when its
        bytes hold the shape of a metric line. Called only while no dialect has given rows: past that, generic
        lines are never rows (`finish`), and text that merely looks like metrics (a completion's "loss: 0.5 ...
        ratio:0.5") is no sign that training went on."""
        if sink.rows or METRIC_MARK.search(raw) is None or _COMMAND.search(raw) is not None:
            return
        pairs = len(_NUM_PAIR.findall(raw)) + (len(_PROSE_PAIR.findall(raw)) if b" is " in raw or b" was " in raw else 0)
        # `key v` pairs without separators (`iter 40: loss 2.31, reward 0.25`, `step 3 loss 0.5 reward 0.2`):
        # parse_line takes them only as whole segments or a whole line of pairs, never out of prose
        if pairs >= 2 or b"tensor(" in raw or (pairs < 2 and len(_SPACED_NUM.findall(raw)) >= 2):
            if len(raw) <= limits.MAX_LINE:
                self.line(clean(raw.decode("utf-8", errors="replace").rstrip("\r\n")), lineno, sink)
        elif pairs == 1 and len(self.singles) < MAX_SINGLES:
            m = _SINGLE.search(raw)
            if m:
                self.singles.append((lineno, raw.decode("utf-8", errors="replace").strip()[:200], m.group(1).decode()))

    def line(self, text: str, lineno: int, sink: Sink) -> None:
        if _COMMAND.search(text.encode("utf-8", "replace")) is not None:
            return
        got = metricline.parse_line(text)
        if got is None:
            m = _SINGLE.search(text.encode("utf-8", "replace")) if len(self.singles) < MAX_SINGLES else None
            if m:
                self.singles.append((lineno, text, m.group(1).decode()))
            return
        row, step, planned = got
        if not self.example:
            self.example = text
        if len(self.rows) < limits.MAX_METRIC_ROWS:
            self.rows.append((row, step, lineno))
        if planned and planned > 1 and not sink.plan:
            sink.planned(planned)
        sink.progressed(step)

    def finish(self, sink: Sink) -> None:
        self._rows(sink)
        if sink.rows:
            return
        keys: dict[str, int] = {}
        for _line, _text, key in self.singles:
            keys[key] = keys.get(key, 0) + 1
        for lineno, text, key in self.singles:
            if keys[key] >= limits.MIN_GENERIC_ROWS:
                sink.unread(lineno, text)

    def _rows(self, sink: Sink) -> None:
        """Generic rows become metrics when no dialect gave any, in the line shapes that recur (a config print
        happens once); a row without a step of its own is stepped by its order."""
        if not self.rows or sink.rows:
            return
        shapes: dict[frozenset[str], int] = {}
        for row, _step, _line in self.rows:
            key = frozenset(row)
            shapes[key] = shapes.get(key, 0) + 1
        kept = [(row, step, line) for row, step, line in self.rows
                if shapes[frozenset(row)] >= limits.MIN_GENERIC_ROWS]
        if any(step is not None for _row, step, _line in kept):
            # lines that name their step are the training rows; shapes without one are per-sample or asides
            stepped = {frozenset(row) for row, step, _line in kept if step is not None}
            kept = [k for k in kept if frozenset(k[0]) in stepped]
        order, last = 0, 0
        for row, step, line in kept:
            if all(_EVAL_KEY.match(k) for k in row):
                sink.eval_row({"step": last, **row})
                continue
            order += 1
            last = step if step is not None else order
            sink.add_row({"step": last, **row}, line, self.name)
        if not sink.rows and len(self.rows) >= limits.MIN_GENERIC_ROWS:
            for _row, _step, line in self.rows[:10]:
                sink.unread(line, self.example)


__all__ = ["METRIC_MARK", "METRIC_MARKERS", "Generic"]
