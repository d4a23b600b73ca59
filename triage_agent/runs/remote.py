"""Runs on object storage (`s3://`, `gs://`, `hf://`, any installed fsspec protocol).

A remote run or sweep is mirrored into `$XDG_CACHE_HOME/triage/fs/<protocol>/<path>` and read
from there by the same code as a local folder. The listing is bounded (depth, file count); only
files discovery may read are fetched (no checkpoints, tokenizers or images); each file is kept
with its ETag (or mtime) and size beside it, so a second pass over the same sweep fetches only
what changed. Credentials and endpoints come from each file system's own chain (AWS env or
profile and `AWS_ENDPOINT_URL` for S3-compatible stores, GCP ADC, the HF token) and are never
printed or saved.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from triage_agent.errors import BadInput, TriageError
from triage_agent.runs import discover as disc
from triage_agent.runs import stores
from triage_agent.runs.sweep import SPLIT_DEPTH
from triage_agent.safe import bounded, redact

MAX_FILES = 10_000  # files listed under one remote folder; past this the listing stops and says so (fetched one
# by one, an HTTP index of 300,000 links took ~55 minutes; a sweep of 1,000 runs of 10 files fits)
MIRROR_SECONDS = 1800.0  # fetching one mirror, all objects; past it the rest is not fetched (said)
MIRROR_BYTES = 64 << 30  # bytes fetched for one mirror; past it the rest is not fetched (said)
MAX_FILE_BYTES = 8 << 30  # a bigger object is not fetched (a week of console output is ~1-5 GB)
UNSIZED_BYTES = 256 << 20  # an object whose size is not listed (an HTTP body without a length) is cut here
MAX_FOLDERS = 20_000  # folders walked under one remote folder (a server can list new folders forever)
LIST_SECONDS = 300.0  # the whole listing
SWEEP_FILES = 1_000_000  # files listed for a sweep split in the driver (names and versions only, ~200 bytes each:
# 10,000 runs of 20 files are 200,000); each run is then fetched by its worker, within MAX_FILES of its own
ONE_REQUEST_BYTES = 16 << 20  # an object up to this size (listed) is fetched in one request, held in memory once
FETCH_SECONDS = 900.0  # one object (8 GB at 10 MB/s); a stalled read fails sooner, at the store's read timeout
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://(.*)$")
# never needed by discovery: weights, optimizer states, tokenizers, media, archives
SKIP_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".npy", ".npz", ".arrow", ".gguf", ".onnx",
                 ".h5", ".msgpack", ".model", ".tar", ".gz", ".zip", ".zst", ".png", ".jpg", ".jpeg", ".gif",
                 ".mp4", ".html", ".pkl", ".pickle", ".distcp", ".db", ".sqlite")
SKIP_NAMES = ("tokenizer.json", "vocab.json", "merges.txt", "tokenizer_config.json", "special_tokens_map.json",
              "added_tokens.json", "generation_config.json", "model.safetensors.index.json", "latest")
# stores with one flat, paged listing of every key below a prefix (S3: 1,000 keys a request); the others are
# walked folder by folder, within MAX_FOLDERS
FLAT_LISTING = ("s3", "s3a", "gs", "gcs")
EXTRAS = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "hf": "hf", "http": "http", "https": "http"}


@dataclass
class Mirror:
    url: str
    path: Path  # the local copy discovery reads
    fetched: int = 0
    fetched_bytes: int = 0
    cached: int = 0
    notes: list[str] = field(default_factory=list)
    one_request: bool = False  # a small object of a listed size is one GET (no HEAD first): S3, GCS

    def summary(self) -> list[str]:
        """What the user is told about the fetch: its notes, then what was fetched and what was cached."""
        return [*self.notes, f"fetched {self.fetched} file(s) ({self.fetched_bytes / 1e6:.1f} MB) from {self.url}, "
                f"{self.cached} from the cache"]


def is_remote(location: str) -> bool:
    m = _URL.match(location)
    return m is not None and m.group(1).lower() != "file"


def cache_root(env: dict[str, str] | None = None) -> Path:
    env = dict(os.environ) if env is None else env
    base = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME") or Path.home()) / ".cache")
    return Path(base) / "triage" / "fs"


def wanted(rel: str, size: int | None) -> bool:
    """Whether discovery could read this file (by its name and size only: nothing is fetched to decide)."""
    parts = PurePosixPath(rel).parts
    name = parts[-1].lower()
    if any(p.startswith(".") and p != ".hydra" for p in parts) or name in SKIP_NAMES:
        return False
    if name.endswith(SKIP_SUFFIXES) or (size is not None and size > MAX_FILE_BYTES):
        return False
    return len(parts) <= SPLIT_DEPTH + disc.MAX_DEPTH + 1


def _safe_parts(rel: str) -> tuple[str, ...] | None:
    """A remote key as local path parts, or None when it could leave the mirror (`..`, empty, NUL). A secret
    in a name (`run_hf_...log`) is masked: the cache never holds it, not even as a file name."""
    parts = tuple(rel.split("/"))
    if any(p in ("", ".", "..") or "\x00" in p or "\\" in p or len(p) > 255 for p in parts):
        return None
    return tuple(redact.file_name(p, 255) for p in parts)


def _version(info: dict[str, Any]) -> str:
    for key in ("ETag", "etag", "md5Hash", "blob_id", "LastModified", "mtime", "updated", "last_modified"):
        if info.get(key) is not None:
            return f"{key}={info[key]}"
    return ""


def _short(exc: BaseException) -> str:
    return stores.short(exc)


def _listing(fs: Any, root: str, notes: list[str], max_files: int = MAX_FILES) -> tuple[dict[str, dict[str, Any]], bool]:
    """rel path -> info for the files below `root`, walked folder by folder, bounded in depth, folders and files.
    Also says if it was cut."""
    out: dict[str, dict[str, Any]] = {}
    depth_limit = SPLIT_DEPTH + disc.MAX_DEPTH
    with contextlib.suppress(Exception):  # a cached listing would hide what was written since (watch re-lists),
        fs.invalidate_cache()  # and one a flat listing left is not a walk's (it has no folder for a `//` key)
    walk = bounded.entries(fs.walk(root, detail=True, maxdepth=depth_limit + 1), MAX_FOLDERS, LIST_SECONDS)
    while True:
        try:
            dirpath, dirs, files = next(walk)
        except StopIteration:
            return out, False
        except bounded.Refused as exc:  # a server listing folders forever: what was listed so far is read
            notes.append(f"the remote listing stopped ({exc.strerror}): the rest was not fetched")
            return out, True
        for name in [d for d in dirs if d.startswith(".") and d != ".hydra"]:
            del dirs[name]  # hidden folders are never read (and never listed further)
        for name, info in sorted(files.items()):
            # the object's own key (a key with `//` is listed under an empty name); `//` collapses to `/` here
            key = str(info.get("name") or (str(dirpath).rstrip("/") + "/" + name))
            got = _accept(key, info, root, name, out, notes)
            if got is None:
                continue
            if len(out) >= max_files:
                notes.append(f"more than {max_files} files under the remote folder: the rest were not fetched")
                return out, True
            out[got[0]] = got[1]


def _accept(key: str, info: dict[str, Any], root: str, name: str, out: dict[str, dict[str, Any]],
            notes: list[str]) -> tuple[str, dict[str, Any]] | None:
    """One listed object's path below `root` and its slim info (name, size, version), when discovery could read it
    and `out` has no file of that path yet."""
    if info.get("type") == "directory":  # S3 lists the prefix of a `a//b` key as a nameless folder
        notes.append(f"skipped the keys under {key[-120:]!r}: an empty folder name ('//') cannot be read")
        return None
    rel = "/".join(p for p in (key[len(root) + 1:] if key.startswith(root + "/") else name).split("/") if p)
    if not rel or rel in out:
        notes.append(f"skipped the key {key[-120:]!r}: no name of its own, or the same as another's")
        return None
    size = info.get("size")
    if not wanted(rel, size if isinstance(size, int) else None):
        return None
    version = _version(info)  # the object's name, size and version: all a fetch and a cache key need
    return rel, {"name": key, "size": size if isinstance(size, int) else None,
                 **({version.split("=", 1)[0]: version.split("=", 1)[1]} if version else {})}


def _open(url: str, env: dict[str, str] | None) -> tuple[Any, str, Mirror]:
    """The file system and path of a remote folder, and its (empty) mirror in the cache."""
    m = _URL.match(url)
    if m is None or not m.group(2).strip("/"):
        raise BadInput(f"{stores.shown(url)}: give a folder after the protocol, e.g. s3://bucket/runs/")
    protocol, url = stores.check(url), f"{m.group(1)}://{m.group(2).rstrip('/')}"
    fs, root = stores.open_fs(url, EXTRAS)
    # the cache is named by the URL without its credentials (`user:pw@` never becomes a folder name)
    plain = _URL.match(stores.without_credentials(url)).group(2)  # type: ignore[union-attr]
    local = cache_root(env) / protocol / Path(*[_folder_name(p) for p in plain.split("/") if p not in ("", ".", "..")])
    return fs, root, Mirror(stores.shown(url), local, one_request=protocol in FLAT_LISTING)


def open_store(url: str) -> None:
    """Import and open the file system of `url` (fsspec keeps the instance): a worker does it once, before the
    budget of its first run starts (the client's imports are ours, not the run's)."""
    _open(url, None)


def _folder_listing(fs: Any, root: str, res: Mirror) -> tuple[dict[str, dict[str, Any]], bool]:
    try:
        if not fs.isdir(root):
            if fs.isfile(root):
                raise BadInput(f"{res.url}: not a folder (give the run folder)")
            raise BadInput(f"{res.url}: no such folder")
        m = _URL.match(res.url)
        if m is not None and m.group(1).lower() in FLAT_LISTING:
            return _flat_listing(fs, root, res.notes)
        return _listing(fs, root, res.notes, SWEEP_FILES)
    except (TriageError, MemoryError):  # a MemoryError is the run's budget (or our bug), never "cannot list"
        raise
    except Exception as exc:  # each fsspec back end raises its own kinds: all are "cannot list"
        raise BadInput(f"{res.url}: cannot list ({_short(exc)})") from None


@dataclass
class Listing:
    """A remote sweep's files by name, size and version (nothing fetched): what the driver splits into runs."""

    url: str  # as shown (no credentials)
    path: Path  # where its mirror would be in the cache (the split's root; nothing is written there by the listing)
    files: dict[str, dict[str, Any]]  # path below the URL -> {"name": key, "size": ..., version key: value}
    notes: list[str] = field(default_factory=list)


def list_sweep(url: str, env: dict[str, str] | None = None) -> Listing:
    """List a remote folder in one flat, paged listing (S3: 1,000 keys a request, never one request per folder),
    bounded in files (SWEEP_FILES) and time (LIST_SECONDS); nothing is fetched."""
    fs, root, res = _open(url, env)
    files, _ = _folder_listing(fs, root, res)
    return Listing(res.url, res.path, files, res.notes)


def by_run(files: dict[str, dict[str, Any]], runs: list[str]) -> dict[str, dict[str, dict[str, Any]]]:
    """A listing's files grouped by the run each is in (a run's own paths, below its folder); files of no run
    (a sweep's own config) are left out, as a local sweep leaves them."""
    names = set(runs)
    out: dict[str, dict[str, dict[str, Any]]] = {name: {} for name in runs}
    for rel, info in files.items():
        if "." in names:
            out["."][rel] = info
            continue
        parts = rel.split("/")
        for n in range(1, len(parts)):
            run = "/".join(parts[:n])
            if run in names:
                out[run]["/".join(parts[n:])] = info
                break
    return out


def fetch_files(url: str, files: dict[str, dict[str, Any]], progress: Callable[[str, int, int], None] | None = None,
                env: dict[str, str] | None = None) -> Mirror:
    """Fetch the listed files of one remote run (as `list_sweep` gave them, below `url`) into the cache: a sweep's
    worker fetches its own runs, the driver only lists. At most MAX_FILES of them (said)."""
    fs, _, res = _open(url, env)
    cut = len(files) > MAX_FILES
    if cut:
        res.notes.append(f"more than {MAX_FILES} files under the remote folder: the rest were not fetched")
        files = dict(list(files.items())[:MAX_FILES])
    _fetch(fs, res, files, cut, progress)
    return res


def _flat_entries(fs: Any, root: str, take: Callable[[str, dict[str, Any]], bool],
                  room: Callable[[], bool] | None = None) -> None:
    """`take(key, info)` for every object below `root`, in key order, until it says stop. S3 (s3fs): each object as
    its page arrives, so the driver holds one page of the store's full info (~1 KB an object) at a time; `fs.find`
    held every object's (20,000 objects: ~35 MB at its peak, tools/bench_fleet.py) before one was made slim. Other
    stores: their `find`, whole. `room()` False: the taker's consumer is behind; the listing waits for it (on
    fsspec's loop without blocking it: a worker thread of this process may be fetching on that loop)."""
    iterdir, split_path = getattr(fs, "_iterdir", None), getattr(fs, "split_path", None)
    if iterdir is None or split_path is None or getattr(fs, "version_aware", False):
        found = fs.find(root, withdirs=False, detail=True)
        for key in sorted(found):
            if take(key, found.pop(key)):
                return
        return
    import asyncio

    from fsspec.asyn import sync

    bucket, key, _ = split_path(root)

    async def pages() -> None:  # on fsspec's loop; taking an object is a few microseconds of CPU, no I/O
        async for info in iterdir(bucket, delimiter="", prefix=key.strip("/") + "/" if key else ""):
            if take(str(info.get("name") or info.get("Key")), info):
                return
            while room is not None and not room():
                await asyncio.sleep(0.005)

    sync(fs.loop, pages)


def _flat_taker(root: str, notes: list[str], out: dict[str, dict[str, Any]] | None,
                put: Callable[[str, dict[str, Any]], None]) -> Callable[[str, dict[str, Any]], bool]:
    """`take(key, info)` for `_flat_entries`: one object, when discovery could read it, to `put(rel, slim info)`
    (`_accept`; `out`, when given, the files so far, for a second key of one path); True when the listing is cut
    there (SWEEP_FILES)."""
    depth = SPLIT_DEPTH + disc.MAX_DEPTH + 1
    taken = [0]

    def take(listed: str, info: dict[str, Any]) -> bool:
        key = str(info.get("name") or listed)
        rel = key[len(root) + 1:] if key.startswith(root + "/") else ""
        parts = rel.split("/")
        if any(p.startswith(".") and p != ".hydra" for p in parts[:-1]) or len(parts) > depth:
            return False  # hidden folders are never read; deeper than discovery goes
        if "" in parts[:-1]:  # `a//b`: what a walk lists as a nameless folder
            empty = f"skipped the keys under {key[:len(root) + 1 + rel.index('//')][-120:]!r}: an empty folder " \
                    "name ('//') cannot be read"
            if empty not in notes:
                notes.append(empty)
            return False
        accepted = _accept(key, info, root, parts[-1], {} if out is None else out, notes)
        if accepted is None:
            return False
        if taken[0] >= SWEEP_FILES:
            notes.append(f"more than {SWEEP_FILES:,} files under the remote folder: the rest were not read")
            return True
        taken[0] += 1
        put(*accepted)
        return False

    return take


def _flat_listing(fs: Any, root: str, notes: list[str]) -> tuple[dict[str, dict[str, Any]], bool]:
    """rel path -> slim info below `root` from one flat, paged listing where the store has one (`_flat_entries`),
    in a thread given LIST_SECONDS: past it the sweep is refused (a listing cut short would miss runs)."""
    out: dict[str, dict[str, Any]] = {}
    got: list[Exception | None] = []
    take = _flat_taker(root, notes, out, out.__setitem__)
    cut: list[bool] = []

    def taken(key: str, info: dict[str, Any]) -> bool:
        if take(key, info):
            cut.append(True)
            return True
        return False

    def find() -> None:
        try:
            _flat_entries(fs, root, taken)
            got.append(None)
        except Exception as exc:  # noqa: BLE001 - said by the caller, in one line
            got.append(exc)

    with contextlib.suppress(Exception):  # a cached listing would hide what was written since
        fs.invalidate_cache(root)
    worker = threading.Thread(target=find, name="triage-list", daemon=True)
    worker.start()
    worker.join(LIST_SECONDS)
    if not got:
        raise BadInput(f"the listing took more than {LIST_SECONDS:g} s")
    with contextlib.suppress(Exception):  # the listings it cached are not a walk's: a later walk lists afresh
        fs.invalidate_cache()
    if got[0] is not None:
        raise got[0]
    return out, bool(cut)


STREAM_AHEAD = 4096  # listed objects waiting for the sweep's split at most (four of S3's pages): the listing waits


@dataclass
class Streamed:
    """A remote sweep's listing as it streams: its files (path below the URL, slim info) in key order, nothing
    fetched and nothing held but a few pages (STREAM_AHEAD). `notes` is complete once `entries` has ended."""

    url: str  # as shown (no credentials)
    path: Path  # where its mirror would be in the cache
    entries: Iterator[tuple[str, dict[str, Any]]]
    notes: list[str] = field(default_factory=list)


def stream_sweep(url: str, env: dict[str, str] | None = None) -> Streamed:
    """List a remote folder as `list_sweep` does, but hand its files on as they are listed (a flat listing is in
    key order); a store without one is walked whole, then handed on sorted. The store's own time is bounded by
    LIST_SECONDS (the time the sweep waits on it, not the time its runs take meanwhile)."""
    fs, root, res = _open(url, env)
    try:
        if not fs.isdir(root):
            if fs.isfile(root):
                raise BadInput(f"{res.url}: not a folder (give the run folder)")
            raise BadInput(f"{res.url}: no such folder")
    except TriageError:
        raise
    except Exception as exc:  # noqa: BLE001 - each fsspec back end raises its own kinds: all are "cannot list"
        raise BadInput(f"{res.url}: cannot list ({_short(exc)})") from None
    m = _URL.match(res.url)
    flat = m is not None and m.group(1).lower() in FLAT_LISTING
    return Streamed(res.url, res.path, _streamed(fs, root, res, flat), res.notes)


def _streamed(fs: Any, root: str, res: Mirror, flat: bool) -> Iterator[tuple[str, dict[str, Any]]]:
    if not flat:
        try:
            files, _ = _listing(fs, root, res.notes, SWEEP_FILES)
        except (TriageError, MemoryError):
            raise
        except Exception as exc:  # noqa: BLE001
            raise BadInput(f"{res.url}: cannot list ({_short(exc)})") from None
        for rel in sorted(files):
            yield rel, files.pop(rel)
        return
    import queue

    ahead: queue.Queue[tuple[str, dict[str, Any]] | BaseException | None] = queue.Queue()
    stop = threading.Event()
    take = _flat_taker(root, res.notes, None, lambda rel, info: ahead.put((rel, info)))

    def listing() -> None:
        try:
            _flat_entries(fs, root, lambda k, i: stop.is_set() or take(k, i),
                          lambda: stop.is_set() or ahead.qsize() < STREAM_AHEAD)
            ahead.put(None)
        except Exception as exc:  # noqa: BLE001 - said by the consumer, in one line
            ahead.put(exc)

    with contextlib.suppress(Exception):  # a cached listing would hide what was written since
        fs.invalidate_cache(root)
    worker = threading.Thread(target=listing, name="triage-list", daemon=True)
    worker.start()
    waited = 0.0
    try:
        while True:
            t = time.monotonic()
            try:
                got = ahead.get(timeout=max(0.001, LIST_SECONDS - waited))
            except queue.Empty:
                raise BadInput(f"the listing took more than {LIST_SECONDS:g} s") from None
            waited += time.monotonic() - t
            if got is None:
                break
            if isinstance(got, TriageError | MemoryError):
                raise got
            if isinstance(got, BaseException):
                raise BadInput(f"{res.url}: cannot list ({_short(got)})") from None
            yield got
    finally:
        stop.set()  # a consumer that stopped early (an error, a split taken again): the listing ends at its page
        with contextlib.suppress(Exception):  # the listings it cached are not a walk's: a later walk lists afresh
            fs.invalidate_cache()


def _fetch_small(fs: Any, name: str, size: int, tmp: Path, what: str) -> int:
    """A small object of a listed size in one ranged GET (a byte past the size asked for: an object grown since
    the listing is refused, as `bounded.copy` refuses it); fs.open would ask its size first (a HEAD a file)."""
    data = fs.cat_file(name, start=0, end=size + 1)
    if len(data) > size:
        raise bounded.Refused("", f"{what}: larger than the {size:,} bytes listed")
    bounded.write_new(tmp, data)
    return len(data)


class _Fetched:
    """Bytes fetched by this process (a sweep's driver says how many passed through it: none, with Ray), from
    any of its threads (a batch's runs are fetched by several)."""

    bytes = 0
    lock = threading.Lock()


def fetched_here() -> int:
    return _Fetched.bytes


def _fetch(fs: Any, res: Mirror, files: dict[str, dict[str, Any]], cut: bool,
           progress: Callable[[str, int, int], None] | None) -> None:
    local = res.path
    try:
        _clear(local, local)
        local.mkdir(mode=0o700, parents=True, exist_ok=True)  # the copies are the user's: theirs alone
    except OSError as exc:
        raise BadInput(f"{local}: cannot write the cache ({exc.strerror})") from None
    keep: set[Path] = set()
    safe = {rel: _safe_parts(rel) for rel in files}
    folders = {"/".join(p[:n]) for p in safe.values() if p for n in range(1, len(p))}
    deadline = time.monotonic() + MIRROR_SECONDS
    for i, (rel, info) in enumerate(files.items()):
        if time.monotonic() > deadline or res.fetched_bytes > MIRROR_BYTES:
            why = f"took more than {MIRROR_SECONDS:g} s" if time.monotonic() > deadline else \
                f"fetched more than {MIRROR_BYTES / 1e9:g} GB"
            res.notes.append(f"{res.url}: the mirror {why}: {len(files) - i:,} of its {len(files):,} files were not "
                             "fetched")
            cut = True
            break
        parts = safe[rel]
        if parts is None:
            res.notes.append(f"{res.url}: skipped a key that is not a safe file name: {rel[:120]!r}")
            continue
        if "/".join(parts) in folders:
            res.notes.append(f"{res.url}/{rel}: both an object and a folder; the object was skipped")
            continue
        if progress:
            progress(rel, i, len(files))
        keep.update(_fetch_one(fs, res, local.joinpath(*parts), rel, info))
    if not cut:  # a file deleted remotely must not linger in the mirror (only our own copies are removed)
        for path in list(local.rglob("*")):
            if path.is_file() and path not in keep:
                path.unlink(missing_ok=True)


def _fetch_one(fs: Any, res: Mirror, target: Path, rel: str, info: dict[str, Any]) -> tuple[Path, Path]:
    """One object into `target` unless the copy there has its version; (target, stamp): the files to keep."""
    stamp = target.with_name(f".{target.name}.triage-version")
    version = json.dumps({"v": _version(info), "size": info.get("size")}, sort_keys=True)
    if _version(info) and target.is_file() and _read(stamp) == version:
        res.cached += 1
        return target, stamp
    tmp = target.with_name(f".{target.name}.triage-part")
    size = info.get("size")
    try:
        _clear(target, res.path)
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if res.one_request and isinstance(size, int) and 0 < size <= ONE_REQUEST_BYTES:
            got = _fetch_small(fs, info["name"], size, tmp, f"{res.url}/{rel}")
        else:
            with fs.open(info["name"], "rb") as src:  # an object larger than it said, or endless, is refused
                got = bounded.copy_to(src, tmp, size if isinstance(size, int) and size >= 0 else UNSIZED_BYTES,
                                      FETCH_SECONDS, f"{res.url}/{rel}")
        os.replace(tmp, target)
    except MemoryError:
        raise  # the run's budget (or our bug), never "not fetched"
    except Exception as exc:  # one unreadable object is reported; the others are still read
        res.notes.append(f"{res.url}/{rel}: not fetched ({_short(exc)})")
        return target, stamp
    finally:
        tmp.unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # no stamp: the object is fetched again next time
        bounded.write_new(stamp, version.encode())
    res.fetched += 1
    res.fetched_bytes += got
    with _Fetched.lock:
        _Fetched.bytes += got
    return target, stamp


def _folder_name(part: str) -> str:
    """A URL's path component as a cache folder name (no secret, separator, control character or over-long
    name)."""
    return redact.file_name(part, 200)


def _clear(target: Path, top: Path) -> None:
    """Make room for `target` at or below `top` in our own cache: a folder left where a file goes, or a file left
    where one of its folders goes (an earlier listing had an object and a folder of one name), is removed."""
    if target != top and target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    for up in [top] if target == top else [p for p in target.parents if p == top or top in p.parents]:
        if up.is_file() or up.is_symlink():
            up.unlink()


def _read(path: Path) -> str | None:
    try:
        return bounded.read_text(path, bounded.SMALL_BYTES)
    except OSError:
        return None
