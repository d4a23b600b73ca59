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
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from triage_agent import bounded, redact
from triage_agent.errors import BadInput, TriageError
from triage_agent.runs import discover as disc
from triage_agent.runs import stores
from triage_agent.runs.sweep import SPLIT_DEPTH

MAX_FILES = 10_000  # files listed under one remote folder; past this the listing stops and says so (fetched one
# by one, an HTTP index of 300,000 links took ~55 minutes; a sweep of 1,000 runs of 10 files fits)
MIRROR_SECONDS = 1800.0  # fetching one mirror, all objects; past it the rest is not fetched (said)
MIRROR_BYTES = 64 << 30  # bytes fetched for one mirror; past it the rest is not fetched (said)
MAX_FILE_BYTES = 8 << 30  # a bigger object is not fetched (a week of console output is ~1-5 GB)
UNSIZED_BYTES = 256 << 20  # an object whose size is not listed (an HTTP body without a length) is cut here
MAX_FOLDERS = 20_000  # folders walked under one remote folder (a server can list new folders forever)
LIST_SECONDS = 300.0  # the whole listing
FETCH_SECONDS = 900.0  # one object (8 GB at 10 MB/s); a stalled read fails sooner, at the store's read timeout
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://(.*)$")
# never needed by discovery: weights, optimizer states, tokenizers, media, archives
SKIP_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".npy", ".npz", ".arrow", ".gguf", ".onnx",
                 ".h5", ".msgpack", ".model", ".tar", ".gz", ".zip", ".zst", ".png", ".jpg", ".jpeg", ".gif",
                 ".mp4", ".html", ".pkl", ".pickle", ".distcp", ".db", ".sqlite")
SKIP_NAMES = ("tokenizer.json", "vocab.json", "merges.txt", "tokenizer_config.json", "special_tokens_map.json",
              "added_tokens.json", "generation_config.json", "model.safetensors.index.json", "latest")
EXTRAS = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "hf": "hf", "http": "http", "https": "http"}


@dataclass
class Mirror:
    url: str
    path: Path  # the local copy discovery reads
    fetched: int = 0
    fetched_bytes: int = 0
    cached: int = 0
    notes: list[str] = field(default_factory=list)

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


def _listing(fs: Any, root: str, notes: list[str]) -> tuple[dict[str, dict[str, Any]], bool]:
    """rel path -> info for the files below `root`, bounded in depth and count. Also says if it was cut."""
    out: dict[str, dict[str, Any]] = {}
    depth_limit = SPLIT_DEPTH + disc.MAX_DEPTH
    with contextlib.suppress(Exception):  # a cached listing would hide what was written since (watch re-lists)
        fs.invalidate_cache(root)
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
            if info.get("type") == "directory":  # S3 lists the prefix of a `a//b` key as a nameless folder
                notes.append(f"skipped the keys under {key[-120:]!r}: an empty folder name ('//') cannot be read")
                continue
            rel = "/".join(p for p in (key[len(root) + 1:] if key.startswith(root + "/") else name).split("/") if p)
            if not rel or rel in out:
                notes.append(f"skipped the key {key[-120:]!r}: no name of its own, or the same as another's")
                continue
            info = {**info, "name": key}
            size = info.get("size")
            if not wanted(rel, size if isinstance(size, int) else None):
                continue
            if len(out) >= MAX_FILES:
                notes.append(f"more than {MAX_FILES} files under the remote folder: the rest were not fetched")
                return out, True
            out[rel] = info


def mirror(url: str, progress: Callable[[str, int, int], None] | None = None,
           env: dict[str, str] | None = None) -> Mirror:
    """Fetch what discovery needs of a remote run (or sweep) into the cache; return its local copy."""
    m = _URL.match(url)
    if m is None or not m.group(2).strip("/"):
        raise BadInput(f"{stores.shown(url)}: give a folder after the protocol, e.g. s3://bucket/runs/")
    protocol, url = stores.check(url), f"{m.group(1)}://{m.group(2).rstrip('/')}"
    fs, root = stores.open_fs(url, EXTRAS)
    # the cache is named by the URL without its credentials (`user:pw@` never becomes a folder name)
    plain = _URL.match(stores.without_credentials(url)).group(2)  # type: ignore[union-attr]
    local = cache_root(env) / protocol / Path(*[_folder_name(p) for p in plain.split("/") if p not in ("", ".", "..")])
    res = Mirror(stores.shown(url), local)
    try:
        if not fs.isdir(root):
            if fs.isfile(root):
                raise BadInput(f"{res.url}: not a folder (give the run folder)")
            raise BadInput(f"{res.url}: no such folder")
        files, cut = _listing(fs, root, res.notes)
    except (TriageError, MemoryError):  # a MemoryError is the run's budget (or our bug), never "cannot list"
        raise
    except Exception as exc:  # each fsspec back end raises its own kinds: all are "cannot list"
        raise BadInput(f"{res.url}: cannot list ({_short(exc)})") from None
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
        target = local.joinpath(*parts)
        stamp = target.with_name(f".{target.name}.triage-version")
        version = json.dumps({"v": _version(info), "size": info.get("size")}, sort_keys=True)
        keep.update((target, stamp))
        if progress:
            progress(rel, i, len(files))
        if _version(info) and target.is_file() and _read(stamp) == version:
            res.cached += 1
            continue
        tmp = target.with_name(f".{target.name}.triage-part")
        size = info.get("size")
        try:
            _clear(target, local)
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            with fs.open(info["name"], "rb") as src:  # an object larger than it said, or endless, is refused
                got = bounded.copy_to(src, tmp, size if isinstance(size, int) and size >= 0 else UNSIZED_BYTES,
                                      FETCH_SECONDS, f"{res.url}/{rel}")
            os.replace(tmp, target)
        except MemoryError:
            raise  # the run's budget (or our bug), never "not fetched"
        except Exception as exc:  # one unreadable object is reported; the others are still read
            res.notes.append(f"{res.url}/{rel}: not fetched ({_short(exc)})")
            continue
        finally:
            tmp.unlink(missing_ok=True)
        with contextlib.suppress(OSError):  # no stamp: the object is fetched again next time
            bounded.write_new(stamp, version.encode())
        res.fetched += 1
        res.fetched_bytes += got
    if not cut:  # a file deleted remotely must not linger in the mirror (only our own copies are removed)
        for path in list(local.rglob("*")):
            if path.is_file() and path not in keep:
                path.unlink(missing_ok=True)
    return res


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
