"""Progress bars (tqdm's `N%|###   | N/TOTAL [...]`), told apart by their totals: the training bar among evaluation
and generation bars, OpenRLHF's episode bars (`Episode [i/n]`, restarting each episode, counted on across them), and
a dense log's plain redraws read from their bytes by the pattern of a description seen twice."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from triage_agent.runs.console import limits
from triage_agent.runs.console.crashes import TRACEBACK
from triage_agent.runs.console.dialect import Dialect, Line, Sink
from triage_agent.runs.console.metricline import parse_line

PROGRESS = re.compile(r"(?P<desc>[^|\r]*?):?\s*(?P<pct>\d+)%\|[^|]*\|\s*(?P<cur>\d+)/(?P<tot>\d+)\s*\[(?P<rest>[^\]]*)\]?")
# a bare counter: tqdm over an iterator with no length prints its count, time and rate and no total
# (`91it [46:43, 32.00s/it]`); the run's progress only after a plan line whose profile says the counter counts it
COUNTER = re.compile(r"\s*(?P<cur>\d+)it \[(?:\d+:)?\d+:\d+, [^\]]*\]")
_EPISODE = re.compile(r"Episode \[(\d+)/(\d+)\]")
_TRAIN_BAR = re.compile(r"train|epoch|step|iter|episode", re.I)
_OTHER_BAR = re.compile(r"load|shard|token|map|download|generat|process|render|eval|valid|sampl|batch|filter|compil",
                        re.I)
_RAY_WORKER = rb"\([\w.:-]+ pid=\d+(?:, ip=[\w.:]+)?\)"  # `(TaskRunner pid=4242)`, `(main_task pid=1, ip=...)`
# a Ray worker's prefix as clean() strips it (colours, then the prefix and one space), ahead of a bar's redraw
_BAR_PREFIX = re.compile(rb"(?:(?:\x1b\[[0-9;]*m)?" + _RAY_WORKER + rb"(?:\x1b\[0m)? ?)?")
# a bar's redraw after its description, as PROGRESS reads it from the description on (in bytes: the digits and
# spaces it takes are ASCII ones, which str patterns take too; the rest stops at the line's end, which PROGRESS
# never sees). A description is learned when the lazy `desc` of PROGRESS could not stop earlier on a line that
# starts with it: no digit in it, not ending in `:` or a space (`:?\s*\d+%` could start inside it otherwise)
_BAR_TAIL = rb":?\s*\d+%\|[^|]*\|\s*(\d+)/(\d+)\s*\[([^\]\r\n]*)\]?"
_LEARNABLE_DESC = re.compile(r"(?:[ -/:-~]*[!-/;-~])?")  # printable ASCII but digits, its last not `:` or space
# a learned description's plain redraw and nothing else: its count, a fill without letters, `{`, carriage returns or
# colours, its times and rate. Every literal another dialect looks for holds a letter or `{` (a test says so), so a
# line this matches whole needs no search for them: the description and what follows it were searched when learned
_TRACEBACK = TRACEBACK.encode()
_STRICT_TAIL = rb"\d+%\|[^|A-Za-z{\r\n\x1b]*\|[ \t]*(\d+)/(\d+)[ \t]*\[([\d:<>?,. ]*(?:s/it|it/s)?)\][ \t]*[\r\n]*"


@functools.lru_cache(maxsize=256)
def bar_kind(desc: str) -> tuple[bool, tuple[int, int] | None]:
    """Whether a bar with this description counts training steps, and its `Episode [i/n]` (cached: a bar is
    redrawn at every step with the same description, and the two searches cost more than the rest of the line)."""
    train = (_TRAIN_BAR.search(desc) is not None or not desc.strip()) and _OTHER_BAR.search(desc) is None
    ep = _EPISODE.search(desc)
    return train, (int(ep.group(1)), int(ep.group(2))) if ep else None


@functools.lru_cache(maxsize=256)
def _pairs(desc: str) -> dict[str, Any] | None:
    """The metric pairs of a description (cached: a step's redraws repeat it); None when it holds none."""
    got = parse_line(desc)
    return None if got is None else got[0]


def _description(text: str, pm: re.Match[str]) -> str:
    """The bar's description: the pattern's, or where that is the last of `|`-separated parts that name no training
    (`Loss: 2.93 | Acc: 1.00 | Speed: 0.2 steps/s | GPU: 6.4/8.8GB`, a DPO loop's tqdm.set_description of batch I:
    the pattern keeps `GPU: 6.4/8.8GB`), the whole text before the percentage."""
    desc = pm.group("desc")
    if not bar_kind(desc)[0] and "|" in text[:pm.start("desc")]:
        return text[:pm.end("desc")]
    return desc


@dataclass
class Bar:
    """One progress bar, told apart from others by its total (training, evaluation, generation bars)."""

    total: int
    current: int
    line: int
    order: int  # which bar was seen first
    restarts: int = 0  # times its count went back (an evaluation bar restarts at every evaluation)
    # whether it ever counted past 0 or was named a training bar: a bar drawn at 0/N with no description is often
    # another bar's first draw (SGLang's CUDA-graph capture prints `0/67` bare, then `Capturing batches ...: 1/67`)
    advanced: bool = False


class Bars(Dialect):
    name = "bars"
    markers = (b"%|", b"it [")
    examples = (
        "\r90it [46:11, 31.97s/it]\r91it [46:43, 32.00s/it]",
        "Training Progress:  45%|████▌     | 45/100 [12:01<14:10,  1.00s/it]",
        "\r 30%|███       | 30/100 [00:30<01:10,  1.00it/s]",
        "Train step of epoch 0:  12%|█▏        | 12/100 [01:02<07:33,  5.15s/it, act_loss=0.1, reward=0.5]",
        "Episode [1/3]:  50%|█████     | 50/100 [00:01<00:01]",
        "Epoch 1:  10%|#         | 10/100 [00:10<01:30]{'loss': 0.5, 'grad_norm': 1.2, 'epoch': 0.1}",
    )

    def __init__(self, others: Callable[[bytes], bool] | None = None) -> None:
        self.bars: dict[int, Bar] = {}
        # the last plain bar's description and the pattern of its redraws (see `fast`), and of its plain redraws
        self.shape: tuple[re.Pattern[bytes], str] | None = None
        self.strict: re.Pattern[bytes] | None = None
        self.desc: str | None = None  # the description of the last redraw read the general way
        # what a plain redraw must not hold to be read from its bytes: what another dialect reads, what clean() strips
        self.others = others
        # a loop's metrics in the training bar's description (`pbar.set_description(f"Loss: {l:.4f} | Acc: ...")`):
        # the last description of the current step, added as its row when the count moves on or the log ends
        self.described: tuple[int, dict[str, Any], int] | None = None
        self.counter: tuple[int, int] | None = None  # a bare counter's last count and its line

    def note(self, cur: int, tot: int, lineno: int, sink: Sink, named: bool = False) -> bool:
        """Note one redraw of a bar; whether it is (as far as the log has told yet) the training bar."""
        b = self.bars.get(tot)
        if b is None:
            if len(self.bars) >= limits.MAX_BARS:
                return False
            b = self.bars[tot] = Bar(tot, cur, lineno, len(self.bars))
        elif cur < b.current:
            b.restarts += 1
        b.current, b.line = cur, lineno
        b.advanced = b.advanced or cur > 0 or named
        train = self.train_bar(sink)
        return train is not None and train.total == tot

    def train_bar(self, sink: Sink) -> Bar | None:
        """The training bar: the one the banner's total names, else the first bar that never restarted (an
        evaluation or generation bar restarts at each use), else the first bar; of the bars that counted a step."""
        if len(self.bars) < 2:  # none, or the one (steady or not): a bar redrawn at every step asks this each time
            only = next(iter(self.bars.values()), None)
            return only if only is not None and only.advanced else None
        total = sink.train_total
        if total is not None and total in self.bars:
            return self.bars[total]
        counted = [b for b in self.bars.values() if b.advanced]
        steady = [b for b in counted if not b.restarts]
        return min(steady or counted, key=lambda b: b.order) if counted else None

    def train_redraw(self, desc: str, cur: int, tot: int, rest: str, lineno: int, sink: Sink) -> bool:
        """A bar's redraw (the groups of a PROGRESS match) noted when the bar counts training steps; whether it does."""
        train, ep = bar_kind(desc)
        if not train:
            return False
        if ep and tot:  # OpenRLHF's bar restarts each episode: the step counts on across episodes
            done = (ep[0] - 1) * tot
            cur, tot = done + cur, ep[1] * tot
        bar_step = sink.bar_step
        if bar_step is not None and cur > bar_step:
            sink.progressed(cur)
        if self.note(cur, tot, lineno, sink, named=_TRAIN_BAR.search(desc) is not None):
            sink.bar(cur, tot, rest, lineno)
            self.describe(desc, cur, lineno, sink)
        return True

    def describe(self, desc: str, cur: int, lineno: int, sink: Sink) -> None:
        """The training bar's description as the step's metrics, when it holds metric pairs (`Loss: 2.93 | Acc:
        1.00`, a custom DPO loop of batch I); a step's last redraw wins, as tqdm shows it."""
        if self.described is not None and self.described[0] != cur:
            self.flush(sink)
            self.described = None
        if cur > 0 and ":" in desc and (got := _pairs(desc)) is not None:
            self.described = (cur, got, lineno)

    def flush(self, sink: Sink) -> None:
        if self.described is not None:
            cur, row, lineno = self.described
            sink.add_row({**row, "step": cur}, lineno, self.name)

    def segment(self, seg: Line, sink: Sink) -> bool:
        text = seg.text
        if "%|" not in text:
            return self.count(text, seg.lineno, sink)
        pm = PROGRESS.search(text)
        if pm is None:
            return False
        if not self.train_redraw(_description(text, pm), int(pm.group("cur")), int(pm.group("tot")), pm.group("rest") or "",
                                 seg.lineno, sink):
            return False
        rest = text[pm.end():]
        if (tb := rest.find(TRACEBACK)) >= 0:
            # a traceback glued to the bar's last redraws (a terminal's copy without carriage returns: a Ctrl-C in
            # batch I, `44/29790 [02:34<24:35:20,  2.98s/it]Traceback ...`): it starts its own segment
            sink.segment(rest[tb:], seg)
        elif "{" in rest:  # stdout's dict glued to stderr's bar redraw on one line (`2>&1`): its own row
            sink.segment(rest[rest.index("{"):], seg)
        elif rest.strip():
            # any other line glued to the last redraw is read as its own: SLURM's `[...] error: *** JOB 4523781 ON
            # della-i23g1 CANCELLED AT ...` right after `45/2133 [42:47<21:36:58, 37.27s/it]` (a batch K run)
            sink.segment(rest.lstrip(), seg)
        return True

    def fast(self, raw: bytes, lineno: int, sink: Sink) -> bool:
        """A training bar's plain redraw (after a Ray prefix in colour), read as `segment` reads it after clean();
        False for any line that holds more (see `others`), which then goes the general way."""
        if b"%|" not in raw or self.others is None:
            return False
        body = raw[_BAR_PREFIX.match(raw).end():]  # type: ignore[union-attr]  # the pattern matches "" too
        if _TRACEBACK in body or not body.rstrip().endswith(b"]") or body.count(b"%|") > 1:
            # a line glued to the last redraw (a traceback, SLURM's cancel, more redraws of a copy without carriage
            # returns): `segment` reads each
            return False
        if self.strict is not None and self.shape is not None and (m := self.strict.fullmatch(body)) is not None:
            return self.train_redraw(self.shape[1], int(m[1]), int(m[2]), m[3].decode(), lineno, sink)
        if body.startswith(b"(") or self.others(body):
            return False
        if self.shape is not None and (m := self.shape[0].match(body)) is not None:
            return self.train_redraw(self.shape[1], int(m[1]), int(m[2]), m[3].decode("utf-8", "replace"), lineno, sink)
        text = body.decode("utf-8", errors="replace").rstrip("\r\n")
        pm = PROGRESS.search(text)
        if pm is None:
            return False
        desc = _description(text, pm)
        if desc == self.desc and _LEARNABLE_DESC.fullmatch(desc):  # learned on its second redraw
            self.shape = (re.compile(re.escape(desc.encode()) + _BAR_TAIL), desc)
            sep = text[pm.end("desc"):pm.start("pct")]  # the `:` and spaces after it, as they were searched
            self.strict = re.compile(re.escape((desc + sep).encode()) + _STRICT_TAIL) if sep.isascii() else None
        self.desc = desc
        return self.train_redraw(desc, int(pm.group("cur")), int(pm.group("tot")), pm.group("rest") or "", lineno, sink)

    def count(self, text: str, lineno: int, sink: Sink) -> bool:
        """A bare counter's redraw, noted; whether the segment was the counter alone (what follows it, a warning
        glued to the redraw, is read on)."""
        if "it [" not in text or (m := COUNTER.match(text)) is None:
            return False
        cur = int(m.group("cur"))
        self.counter = (cur, lineno)
        if sink.counted_total is not None:
            sink.progressed(cur)
        return m.end() == len(text.rstrip())

    def finish(self, sink: Sink) -> None:
        total, counter = sink.counted_total, self.counter
        if total is not None and counter is not None:  # the counter counts the plan: the bars are other work's
            sink.progress(counter[0], total, counter[1])
            if counter[0] >= total > 0:
                sink.finished(f"the counter at {counter[0]} of {total}", counter[1], weak=True)
            return
        train = self.train_bar(sink)
        if train is None:
            return
        sink.progress(train.current, train.total, train.line)
        if sink.train_total is None and (sink.plan is None or sink.plan in self.bars):
            sink.planned(train.total)
        if train.current == train.total and train.total > 0:
            sink.finished(f"the training bar at {train.total}/{train.total}", train.line, weak=True)


__all__ = ["PROGRESS", "Bar", "Bars", "bar_kind"]
