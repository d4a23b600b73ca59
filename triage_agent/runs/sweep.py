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
from dataclasses import dataclass, field
from pathlib import Path

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
