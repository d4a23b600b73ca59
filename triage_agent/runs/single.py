"""A single file given as the run (a pasted console log, one `trainer_state.json`, a metrics table): read as a
run of that one file. The run folder is a folder of its own under the cache holding only that file (a hard
link where the file system allows one, so even a large log is not copied; a bounded copy otherwise), keyed by
the file's absolute path, size and modification time; the file itself is never modified."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from triage_agent import bounded
from triage_agent.runs.remote import cache_root

COPY_BYTES = 4 << 30  # a file that cannot be linked is copied up to this size
COPY_SECONDS = 300.0


def as_run_folder(path: Path, env: dict[str, str] | None = None) -> Path:
    """The folder to read `path` from as a run of one file."""
    st = path.stat()
    key = hashlib.sha256(f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:20]
    folder = cache_root(env).parent / "files" / key
    target = folder / path.name
    if target.is_file():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    part = folder / f".{path.name}.part"
    try:
        os.link(path, part)  # same inode: nothing copied, and a log that grows is seen growing
    except OSError:
        with bounded.open_binary(path) as src:
            bounded.copy_to(src, part, COPY_BYTES, COPY_SECONDS, path)
    os.replace(part, target)
    return folder
