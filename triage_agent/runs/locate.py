"""What the user typed -> the run, or the runs, it names: worked out here, once.

A run is given as a folder, as one file (read in place), or as a remote URL (`s3://`, `gs://`, `hf://`, any
installed fsspec protocol) of either; a folder of several runs is a sweep, and `--run NAME` picks one of them.
`locate` tells these apart and nothing else does: the commands take what it returns, and `load_run` reads a
`Located` (given a path, it locates it first). A remote folder is listed once (one flat, paged listing where the
store has one) and split by names before anything is fetched: one run is fetched here, a sweep's runs by the
workers that read them.
"""

from __future__ import annotations

import stat as statmod
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from triage_agent.errors import BadInput
from triage_agent.runs import remote
from triage_agent.runs.sweep import Files, Misspeculated, Split, StreamSplit, split_listing, split_runs

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class Located:
    """One run: the local folder it is read from (a remote run's copy in the cache), the one file given as the run
    (read alone, nothing else of its folder), how the user named it, and what fetching it said."""

    root: Path
    display: str | None = None  # the path or URL as given, when it is not `root` (a file, a remote run)
    single: str | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Several:
    """A folder of runs (a sweep), local or remote, split into its runs; nothing of them is read yet. A remote one
    carries its URL as shown (no credentials), the URL its runs are fetched from, and each run's listed files."""

    split: Split
    typed: str
    display: str | None = None
    url: str | None = None
    files: dict[str, dict[str, dict[str, Any]]] | None = None
    notes: tuple[str, ...] = ()
    stream: RunStream | None = None  # a remote sweep's runs as its listing streams (then `split` has none)

    @property
    def several(self) -> bool:
        return self.stream is not None or self.split.several

    @property
    def where(self) -> str:
        return self.display or self.typed


# what a command is given: a located run, or a path or URL `load_run` locates itself
Where = Located | str | Path


class MultiRunError(BadInput):
    """The folder holds several runs: commands about one run name one instead of merging them."""

    def __init__(self, where: str, split: Split) -> None:
        names = [r.name for r in split.runs]
        shown = ", ".join(names[:8]) + (f" (+{len(names) - 8} more)" if len(names) > 8 else "")
        super().__init__(f"{where} holds {len(names)} runs, not one: {shown}; name one (e.g. "
                         f"{where.rstrip('/')}/{names[0]}), or see them all with `triage inspect {where}`")
        self.split = split


def locate(typed: str | Path, pick: str | None = None, progress: Progress | None = None, *,
           as_sweep: bool = False, stream: bool = False) -> Located | Several:
    """The run `typed` names (with `pick`, the run of that name in the folder), or the runs of a sweep folder.
    `as_sweep`: a folder of one run is a sweep of one (a results table of one row). A missing path is a one-line
    error; any other trouble with a path (not a folder, unreadable) is said by the loader, which reads it."""
    location = str(typed)
    if remote.is_remote(location):
        if stream and pick is None:
            return _streamed(location, progress, as_sweep)
        return _remote(location, pick, progress, as_sweep)
    root = Path(typed)
    try:
        mode = root.lstat().st_mode
    except FileNotFoundError:
        raise BadInput(f"{root}: no such folder") from None
    except OSError:
        return Located(root)
    if statmod.S_ISREG(mode):  # a file, not a link to one (a link given as the run is refused as "not a folder")
        return Located(root.parent, display=location, single=root.name)
    if not _is_dir(root):
        return Located(root)
    split = split_runs(root)
    if pick is not None:
        return Located(split.require(pick, location).path)
    if split.several or as_sweep:
        return Several(split, location)
    return Located(root)


def one_run(typed: Where, pick: str | None = None, progress: Progress | None = None,
            refuse: str | None = None) -> Located:
    """The one run `typed` names. A folder of several is refused before any of them is read: with the reason
    `refuse` when given, else by `MultiRunError`, which names them."""
    if isinstance(typed, Located):
        return typed
    found = locate(typed, pick, progress)
    if isinstance(found, Several):
        if refuse is not None:
            raise BadInput(f"{found.where} holds {len(found.split.runs)} runs: {refuse}")
        raise MultiRunError(found.where, found.split)
    return found


def _remote(location: str, pick: str | None, progress: Progress | None, as_sweep: bool) -> Located | Several:
    """A remote run or sweep: listed in one flat listing and split by names; one run is fetched here, from the
    listing it has; a sweep's runs are left to the workers, with their files' names (each fetches its own)."""
    listing = remote.list_sweep(location)
    base = location.rstrip("/")
    split = split_listing(listing.path, list(listing.files))
    if pick is None and (split.several or as_sweep):
        return Several(split, location, listing.url, base, remote.by_run(listing.files, [r.name for r in split.runs]),
                       tuple(listing.notes))
    name = split.require(pick, listing.url).name if pick is not None else "."  # one run: the folder, as locally
    suffix = "" if name == "." else "/" + name
    m = remote.fetch_files(base + suffix, remote.by_run(listing.files, [name])[name], progress)
    return Located(m.path, display=listing.url + suffix, notes=(*listing.notes, *m.summary()))


class RunStream:
    """A remote sweep's runs, each with its files, as its listing streams (`StreamSplit`): nothing of the listing
    held. Should a file listed late undo the split's speculation (`Misspeculated`), `again()` lists anew and
    splits the whole listing (holding it: the rare case)."""

    def __init__(self, location: str) -> None:
        self.location = location
        self.speculate = True
        self.notes: list[str] = []
        self._start()

    def _start(self) -> None:
        listed = remote.stream_sweep(self.location)
        self.url, self.path = listed.url, listed.path
        self.buffer: deque[tuple[str, Files]] = deque()
        self.gen = self._runs(listed)

    def _runs(self, listed: remote.Streamed) -> Iterator[tuple[str, Files]]:
        out: deque[tuple[str, Files]] = deque()
        split = StreamSplit(listed.path, lambda n, f: out.append((n, f)), self.speculate)
        for rel, info in listed.entries:
            split.add(rel, info)
            while out:
                yield out.popleft()
        notes = split.end()
        self.notes = [*listed.notes, *notes]
        while out:
            yield out.popleft()

    def peek(self, n: int) -> int:
        """At least `n` runs taken ahead (fewer when the sweep has fewer); how many."""
        while len(self.buffer) < n:
            try:
                self.buffer.append(next(self.gen))
            except StopIteration:
                break
        return len(self.buffer)

    def again(self) -> None:
        self.speculate = False
        self._start()

    def __iter__(self) -> Iterator[tuple[str, Files]]:
        while self.buffer:
            yield self.buffer.popleft()
        yield from self.gen


def _streamed(location: str, progress: Progress | None, as_sweep: bool) -> Located | Several:
    """A remote folder whose runs stream from its listing: a sweep (two runs or more, or `as_sweep`) is handed on
    as its stream; one run is fetched here."""
    runs = RunStream(location)
    try:
        several = runs.peek(2)
    except Misspeculated:
        runs.again()
        several = runs.peek(2)
    base = location.rstrip("/")
    if several >= 2 or as_sweep:
        return Several(Split(runs.path, []), location, runs.url, base, stream=runs)
    name, files = runs.buffer.popleft() if runs.buffer else (".", {})
    m = remote.fetch_files(base, files, progress)
    return Located(m.path, display=runs.url, notes=(*runs.notes, *m.summary()))


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False
