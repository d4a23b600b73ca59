"""Split a folder into runs before anything is read: files are never mixed across runs.

A run is a folder with its own trainer output (a log, `trainer_state.json`, TensorBoard events,
a W&B run, tables, round folders, a config). Folders that are parts of a run by their name
(`configs/`, `.hydra/`, `selector_round2/`, `checkpoint-500/`, TRL's `runs/`, `wandb/` with one run)
never make a run of their own. A folder whose own files are only configs or text notes (a sweep's
config, a README quoting a log line) and which holds two or more runs below it is a sweep; a folder
with trainer output of its own is one run.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from triage_agent.errors import BadInput
from triage_agent.runs import discover as disc

SPLIT_DEPTH = 8  # a run may sit this deep below the folder given (Hydra multirun: multirun/date/time/N/...)
MAX_LISTED = 200_000  # files looked at while splitting; past this the listing stops and says so
# folder names that are parts of one run, never a run of their own (lower case; globs allowed)
PART_NAMES = ("configs", "config", ".hydra", "logs", "log", "runs", "tensorboard", "tensorboard_log", "tb",
              "tb_logs", "events", "checkpoint-*", "checkpoints", "ckpt", "ckpts", "global_step*", "rollouts",
              "rollout_data", "rollout_data_dir", "samples", "generations", "eval", "evals", "metrics", "files",
              "latest-run", "plots", "artifacts",
              # the role folders of the spec's run families (run-format.md): parts of one run, never a sweep
              "policy", "solver", "calibration", "selector", "generator", "data", "datasets", "round*", "*_round*")
NOTE_TEXT = (".md", ".txt")  # a text capture beside runs is a note, not a run's output
# files whose role only their content tells (the console and table sniffs read them): from a listing alone (a
# remote sweep split before anything is fetched) such a file counts as a note; a folder of nothing else with no run
# below is still one run (its worker fetches and reads it), and beside two runs or more it is a sweep's note
LISTED_UNSURE = (".md", ".txt", ".out", ".err", ".json", ".jsonl", ".csv", ".tsv", ".parquet")
_NOWHERE = Path(os.devnull) / "triage-listing"  # below a device: no sniff finds a file there to read
_RUN_DIR = re.compile(r"^(offline-)?run-")  # a W&B run folder inside wandb/
_PART = re.compile("|".join(fnmatch.translate(p) for p in PART_NAMES))  # one match for all the globs


@dataclass(frozen=True)
class RunRef:
    path: Path
    name: str  # the path below the folder given, posix ("." when the folder is the run)


@dataclass
class Split:
    root: Path
    runs: list[RunRef]
    notes: list[str] = field(default_factory=list)

    @property
    def several(self) -> bool:
        return len(self.runs) > 1

    def pick(self, name: str) -> RunRef | None:
        """A run by its name, its path, or a unique last component."""
        want = name.strip().rstrip("/")
        for r in self.runs:
            if want in (r.name, str(r.path)) or Path(want).resolve() == r.path.resolve():
                return r
        tail = [r for r in self.runs if r.path.name == want]
        return tail[0] if len(tail) == 1 else None

    def require(self, name: str, where: str) -> RunRef:
        """The run `name` (as `pick` finds it), or a one-line error listing the runs there are."""
        got = self.pick(name)
        if got is None:
            raise BadInput(f"{where}: no run named {name!r}; runs: {', '.join(r.name for r in self.runs[:12])}")
        return got


@dataclass
class _Node:
    path: Path
    children: list[_Node] = field(default_factory=list)
    own_output: bool = False  # a file of its own that is trainer output (not a config)
    own_config: bool = False
    own_text: bool = False  # only a text capture (`.md`, `.txt`) of its own: a note beside runs, maybe
    manifest: bool = False
    evidence: bool = False  # anything recognised at or below


def _is_part(name: str, node: _Node) -> bool:
    low = name.lower()
    if disc.round_of((name, "x")) is not None or re.match(r"^round_?\d+$", low):
        return True
    if low == "wandb":  # one W&B run inside is part of this run; several are runs of their own
        return sum(1 for c in node.children if c.evidence and _RUN_DIR.match(c.path.name)) <= 1
    return _PART.match(low) is not None


def _walk(root: Path, notes: list[str]) -> _Node:
    nodes: dict[str, _Node] = {}
    listed = 0
    top = _Node(root)
    base = os.fspath(root)
    nodes[base] = top
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = nodes[dirpath]
        # the folder below the root, by string (pathlib's parsing was half of a 1,000-run sweep's split)
        below = dirpath[len(base):].strip(os.sep).replace(os.sep, "/")
        depth = below.count("/") + 1 if below else 0
        dirnames[:] = sorted(d for d in dirnames if (not d.startswith(".") or d == ".hydra")
                             and depth < SPLIT_DEPTH + disc.MAX_DEPTH)
        for d in dirnames:
            key = os.path.join(dirpath, d)
            child = _Node(Path(key))
            nodes[key] = child
            here.children.append(child)
        for name in sorted(filenames):
            if disc.skipped(name):
                continue
            listed += 1
            if listed > MAX_LISTED:
                notes.append(f"more than {MAX_LISTED} files below {root}: the rest were not looked at")
                return top
            _mark(here, Path(dirpath, name), f"{below}/{name}" if below else name)
    return top


def _mark(here: _Node, path: Path, rel: str, listed: bool = False) -> None:
    """What one file says of its folder: a manifest, a config, a text note, or trainer output. `listed`: the file
    is only a name in a listing (its content is not here to sniff)."""
    if path.name == "triage.toml":
        here.manifest = True
        return
    suffix = path.suffix.lower()
    try:
        role = disc.classify(path, rel)
    except OSError:  # a sniff that reads the file: from a listing, the file is not here
        role = None
    if role is None and suffix in (".yaml", ".yml"):
        role = "config"  # a yaml at a run's top is its config (run-format.md)
    if role is None and listed and suffix in LISTED_UNSURE:
        here.own_text = True
    if role == "config":
        here.own_config = True
    elif role == "log" and suffix in NOTE_TEXT:
        here.own_text = True
    elif role is not None:
        here.own_output = True


def _evidence(node: _Node) -> bool:
    kids = [_evidence(c) for c in node.children]  # every child, so each knows its own evidence
    node.evidence = node.own_output or node.own_config or node.own_text or node.manifest or any(kids)
    return node.evidence


def _runs(node: _Node, notes: list[str], root: Path) -> list[Path]:
    if not node.evidence:
        return []
    if node.manifest or node.own_output:
        return [node.path]
    kids = [c for c in node.children if c.evidence and not _is_part(c.path.name, c)]
    found = [p for c in kids for p in _runs(c, notes, root)]
    if len(found) >= 2:
        if node.own_config or node.own_text:
            notes.append(f"{node.path.relative_to(root).as_posix() or '.'}: files beside several runs (configs, "
                         "notes) are not part of any of them")
        return found
    return [node.path]


def split_listing(root: Path, rels: list[str]) -> Split:
    """The runs in a listing of files below `root` (posix paths, `a/b/c.log`), split by names alone, as
    `split_runs` splits a folder: nothing is read (a remote sweep is split before any object is fetched). The
    listing's own bounds are the caller's (`remote.list_sweep`)."""
    notes: list[str] = []
    top = _Node(root)
    nodes: dict[str, _Node] = {"": top}
    for rel in sorted(rels, key=lambda r: r.split("/")):  # the order of a walk: folder by folder
        parts = rel.split("/")
        if len(parts) > SPLIT_DEPTH + disc.MAX_DEPTH + 1 or disc.skipped(parts[-1]):
            continue
        here = top
        for depth in range(1, len(parts)):
            key = "/".join(parts[:depth])
            if key not in nodes:
                nodes[key] = _Node(root / key)
                here.children.append(nodes[key])
            here = nodes[key]
        _mark(here, _NOWHERE / rel, rel, listed=True)  # judged by name: never a local file of that name
    _evidence(top)
    paths = _runs(top, notes, root) or [root]
    return Split(root, [RunRef(p, p.relative_to(root).as_posix() or ".") for p in paths], notes)


def split_runs(root: Path) -> Split:
    """The runs in a folder (the folder itself when it is one run)."""
    notes: list[str] = []
    top = _walk(root, notes)
    _evidence(top)
    paths = _runs(top, notes, root) or [root]
    return Split(root, [RunRef(p, p.relative_to(root).as_posix() or ".") for p in paths], notes)


# -- a listing split as it streams -----------------------------------------------------------------------------------

Files = dict[str, dict[str, Any]]  # a run's files: path below the run -> the listing's slim info


class Misspeculated(Exception):
    """A file listed late made a folder whose runs were handed on already one run of its own (a trainer's output,
    or a manifest, beside its runs, after them in key order): the sweep is split again from the whole listing."""


@dataclass
class _Open:
    """A folder of the listing that the listing has not passed yet."""

    rel: str  # below the root, posix ("" for the root)
    node: _Node
    in_part: bool  # it or a folder above it is part of a run by its name: nothing below it is a run of its own
    sweep: bool = False  # taken to be a sweep: its runs were handed on as each ended; its own files dropped
    found: int = 0  # runs in its ended folders that are not parts
    held: list[tuple[str, Files, list[str]]] = field(default_factory=list)  # ended runs not handed on (hold)
    files: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # its whole subtree's files (hold)
    names: set[str] = field(default_factory=set)  # its own files' names (a second of one name is skipped)
    run_dirs: int = 0  # W&B run folders with evidence below it (a `wandb/` of one run is part of its run)
    child_evidence: bool = False

    @property
    def name(self) -> str:
        return self.rel.rsplit("/", 1)[-1]

    def evidence(self) -> bool:
        n = self.node
        return n.own_output or n.own_config or n.own_text or n.manifest or self.child_evidence

    def part(self) -> bool:
        """Part of its parent's run by its name (a `wandb/` of at most one W&B run, so far)."""
        if self.rel == "":
            return False
        if self.name.lower() == "wandb":
            return self.run_dirs <= 1
        low = self.name.lower()
        return disc.round_of((self.name, "x")) is not None or re.match(r"^round_?\d+$", low) is not None \
            or _PART.match(low) is not None

    def one_run(self) -> bool:
        return self.node.manifest or self.node.own_output


class StreamSplit:
    """The runs of a listing given in key order (S3's own: a folder's keys are contiguous), each handed on to
    `emit(name, files)` as soon as it is final, so the driver never holds the listing: the same runs, with the
    same files, as `split_listing` and `remote.by_run` on the whole listing. A folder's decision needs its whole
    subtree (its own files may come after its runs); it is taken early, on speculation, once the folder holds two
    runs or more with no trainer output of its own so far: it is then a sweep, its runs are handed on and its own
    files dropped. A file of trainer output listed later in such a folder raises `Misspeculated` (the caller
    splits the whole listing instead). Until then a folder holds its subtree: at most one run and the parts
    beside it. `speculate=False` holds everything to the end (the fallback, O(files))."""

    def __init__(self, root: Path, emit: Callable[[str, Files], None], speculate: bool = True) -> None:
        self.root, self.emit, self.speculate = root, emit, speculate
        self.stack: list[_Open] = [_Open("", _Node(root), False)]
        self.notes: list[str] = []
        self.last = ""
        self.runs = 0

    def add(self, rel: str, info: dict[str, Any]) -> None:
        """One listed file (its path below the root, posix, and its slim info), in key order."""
        if rel < self.last:
            raise BadInput(f"the listing is not in key order ({rel[:80]!r} after {self.last[:80]!r})")
        self.last = rel
        parts = rel.split("/")
        while self.stack[-1].rel and not rel.startswith(self.stack[-1].rel + "/"):
            self._close()
        for depth in range(len(self.stack), len(parts)):  # the folders it opens
            sub = "/".join(parts[:depth])
            up = self.stack[-1]
            here = _Open(sub, _Node(self.root / sub), up.in_part)
            here.in_part = up.in_part or here.part() and here.name.lower() != "wandb"
            self.stack.append(here)
        top = self.stack[-1]
        if parts[-1] in top.names:
            self.notes.append(f"skipped the key {rel[-120:]!r}: no name of its own, or the same as another's")
            return
        top.names.add(parts[-1])
        if len(parts) <= SPLIT_DEPTH + disc.MAX_DEPTH + 1 and not disc.skipped(parts[-1]):
            _mark(top.node, _NOWHERE / rel, rel, listed=True)
        if top.sweep and top.one_run():
            raise Misspeculated(top.rel)
        if not top.sweep:
            top.files.append((rel, info))
        self._speculate()

    def end(self) -> list[str]:
        """The listing has ended: the last folders are closed, the root's runs handed on; the split's notes."""
        while len(self.stack) > 1:
            self._close()
        root = self.stack.pop()
        if root.sweep:
            self._sweep_note(root)
        else:
            runs = self._result(root)[0]
            for name, files, notes in runs or [(".", self._files(root, "."), [])]:
                self.notes.extend(notes)
                self._emit(name, files)
        return self.notes

    def _emit(self, name: str, files: Files) -> None:
        self.runs += 1
        self.emit(name, files)

    def _files(self, folder: _Open, name: str) -> Files:
        cut = 0 if name == "." else len(name) + 1
        return {rel[cut:]: info for rel, info in folder.files}

    def _result(self, folder: _Open) -> tuple[list[tuple[str, Files, list[str]]], list[str]]:
        """A held folder's runs as `_runs` finds them (name, files, the notes said if they are runs), and the
        notes for when it is a sweep."""
        if not folder.evidence():
            return [], []
        name = folder.rel or "."
        if folder.one_run():
            return [(name, self._files(folder, name), [])], []
        if len(folder.held) >= 2:
            notes = [n for _, _, ns in folder.held for n in ns]
            if folder.node.own_config or folder.node.own_text:
                notes.append(self._beside(folder))
            return [(n, f, notes if i == len(folder.held) - 1 else []) for i, (n, f, _) in enumerate(folder.held)], []
        return [(name, self._files(folder, name), [])], []

    def _beside(self, folder: _Open) -> str:
        return f"{folder.rel or '.'}: files beside several runs (configs, notes) are not part of any of them"

    def _sweep_note(self, folder: _Open) -> None:
        if folder.one_run() or folder.found < 2:
            raise Misspeculated(folder.rel)
        if folder.node.own_config or folder.node.own_text:
            self.notes.append(self._beside(folder))

    def _close(self) -> None:
        done = self.stack.pop()
        up = self.stack[-1]
        evidence = done.evidence()
        up.child_evidence = up.child_evidence or evidence
        if evidence and _RUN_DIR.match(done.name):
            up.run_dirs += 1
        if done.sweep:
            self._sweep_note(done)
            up.found += done.found
            self._speculate()
            return
        runs = self._result(done)[0]
        part = done.part()
        if up.sweep:
            if not part:
                for name, files, notes in runs:
                    self.notes.extend(notes)
                    self._emit(name, files)
                up.found += len(runs)
        else:
            up.files.extend(done.files)
            if not part and runs:
                up.held.extend(runs)
                up.found += len(runs)
        self._speculate()

    def _contribution(self, at: int) -> int:
        """At least how many runs the open folder `at` of the stack gives its parent if the parent is a sweep."""
        folder = self.stack[at]
        if not folder.evidence() or folder.part():
            return 0
        if folder.one_run():
            return 1
        below = self._contribution(at + 1) if at + 1 < len(self.stack) else 0
        return max(1, folder.found + below)

    def _speculate(self) -> None:
        """Open folders taken to be sweeps, from the root down, while each holds two runs or more (at least, by
        what is listed so far) and nothing that makes it one run; a new one hands on the runs it held."""
        if not self.speculate:
            return
        for at, folder in enumerate(self.stack):
            if folder.sweep:
                continue
            if folder.in_part or folder.one_run() or (at and (folder.part() or not self.stack[at - 1].sweep)):
                return
            below = self._contribution(at + 1) if at + 1 < len(self.stack) else 0
            if folder.found + below < 2:
                return
            folder.sweep = True
            for name, files, notes in folder.held:
                self.notes.extend(notes)
                self._emit(name, files)
            folder.held, folder.files = [], []
