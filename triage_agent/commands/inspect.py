"""`triage inspect RUN`: the deterministic report; never calls a model.

RUN may be one run, a folder of several (a sweep: one row per run), or a remote URL of either.
"""

from __future__ import annotations

from pathlib import Path

from triage_agent.commands.sweep import SweepResult, inspect_sweep
from triage_agent.errors import BadInput
from triage_agent.report import Report, offline_report
from triage_agent.runs import remote
from triage_agent.runs.load import Progress, load_run
from triage_agent.runs.sweep import split_runs
from triage_agent.window import StepWindow, step_window


def inspect(path: str | Path, progress: Progress | None = None, now: float | None = None, *,
            run: str | None = None, jobs: int | None = None, executor: str = "local",
            ray_address: str | None = None, keep_reports: bool = False,
            one_run_only: str | None = None) -> Report | SweepResult:
    """The offline report of one run, or of every run in a sweep folder (`run` picks one of them).
    `now` (default: the clock) is what file ages are measured against. With `one_run_only` (a reason), a
    folder of several runs is refused before any of them is read."""
    location = str(path)
    display: str | None = None
    notes: list[str] = []
    if remote.is_remote(location):
        m = remote.mirror(location, progress)
        root, display = m.path, m.url
        notes = m.summary()
    else:
        root = Path(path)
        if not root.is_dir():
            return offline_report(load_run(root, progress, now))  # the loader says what is wrong with it
    split = split_runs(root)
    if run is not None:
        picked = split.require(run, display or location)
        shown = f"{display}/{picked.name}" if display and picked.name != "." else display
        report = offline_report(load_run(picked.path, progress, now, split=False, display=shown))
        report.notes[:0] = notes
        return report
    if split.several and one_run_only:
        raise BadInput(f"{display or location} holds {len(split.runs)} runs: {one_run_only}")
    if not split.several:
        report = offline_report(load_run(root, progress, now, split=False, display=display))
        report.notes[:0] = notes
        return report
    result = inspect_sweep(split, jobs=jobs, executor=executor, ray_address=ray_address, keep_reports=keep_reports,
                           progress=progress, now=now, display_root=display)
    result.notes[:0] = notes
    return result


def inspect_window(path: str | Path, at: int, k: int = 5, *, run: str | None = None) -> StepWindow:
    """Every series of one run around step `at` (k logged steps each side) with the findings whose onset is
    near it: `triage inspect RUN --at STEP --window K`."""
    report = inspect(path, run=run, one_run_only="--at looks around a step of one run: pick it with --run NAME")
    assert isinstance(report, Report)  # one_run_only refused a sweep
    return step_window(report.facts, report.findings, at, k)
