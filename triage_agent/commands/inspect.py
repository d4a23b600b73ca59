"""`triage inspect RUN`: the deterministic report; never calls a model.

RUN may be one run, a folder of several (a sweep: one row per run), or a remote URL of either.
"""

from __future__ import annotations

from pathlib import Path

from triage_agent.commands.sweep import SweepResult, inspect_sweep
from triage_agent.errors import BadInput
from triage_agent.report import Report, offline_report
from triage_agent.runs.load import Progress, load_run
from triage_agent.runs.locate import Located, Where, locate
from triage_agent.window import StepWindow, step_window


def inspect(path: Where, progress: Progress | None = None, now: float | None = None, *,
            run: str | None = None, jobs: int | None = None, executor: str = "local",
            ray_address: str | None = None, keep_reports: bool = False,
            one_run_only: str | None = None, by: str | None = None, shard: tuple[int, int] | None = None,
            use_cache: bool = True, as_sweep: bool = False, table: Path | None = None) -> Report | SweepResult:
    """The offline report of one run, or of every run in a sweep folder (`run` picks one of them).
    `now` (default: the clock) is what file ages are measured against. With `one_run_only` (a reason), a
    folder of several runs is refused before any of them is read. `as_sweep` (a results table, `--by`,
    `--shard`): a folder of one run is a sweep of one. A remote folder is listed, never mirrored whole: a sweep's
    runs are fetched by the workers that read them."""
    found = path if isinstance(path, Located) else locate(path, run, progress, as_sweep=as_sweep, stream=True)
    if isinstance(found, Located):
        return offline_report(load_run(found, progress, now))
    if found.several and one_run_only:
        count = "several" if found.stream is not None else f"{len(found.split.runs)}"
        raise BadInput(f"{found.where} holds {count} runs: {one_run_only}")
    # a remote sweep's local workers fetch from the URL as given; Ray's from the URL as shown (no credentials)
    base_url = found.url if executor == "local" else found.display
    result = inspect_sweep(found.split, jobs=jobs, executor=executor, ray_address=ray_address,
                           keep_reports=keep_reports, progress=progress, now=now, by=by, shard=shard,
                           use_cache=use_cache, display_root=found.display, base_url=base_url, files=found.files,
                           stream=found.stream, table=table)
    result.notes[:0] = found.notes
    return result


def inspect_window(path: Where, at: int, k: int = 5, *, run: str | None = None) -> StepWindow:
    """Every series of one run around step `at` (k logged steps each side) with the findings whose onset is
    near it: `triage inspect RUN --at STEP --window K`."""
    report = inspect(path, run=run, one_run_only="--at looks around a step of one run: pick it with --run NAME")
    assert isinstance(report, Report)  # one_run_only refused a sweep
    return step_window(report.facts, report.findings, at, k)
