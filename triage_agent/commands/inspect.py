"""`triage inspect RUN`: the deterministic report; never calls a model.

RUN may be one run, a folder of several (a sweep: one row per run), or a remote URL of either.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from triage_agent.commands.sweep import SweepResult, inspect_sweep
from triage_agent.errors import BadInput
from triage_agent.report import Report, offline_report
from triage_agent.runs import remote
from triage_agent.runs.load import Progress, load_run
from triage_agent.runs.sweep import split_listing, split_runs
from triage_agent.window import StepWindow, step_window


def inspect(path: str | Path, progress: Progress | None = None, now: float | None = None, *,
            run: str | None = None, jobs: int | None = None, executor: str = "local",
            ray_address: str | None = None, keep_reports: bool = False,
            one_run_only: str | None = None, by: str | None = None, shard: tuple[int, int] | None = None,
            use_cache: bool = True, as_sweep: bool = False) -> Report | SweepResult:
    """The offline report of one run, or of every run in a sweep folder (`run` picks one of them).
    `now` (default: the clock) is what file ages are measured against. With `one_run_only` (a reason), a
    folder of several runs is refused before any of them is read. `as_sweep` (a results table, `--by`,
    `--shard`): a folder of one run is a sweep of one. A remote folder is listed, never mirrored whole: a sweep's
    runs are fetched by the workers that read them."""
    location = str(path)
    if remote.is_remote(location):
        return _remote(location, progress, now, run=run, jobs=jobs, executor=executor, ray_address=ray_address,
                       keep_reports=keep_reports, one_run_only=one_run_only, by=by, shard=shard,
                       use_cache=use_cache, as_sweep=as_sweep)
    root = Path(path)
    if not root.is_dir():
        return offline_report(load_run(root, progress, now))  # the loader says what is wrong with it
    split = split_runs(root)
    if run is not None:
        picked = split.require(run, location)
        return offline_report(load_run(picked.path, progress, now, split=False))
    if split.several and one_run_only:
        raise BadInput(f"{location} holds {len(split.runs)} runs: {one_run_only}")
    if not split.several and not as_sweep:
        return offline_report(load_run(root, progress, now, split=False))
    return inspect_sweep(split, jobs=jobs, executor=executor, ray_address=ray_address, keep_reports=keep_reports,
                         progress=progress, now=now, by=by, shard=shard, use_cache=use_cache)


def _remote(location: str, progress: Progress | None, now: float | None, *, run: str | None, one_run_only: str | None,
            as_sweep: bool, **sweep: Any) -> Report | SweepResult:
    """A remote run or sweep: listed in one flat listing and split by names; one run is mirrored and read here,
    a sweep's runs go to the workers with their files' names (each worker fetches its own)."""
    listing = remote.list_sweep(location)
    base = location.rstrip("/")
    split = split_listing(listing.path, list(listing.files))
    if split.several and one_run_only and run is None:
        raise BadInput(f"{listing.url} holds {len(split.runs)} runs: {one_run_only}")
    if run is not None or not (split.several or as_sweep):  # one run: fetched here, from the listing it has
        name = split.require(run, listing.url).name if run is not None else "."  # one run: the folder, as locally
        suffix = "" if name == "." else "/" + name
        m = remote.fetch_files(base + suffix, remote.by_run(listing.files, [name])[name], progress)
        report = offline_report(load_run(m.path, progress, now, split=False, display=listing.url + suffix))
        report.notes[:0] = [*listing.notes, *m.summary()]
        return report
    executor = sweep["executor"]
    result = inspect_sweep(split, progress=progress, now=now, display_root=listing.url,
                           base_url=base if executor == "local" else listing.url,
                           files=remote.by_run(listing.files, [r.name for r in split.runs]), **sweep)
    result.notes[:0] = listing.notes
    return result


def inspect_window(path: str | Path, at: int, k: int = 5, *, run: str | None = None) -> StepWindow:
    """Every series of one run around step `at` (k logged steps each side) with the findings whose onset is
    near it: `triage inspect RUN --at STEP --window K`."""
    report = inspect(path, run=run, one_run_only="--at looks around a step of one run: pick it with --run NAME")
    assert isinstance(report, Report)  # one_run_only refused a sweep
    return step_window(report.facts, report.findings, at, k)
