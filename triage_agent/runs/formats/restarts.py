"""Where a run was resumed, read off the order of its metric rows (findings-v4.md, `run.resume_discontinuity`): a
step counter that goes back (a relaunch appended to the same file re-logs steps it had logged), a training step
logged twice (a preempted attempt redone), or an epoch counter that goes back while the step goes on (a resume from
a checkpoint with another data or batch setup).

Rows of one step that are of different kinds (a train row and an eval row, a final summary) are no resume: a step
logged twice counts only when the run's training series (`trained`: its reward or loss) is in both rows."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from triage_agent.runs.formats.base import Columns

MAX_RESTARTS = 16  # kept per file; the count says how many there were
# a kind of restart on more than this share of the rows is how the file is written, not a resume: several rows per
# step (a custom reward-model loop logs every batch at its epoch's step: 3,550 rows "again" in tests/real_runs'
# custom_rm_rwkv7_pairwise_learning_then_cuda_oom), ranks or workers interleaved
MAX_SHARE = 0.02


MAX_WRITERS = 4  # runs writing one file at once that are told apart; more is how the file is written (ranks)
MIN_WRITER_ROWS = 3  # rows each of them wrote
MAX_WRITER_SCAN = 200_000  # rows whose writers are told apart (one Python pass over them)
MAX_SHARED = 0.5  # steps two of them share, as a share of the smaller one's: ranks logging one run share them all


@dataclass(frozen=True)
class Restart:
    step: int  # the first step the new launch logged
    before: int  # the furthest step logged before it
    why: str
    writers: int = 1  # runs whose rows interleave in the file (2 or more: they wrote it at once)


def writers(s: np.ndarray) -> list[tuple[int, int, int]] | None:
    """Runs that wrote one file at once, from its steps in file order: each row joins the run whose last step is the
    greatest below its own (a new run where none is), so each run's steps rise. Two to MAX_WRITERS runs of
    MIN_WRITER_ROWS rows or more, each pair sharing at most MAX_SHARED of their steps (two Tinker runs appending to
    one metrics.jsonl in batch J: steps 6, 7, 0, 8, 1, 2, 9, ...; ranks of one run log the same steps instead), as
    (first row, first step, last step) in the order they first wrote; None otherwise."""
    last: list[float] = []
    chains: list[list[int]] = []
    for i, step in enumerate(s):
        below = [k for k, v in enumerate(last) if v < step]
        if below:
            k = max(below, key=last.__getitem__)
        else:
            if len(chains) == MAX_WRITERS:
                return None
            k = len(chains)
            chains.append([])
            last.append(step)
        chains[k].append(i)
        last[k] = step
    if len(chains) < 2 or min(map(len, chains)) < MIN_WRITER_ROWS:
        return None
    sets = [set(s[c].tolist()) for c in chains]
    for a in range(len(sets)):
        for b in range(a + 1, len(sets)):
            if len(sets[a] & sets[b]) > MAX_SHARED * min(len(sets[a]), len(sets[b])):
                return None
    return [(c[0], int(s[c[0]]), int(s[c[-1]])) for c in chains]


def find(steps: np.ndarray, trained: np.ndarray, epochs: np.ndarray | None) -> tuple[list[Restart], int]:
    """Restarts in rows given in file order: `steps` as floats (NaN where a row has none), `trained` whether the
    row holds a training series, `epochs` the rows' epoch counter (NaN where none). Returns (the first
    MAX_RESTARTS, how many)."""
    valid = np.flatnonzero(np.isfinite(steps))
    if len(valid) < 2:
        return [], 0
    s = steps[valid]
    cur, prev = s[1:], s[:-1]
    furthest = np.maximum.accumulate(s)[:-1]
    back = cur < prev
    tr = trained[valid]
    again = (cur == prev) & tr[1:] & tr[:-1]
    epoch_back = np.zeros(len(cur), dtype=bool)
    if epochs is not None:
        e = epochs[valid]
        with np.errstate(invalid="ignore"):
            epoch_back = (e[1:] < e[:-1] - 1e-6) & (cur >= prev) & ~back
    limit = max(2, MAX_SHARE * len(s))
    if back.sum() > limit and len(s) <= MAX_WRITER_SCAN and (runs := writers(s)) is not None:
        spans = ", ".join(f"steps {a}-{b}" for _row, a, b in runs)
        later = runs[1]
        return [Restart(later[1], int(furthest[later[0] - 1]), f"the rows of {len(runs)} runs interleave in the file "
                                                              f"({spans}): they wrote it at once", len(runs))], 1
    back, again, epoch_back = (k if k.sum() <= limit else np.zeros_like(k) for k in (back, again, epoch_back))
    hits = np.flatnonzero(back | again | epoch_back)
    out = []
    for i in hits[:MAX_RESTARTS]:
        step, before = int(cur[i]), int(furthest[i])
        if back[i]:
            why = f"the step counter went back from {int(prev[i])} to {step}"
        elif again[i]:
            why = f"step {step} was logged again"
        else:
            assert epochs is not None
            e = epochs[valid]
            why = f"the epoch counter went back from {e[i]:.4g} to {e[i + 1]:.4g} at step {step}"
        out.append(Restart(step, before, why))
    return out, len(hits)


_EVENT_FILE = re.compile(r"events\.out\.tfevents\.(\d+)\.")


def _steps_of(rows: list[dict[str, Any]] | Columns) -> tuple[int, int] | None:
    """(first, furthest) step of a source's rows, None when it has none."""
    if isinstance(rows, Columns):
        got = rows.values.get("step")
        steps = got[rows.present["step"]] if got is not None else np.array([])
    else:
        steps = np.array([float(r["step"]) for r in rows if isinstance(r.get("step"), (int, float))])
    return (int(steps[0]), int(steps.max())) if len(steps) else None


def relaunches(sources: list[tuple[str, list[dict[str, Any]] | Columns]], chosen: str) -> list[tuple[Restart, str]]:
    """TensorBoard writes one event file per launch (its name holds the launch's time): the chosen source's sibling
    event files, in that order, whose first step is at or below the furthest step an earlier one logged are launches
    that started again (a relaunch into the same log dir, which no one file shows), each with its file."""
    folder = posixpath.dirname(chosen)
    files = sorted(((int(m.group(1)), rel, rows) for rel, rows in sources
                    if posixpath.dirname(rel) == folder and (m := _EVENT_FILE.match(posixpath.basename(rel)))),
                   key=lambda t: (t[0], t[1]))
    out: list[tuple[Restart, str]] = []
    furthest: int | None = None
    for _stamp, rel, rows in files:
        span = _steps_of(rows)
        if span is None:
            continue
        if furthest is not None and span[0] <= furthest and len(out) < MAX_RESTARTS:
            out.append((Restart(span[0], furthest, f"{posixpath.basename(rel)} starts again at step {span[0]} after "
                                                   f"an earlier launch's event file reached step {furthest}"), rel))
        furthest = span[1] if furthest is None else max(furthest, span[1])
    return out
