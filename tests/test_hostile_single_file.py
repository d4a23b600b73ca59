"""Hostile input, round 4 (issue 38): one file given as the run. It used to be hard-linked (or copied) into
`~/.cache/triage/files/<key>/` under a predictable key; a planted link there overwrote or linked files outside
the cache, a planted target was trusted, a same-size same-mtime replacement was read stale, nothing was ever
evicted, and a cache path that is a file exited 70. The file is now read in place, with no cache at all."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

from tests.hostile import run
from tests.test_hostile_surfaces import LOG_OK, NEEDS_FSSPEC, HostileHTTP

CRASH = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
PLANTED = "RuntimeError: zq-planted-by-another-user"


def _log(crash: str) -> str:
    steps = "".join(f"{{'loss': {1.0 - i / 100:.4f}, 'grad_norm': 0.5, 'learning_rate': 1e-05, 'epoch': {i / 40:.3f}}}\n"
                    for i in range(1, 31))
    return steps + "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n" + crash + "\n"


def _old_key(path: Path) -> str:
    """The key the old cache used (sha256 of the resolved path, size, mtime): predictable by anyone."""
    st = path.stat()
    return hashlib.sha256(f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:20]


def _user_log(tmp_path: Path, crash: str = CRASH) -> Path:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    log = private / "train.log"
    log.write_text(_log(crash))
    log.chmod(0o644)
    return log


def _inspect(log: Path, cache: Path) -> tuple[int | None, dict, str]:
    res = run(["inspect", str(log), "--json"], env={"XDG_CACHE_HOME": str(cache)})
    assert "Traceback (most recent call last)" not in res.stderr, res.stderr
    return res.code, json.loads(res.stdout) if res.code == 0 else {}, res.stdout + res.stderr


def _everything(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


def test_a_planted_part_link_in_the_cache_never_overwrites_a_file_outside_it(tmp_path):
    log = _user_log(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("the victim's own text\n")
    folder = tmp_path / "cache" / "triage" / "files" / _old_key(log)
    folder.mkdir(parents=True)
    (folder / ".train.log.part").symlink_to(victim)
    code, doc, _ = _inspect(log, tmp_path / "cache")
    assert code == 0 and "log.crash" in [f["id"] for f in doc["findings"]]
    assert victim.read_text() == "the victim's own text\n"
    assert (folder / ".train.log.part").is_symlink()  # what was planted is left as it was, never followed


def test_a_planted_key_link_to_another_folder_gets_no_link_to_the_users_file(tmp_path):
    log = _user_log(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    files = tmp_path / "cache" / "triage" / "files"
    files.mkdir(parents=True)
    (files / _old_key(log)).symlink_to(elsewhere, target_is_directory=True)
    code, _, _ = _inspect(log, tmp_path / "cache")
    assert code == 0
    assert _everything(elsewhere) == []
    assert os.stat(log).st_nlink == 1  # no hard link anywhere: a 0644 log in a 0700 folder stays private


def test_a_single_file_leaves_nothing_in_the_cache(tmp_path):
    """No link, no copy: nothing to make public (a 0755 cache folder), nothing to evict later."""
    log = _user_log(tmp_path)
    code, doc, _ = _inspect(log, tmp_path / "cache")
    assert code == 0 and doc["run"]["path"] == str(log)
    assert _everything(tmp_path / "cache") == []
    assert stat.S_IMODE(log.parent.stat().st_mode) == 0o700 and os.stat(log).st_nlink == 1


def test_a_planted_cache_target_is_never_taken_for_the_users_file(tmp_path):
    log = _user_log(tmp_path)
    folder = tmp_path / "cache" / "triage" / "files" / _old_key(log)
    folder.mkdir(parents=True)
    (folder / "train.log").write_text(_log(PLANTED))
    _, _, shown = _inspect(log, tmp_path / "cache")
    assert "out of memory" in shown.lower() and "zq-planted" not in shown


def test_a_file_replaced_by_one_of_the_same_size_and_mtime_is_read_afresh(tmp_path):
    log = _user_log(tmp_path)
    _, _, first = _inspect(log, tmp_path / "cache")
    st = log.stat()
    other = "ValueError: a different crash of exactly the same length".ljust(len(CRASH), ".")
    assert len(other) == len(CRASH)
    new = log.with_name("train.log.new")  # a new file renamed over the old one (an editor's save, rsync)
    new.write_text(_log(other))
    os.utime(new, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(new, log)
    assert log.stat().st_size == st.st_size and log.stat().st_mtime_ns == st.st_mtime_ns
    _, _, second = _inspect(log, tmp_path / "cache")
    assert "out of memory" in first.lower()
    assert "a different crash" in second and "out of memory" not in second.lower()


def test_a_cache_path_that_is_a_file_is_no_internal_error(tmp_path):
    log = _user_log(tmp_path)
    cache = tmp_path / "cache-is-a-file"
    cache.write_text("not a folder\n")
    code, doc, shown = _inspect(log, cache)
    assert code == 0, shown
    assert "log.crash" in [f["id"] for f in doc["findings"]]


def test_only_the_file_given_is_read_not_its_folder(tmp_path):
    """Read in place: its neighbours (another run's config, a manifest) are not part of the run."""
    log = _user_log(tmp_path)
    (log.parent / "triage.toml").write_text('kind = "selector-generator"\n')
    (log.parent / "grpo_config.yaml").write_text("zq_neighbour_knob: 0.5\n")
    code, doc, shown = _inspect(log, tmp_path / "cache")
    assert code == 0 and [f["path"] for f in doc["run"]["files"]] == ["train.log"]
    assert doc["run"]["kind"] == "generic" and "zq_neighbour_knob" not in shown


@NEEDS_FSSPEC
def test_links_planted_in_the_remote_cache_are_never_followed(tmp_path):
    """The remote mirror's partial file and version stamp are created O_EXCL|O_NOFOLLOW, owner-only: a link
    planted in their place is replaced, never written through."""
    server = HostileHTTP()
    try:
        cache = tmp_path / "cache"
        mirror = cache / "triage" / "fs" / "http" / server.url / "quiet"
        mirror.mkdir(parents=True)
        victims = {name: tmp_path / f"victim-{i}.txt" for i, name in enumerate((".ok.log.triage-part",
                                                                                ".ok.log.triage-version"))}
        for name, victim in victims.items():
            victim.write_text("the victim's own text\n")
            (mirror / name).symlink_to(victim)
        res = run(["inspect", f"http://{server.url}/quiet/", "--json"], env={"XDG_CACHE_HOME": str(cache)}, timeout=60)
        assert res.code == 0, res.stderr
        assert [v.read_text() for v in victims.values()] == ["the victim's own text\n"] * 2
        assert (mirror / "ok.log").read_bytes() == LOG_OK
        assert stat.S_IMODE((mirror / "ok.log").stat().st_mode) == 0o600
    finally:
        server.close()
