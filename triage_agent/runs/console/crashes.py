"""Crashes: tracebacks and fatal lines, each classified by kind (oom, nccl_timeout, engine_dead, import, disk,
scheduler, signal, nonfinite, config, other) with the innermost frame of the training code; the root of a cascade
(an ImportError in a Ray worker, then an AssertionError; an NCCL timeout, then the launcher's SIGABRT); and one
crash per launch of a log that holds several (a relaunch supersedes the crash before it).

A traceback belongs to the rank that printed it: the lines of a distributed launch's ranks (`[rank3]:`) interleave,
and rank 3's traceback goes on past rank 0's lines.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from enum import Enum

from triage_agent.runs.console import limits
from triage_agent.runs.console.dialect import Dialect, Line, Marker, Sink, Word
from triage_agent.runs.console.text import RAY_HEAD, clean, cleaned_start, split_rank, trie
from triage_agent.runs.model import CrashInfo, Frame
from triage_agent.safe import redact

_EXC_LINE = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:\((?P<inner>[A-Za-z_][\w.]*)\))?)(?::\s?(?P<msg>.*))?$")
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>\S+)')
_EXC_SKIP = ("During handling", "The above exception", "Traceback")
TRACEBACK = "Traceback (most recent call last)"
# (pattern, label, the literals it needs: one in each alternative). A line is tried on a pattern only when it
# holds one of its literals: `re` finds no literal in alternations that start with \b or ^, and searched a
# rollout line at 7-13 µs per pattern; a substring test first costs ~0.1 µs
FATAL: list[tuple[re.Pattern[str], str, tuple[str, ...]]] = [
    (re.compile(r"CUDA out of memory|torch\.(?:cuda\.)?OutOfMemoryError|CUDA error: out of memory"), "CUDA OOM",
     ("out of memory", "OutOfMemoryError")),
    (re.compile(r"NCCL.*(?:[Tt]imeout|timed out)|Watchdog caught collective operation timeout"), "NCCL timeout",
     ("NCCL", "Watchdog caught")),
    (re.compile(r"Segmentation fault|core dumped|SIGSEGV"), "Segmentation fault",
     ("Segmentation fault", "core dumped", "SIGSEGV")),
    # CPython's own abort (Py_FatalError): no traceback line, only faulthandler's thread dump after it (a verl
    # worker's `Fatal Python error: none_dealloc: deallocating None` in batch J)
    (re.compile(r"^Fatal Python error: "), "Fatal Python error", ("Fatal Python error: ",)),
    (re.compile(r"\*\*\* JOB \d+ ON \S+ CANCELLED AT|\bCANCELLED AT \S+ DUE TO|\bDUE TO (?:TIME LIMIT|PREEMPTION|"
                r"NODE FAILURE)|job \d+ .*PREEMPTED|\bPREEMPTED\b"), "Job ended by the scheduler",
     ("CANCELLED", "DUE TO", "PREEMPTED")),
    (re.compile(r"^Killed$|[Rr]eceived (?:signal )?SIG(?:TERM|KILL|HUP|INT)\b|"
                r"\bSignal \d+ \(SIG\w+\) received by PID|exits with return code = -\d+|"
                r"failed \(exitcode: -\d+\) local_rank"), "Killed",
     ("Killed", "eceived ", "Signal ", "return code", "exitcode")),
    (re.compile(r"\b(?:loss|Loss|LOSS)(?: is|:|=)\s*-?(?:nan|NaN|NAN|inf|Inf|INF)\b|NaN or Inf found|"
                r"non-finite loss"), "NaN/inf loss", ("loss", "Loss", "LOSS", "NaN or Inf", "non-finite loss")),
    (re.compile(r"No space left on device|\[Errno 28\]"), "No space left on device",
     ("No space left", "[Errno 28]")),
    (re.compile(r"EngineDeadError|EngineCore .*died|RPC call to \w+ timed out"), "vLLM engine died",
     ("EngineDeadError", "EngineCore", "RPC call to")),
    (re.compile(r"ray\.exceptions\.\w+Error|RayTaskError|ActorDiedError"), "Ray task error",
     ("ray.exceptions.", "RayTaskError", "ActorDiedError")),
    # argparse's parser.error: the launch's own command line was refused, exit 2, before any step
    (re.compile(r"^[\w./-]+: error: argument |^[\w./-]+: error: unrecognized arguments|"
                r"^[\w./-]+: error: the following arguments are required"),
     "Bad command-line arguments", (": error: argument ", ": error: unrecognized arguments",
                                    ": error: the following arguments are required")),
    # pdb's prompt: the process stopped in the debugger (a `breakpoint()`, or `pdb.post_mortem` on an error) and
    # waits there; unless steps go on after it, the run ended there (HALOs' FSDP assertion, torch's `_p_assert`
    # printing its stack, then `(Pdb)`: batch G)
    (re.compile(r"^\(Pdb\) "), "Stopped in the debugger (pdb)", ("(Pdb) ",)),
]
_LITERALS = [lit for _p, _label, lits in FATAL for lit in lits]
# any of them, as one pattern (a trie: 1.2 µs on a rollout line, against 1.9 for a flat alternation and ~8 for the
# substring tests one by one)
FATAL_ANY = re.compile(trie(_LITERALS))
# which of them, overlapping ones included (a lookahead at each position): only on the lines the gate passed
FATAL_WHICH = re.compile("(?=(" + "|".join(map(re.escape, _LITERALS)) + "))")
# crash kinds (spec: trainer-findings.md, log.crash), tried in order on "exception: message"
KINDS: list[tuple[str, re.Pattern[str]]] = [
    ("oom", re.compile(r"OutOfMemoryError|out of memory|CUDA OOM|OOM", re.I)),
    ("nccl_timeout", re.compile(r"NCCL.*time|Watchdog caught collective|collective operation timeout|"
                                r"DistBackendError.*time", re.I)),
    ("engine_dead", re.compile(r"EngineDeadError|engine died|EngineCore|RPC call .* timed out|RPC timeout", re.I)),
    ("import", re.compile(r"ImportError|ModuleNotFoundError|undefined symbol|failed to import", re.I)),
    ("disk", re.compile(r"No space left|Errno 28|PytorchStreamWriter failed|Disk quota exceeded", re.I)),
    ("scheduler", re.compile(r"Job ended by the scheduler|DUE TO (?:TIME LIMIT|PREEMPTION|NODE FAILURE)|PREEMPTED|"
                             r"CANCELLED AT", re.I)),
    # an interrupt is a signal too: Ctrl-C (KeyboardInterrupt), the launcher's SIGINT, torchrun's SignalException
    ("signal", re.compile(r"SIGHUP|SIGTERM|SIGKILL|SIGSEGV|SIGINT|KeyboardInterrupt|SignalException|"
                          r"Segmentation fault|^Killed|signal:? \d+|exitcode\s*:\s*-\d|"
                          r"killed by signal", re.I)),
    ("nonfinite", re.compile(r"NaN/inf loss|\bnan\b.*loss|loss.*\b(?:nan|inf)\b|non-finite", re.I)),
    ("config", re.compile(r"ConfigAttributeError|ConfigKeyError|MissingMandatoryValue|ValidationError|"
                          r"unrecognized arguments|error: argument|InterpolationResolutionError|"
                          r"Bad command-line arguments", re.I)),
]
_KIND_OF = dict(KINDS)
# a cascade's follow-on errors: when the last error is one of these, an earlier specific one is the root
_FOLLOW_ON = re.compile(r"AssertionError|RayTaskError|ActorDiedError|RuntimeError|Ray task error|ChildFailedError|"
                        r"ActorUnavailableError|RaySystemError|"
                        # AReaL's launcher (utils/launcher.py) on a worker that exited: the worker's error is the cause
                        r"launcher\.JobException|"
                        # accelerate's and torch's launchers re-raise a child's exit as CalledProcessError
                        r"CalledProcessError", re.I)
# frames of installed packages and the standard library, not of the training code
_LIBRARY = re.compile(r"site-packages/|dist-packages/|/lib/python\d[\d.]*/(?!site-packages)|<frozen |^<|"
                      r"^python/ray/")
# what a NaN-loss line holds, as the pattern spells it (the gate of a line read one by one takes no word markers)
_LOSS = (b"loss is", b"loss:", b"loss=", b"Loss is", b"Loss:", b"Loss=", b"LOSS")
# a tqdm redraw left on the line (`44/29790 [02:34<24:35:20,  2.98s/it]Traceback ...`: a Ctrl-C in batch I)
_BAR_REDRAW = re.compile(r"\d+/\d+ \[[^\]]*\]\s*$")
LOGGED_LAST_LINES = 2  # a logged traceback whose exception is this close to the log's end (blank lines) ended it
MAX_IDLE = 200  # lines of other ranks after which a rank's open traceback is taken as ended
MAX_PRINTED = 1024  # distinct first lines of printed tracebacks whose decision is kept, each of at most
PRINTED_LINE = 512  # bytes (at most 0.5 MB kept, whatever the lines' length)
# a traceback printed inside other text, in bytes: text that stays in the cleaned line before its first marker (no
# escape in it; not the marker itself, a traceback's own first line): a handled one, of no rank
_PRINTED = re.compile(RAY_HEAD + rb"(?!\[rank|\[default|Traceback \(most recent call last\))[!-'*-/:-~]"
                      rb"[^\x1b\r\n]*?Traceback \(most recent call last\)")
# a line of no rank that ends a traceback at once: its cleaned text starts with none of what goes on with one
# (whitespace, a letter or `_`: an exception, a chained cause's words)
_ENDS_IT = cleaned_start(rb"!-'*-/:-@\[-^`{-~")


def crash_kind(exception: str, message: str) -> str:
    text = f"{exception}: {message}"
    for kind, pattern in KINDS:
        if pattern.search(text):
            return kind
    return "other"


def training_frame(frames: list[Frame]) -> Frame | None:
    """The innermost frame outside installed packages and the standard library (None when all are)."""
    for fr in reversed(frames):
        if not _LIBRARY.search(fr.file):
            return fr
    return None


def crash_info(exception: str, message: str, line: int, frames: list[Frame] | None = None,
               fatal: str | None = None) -> CrashInfo:
    kind = crash_kind(exception, message)
    return CrashInfo(exception, redact.text(message), line, fatal, kind, training_frame(frames or []))


class Traceback:
    """State of a traceback being read: whether a logger printed it, its frames, its last exception line."""

    def __init__(self, logged: bool) -> None:
        self.logged = logged
        self.frames: list[Frame] = []
        self.exception: tuple[str, str, int] | None = None
        self.idle = 0  # lines of other ranks since its last own line

    def continues(self, text: str, lineno: int) -> bool:
        """Whether `text` still belongs to the traceback (frames, chained causes, the exception)."""
        if text.startswith((" ", "\t")) or (not text.strip() and self.exception is None):
            fm = _FRAME.match(text)
            if fm and len(self.frames) < 200:
                self.frames.append(Frame(fm.group("file"), int(fm.group("line")), fm.group("fn")))
            return True
        if text.startswith(_EXC_SKIP):
            return True
        em = _EXC_LINE.match(text.strip())
        if em and ("Error" in text or "Exception" in text or "Interrupt" in text or em.group("msg") is None):
            self.exception = (em.group("inner") or em.group("type"), (em.group("msg") or "").strip()[:300], lineno)
            return True
        return False

    def error(self) -> CrashInfo | None:
        """The error it reports when it ends (None: a logger printed it, or no exception line came)."""
        return None if self.logged else self.exception_info()

    def exception_info(self) -> CrashInfo | None:
        """Its exception as an error, whoever printed it (None: no exception line came)."""
        if self.exception is None:
            return None
        etype, msg, eline = self.exception
        return crash_info(etype, msg, eline, self.frames)


class Cascade:
    """The errors of one launch since its last sign of progress, and the crashes of the launches before it."""

    def __init__(self) -> None:
        self.errors: list[CrashInfo] = []
        self.mark: int | None = None  # the step the run was at when the cascade began
        self.superseded: list[CrashInfo] = []

    def copy(self) -> Cascade:
        c = Cascade()
        c.errors, c.mark, c.superseded = list(self.errors), self.mark, list(self.superseded)
        return c

    def add(self, crash: CrashInfo, position: int | None) -> None:
        """An error, in its line's place (a rank's traceback reports its exception when it ends, maybe after the
        launcher's own errors)."""
        if not self.errors:
            self.mark = position
        bisect.insort(self.errors, crash, key=lambda e: e.line)
        del self.errors[:-limits.MAX_CASCADE]

    def progressed(self, step: int | None) -> None:
        """Training went on: the cascade was not fatal, unless the step is not past the cascade's (stdout's buffered
        metric line of the crashed step, printed after stderr's traceback)."""
        if self.errors and (step is None or self.mark is None or step > self.mark):
            self.errors.clear()

    def new_launch(self) -> None:
        crash = self.crash()
        if crash is not None:
            self.superseded.append(crash)
            del self.superseded[:-limits.MAX_LAUNCHES]
        self.errors.clear()
        self.mark = None

    def crash(self) -> CrashInfo | None:
        """The root error of the cascade: its last error, unless that only follows on an earlier one."""
        if not self.errors:
            return None
        last = self.errors[-1]
        root = last
        # a launcher's signal or exit code (torchrun's "Signal 6 (SIGABRT) received", "exitcode: -6") is what a
        # fatal error did to the process: an earlier NCCL timeout, OOM or engine death is the cause and the kind
        follow_on = last.kind == "signal" or (last.kind == "other" and
                                              _FOLLOW_ON.search(last.exception + " " + last.message))
        if follow_on:
            specific = [e for e in self.errors if e.kind not in ("other", "signal")]
            # an ImportError itself beats a RuntimeError that only says an import failed
            typed = [e for e in specific if _KIND_OF[e.kind].search(e.exception)]
            # else the first earlier error that is no follow-on itself (a NameError in the training script, then
            # the launcher's CalledProcessError)
            own = [e for e in self.errors[:-1] if e.kind != "signal" and
                   not _FOLLOW_ON.search(e.exception + " " + e.message)]
            root = (typed or specific or own or [last])[0]
        later = self.errors[self.errors.index(root) + 1:]
        frame = root.frame or next((e.frame for e in later if e.frame), None)
        cascade = tuple((e.exception, e.message, e.line) for e in self.errors if e is not root)
        return CrashInfo(root.exception, root.message, root.line, root.fatal_pattern, root.kind, frame, cascade,
                         self.mark)


class Follow(Enum):
    NONE = 0  # no traceback of the line's rank is open
    CONTINUES = 1  # the line is part of it
    ENDED = 2  # the line ended it (and is read on)


class Crashes(Dialect):
    """Tracebacks, one open per rank, and fatal lines. Read before every dialect (an open traceback takes its rank's
    lines) and after them (a segment no dialect took may start a traceback or be fatal)."""

    name = "crashes"
    # the fatal patterns' literals (a NaN-loss line's as the pattern spells them)
    markers = (TRACEBACK.encode(), *(lit.encode() for lit in _LITERALS if lit.lower() != "loss"), *_LOSS)
    examples = (
        "Traceback (most recent call last):",
        "[rank3]: Traceback (most recent call last):",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.1 GiB",
        "[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 1800000 milliseconds before timing out.",
        "Killed",
        "Fatal Python error: none_dealloc: deallocating None: bug likely caused by a refcount error in a C extension",
        "[2025-02-20 20:27:14,902] [INFO] [launch.py:328:sigkill_handler] Main process received SIGINT, exiting",
        "slurmstepd: error: *** JOB 4242 ON node-7 CANCELLED AT 2024-05-01T10:00:00 DUE TO TIME LIMIT ***",
        "torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -6) local_rank: 0 (pid: 77)",
        "loss: nan",
        "RuntimeError: [Errno 28] No space left on device",
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.",
        "ray.exceptions.RayTaskError(ImportError): ray::WorkerDict.actor_rollout_init_model()",
    )

    def live(self, sink: Sink) -> tuple[Marker, ...]:
        # once a dialect gave rows, a NaN-loss line is found by its non-finite word: "loss: 0.5 of the clips" prose
        # in a rollout is then not even cut out of its block. As words (the pattern ends them with \b): "nan" and
        # "inf" as bare substrings cut out every INFO logging line, "info" and "inference" (1,069 of the 24,032
        # lines of the real logs in tests/real_runs and ../shared/real_runs; as words, 3)
        if not sink.rows:
            return self.markers
        return (*(m for m in self.markers if m not in _LOSS), Word(b"nan"), Word(b"inf"))

    def __init__(self, others: Callable[[bytes], bool] | None = None) -> None:
        self.tbs: dict[str, Traceback] = {}  # rank -> its open traceback
        # what a traceback's first line must not hold to be opened from its bytes: what another dialect reads
        self.others = others
        self._printed: dict[bytes, bool] = {}  # first lines of printed tracebacks decided: whether `printed` may take it
        self.logged_last: CrashInfo | None = None  # the exception of the last traceback a logger printed

    @property
    def open(self) -> bool:
        return bool(self.tbs)

    def follow(self, line: Line, sink: Sink) -> Follow:
        """A line while tracebacks are open: its rank's goes on, or ends (and reports its error)."""
        rank = line.rank
        for other in [r for r in self.tbs if r != rank]:
            waiting = self.tbs[other]
            waiting.idle += 1
            if waiting.idle > MAX_IDLE:
                self.end(other, sink)
        tb = self.tbs.get(rank)
        if tb is None:
            return Follow.NONE
        if tb.continues(line.text, line.lineno):
            tb.idle = 0
            return Follow.CONTINUES
        self.end(rank, sink, line.text)
        return Follow.ENDED

    def end(self, rank: str, sink: Sink, ended_by: str = "") -> None:
        """Its traceback ended (by the line `ended_by`, "" when another rank's lines took over)."""
        tb = self.tbs.pop(rank)
        error = tb.error()
        if error is not None:
            sink.error(error)
        elif tb.logged:
            # a logged one may yet end the log: only blank lines may follow it then
            self.logged_last = tb.exception_info() if not ended_by.strip() else None

    def open_traceback(self, rank: str, idx: int, sink: Sink, text: str = "") -> None:
        """A traceback starts, its marker at `idx` of the line: one a logger printed (ERROR:...:Traceback, any text
        before it but a progress bar's redraw, which stderr left without a newline) is a handled error, not the end
        of the run."""
        tb = self.tbs[rank] = Traceback(logged=idx > 0 and _BAR_REDRAW.search(text[:idx]) is None)
        if tb.logged:
            sink.handled_traceback()

    def segment(self, seg: Line, sink: Sink) -> bool:
        text = seg.text
        idx = text.find(TRACEBACK)
        if idx >= 0:
            self.open_traceback(seg.rank, idx, sink, text)
            return True
        if FATAL_ANY.search(text) is None:
            return False
        hits = {m.group(1) for m in FATAL_WHICH.finditer(text)}
        for pattern, label, literals in FATAL:
            if not hits.isdisjoint(literals) and pattern.search(text):
                sink.error(crash_info(label, text.strip()[:300], seg.lineno, fatal=label))
                return True
        return False

    def fast(self, raw: bytes, lineno: int, sink: Sink) -> bool:
        """A traceback's first line (`[sandbox] Traceback ...` in a rollout dump, thousands of them), opened as the
        general way opens it; False for a line that holds what another dialect reads (`others`)."""
        if b"Traceback (most" not in raw or self.others is None or self.others(raw):
            return False
        rank, text = split_rank(clean(raw.decode("utf-8", errors="replace").rstrip("\r\n")))
        idx = text.find(TRACEBACK)
        if idx < 0 or len(text) > limits.MAX_LINE:
            return False
        self.open_traceback(rank, idx, sink, text)
        return True

    def printed(self, raw: bytes, data: bytes | bytearray, after: int, sink: Sink) -> bool:
        """A traceback printed inside other text (`[sandbox] Traceback ...` after a worker prefix: a rollout dump's
        hundreds of thousands) whose next line (at `data[after:]`, the block in memory) ends it at once, decided on
        the bytes of both: counted as the general way counts it (a handled traceback) and never opened, so that the
        scan does not go line by line for it. False: the general way decides (a rank's, a line another dialect
        reads, a next line that may go on with it or is not in `data`, anything clean() would change)."""
        printed = self._printed.get(raw)
        if printed is None:  # a dump prints the same line many times (`[sandbox] Traceback ...` of one worker)
            printed = self.others is not None and _PRINTED.match(raw) is not None and not self.others(raw)
            if len(raw) <= PRINTED_LINE:
                if len(self._printed) >= MAX_PRINTED:
                    self._printed.clear()
                self._printed[raw] = printed
        if not printed:
            return False
        if data.find(b"\n", after, after + limits.MAX_LINE) < 0 or _ENDS_IT.match(data, after) is None:
            return False  # no whole next line in the block (read as the general way reads it), or one that may go on
        sink.handled_traceback()
        return True

    def flush(self, sink: Sink) -> None:
        last = self.logged_last
        for tb in self.tbs.values():  # in the order they opened; each stays open (a scan read on goes on with it)
            error = tb.error()
            if error is not None:
                sink.error(error)
            elif tb.logged:
                last = tb.exception_info() or last
        # a traceback a logger printed is a handled error, unless the log ends with it: the script caught its
        # error, logged it and stopped (`except Exception: logger.error(...)`, a custom DPO loop of batch I whose
        # whole log is that record: a DataLoader worker killed by SIGTERM)
        if last is not None and sink.lines - last.line <= LOGGED_LAST_LINES:
            sink.error(last)


__all__ = ["FATAL", "FATAL_ANY", "FATAL_WHICH", "KINDS", "Cascade", "Crashes", "Follow", "Traceback",
           "crash_kind", "training_frame"]
