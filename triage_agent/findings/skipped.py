"""`optim.steps_skipped` (findings-v4.md): optimizer steps that did not update the weights. Three ways a run shows it:

- DeepSpeed's cumulative `step=N, skipped=K` counter (fp16 overflow): K of N steps skipped;
- lines that say so ("OVERFLOW! ... Skipping step", "No valid trajectory groups at batch 14, skipping"), counted
  against the steps the run logged;
- a per-step flag (`update_skipped`, `skipped`: 1 or true where the step made no update), or a per-step count that
  only grows (the steps skipped so far);
- steps that log a reward but none of the series an update writes (loss, gradient norm, entropy, KL, clip share),
  in a run that logged them at the reward's own cadence before (a filter that left nothing to train on: the
  zero-KL DAPO runs in tests/real_runs log `policy/loss` on steps 0-4 only, then reward 0 and no update to step 24).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from triage_agent.analysis.stats import rnd
from triage_agent.findings.facts import Facts
from triage_agent.findings.model import Finding, Severity
from triage_agent.findings.registry import rule
from triage_agent.findings.rules import Thresholds, ge

FAMILY = "trainer"
UPDATE_SERIES = ("loss", "grad_norm", "entropy", "kl", "update_kl", "ratio_clip_share")
MIN_CONSECUTIVE = 3  # logged steps in a row that held an update: the update series is logged at the reward's cadence


def _counter(facts: Facts) -> tuple[int, int, dict[str, Any]] | None:
    """DeepSpeed's counter at its furthest step, over the run's logs: (skipped, steps, evidence)."""
    best = max((s for s in facts.run.logs if s.skips.counter is not None), default=None,
               key=lambda s: s.skips.counter[0] if s.skips.counter else 0)
    if best is None or best.skips.counter is None:
        return None
    step, skipped = best.skips.counter
    return skipped, step, {"how": "DeepSpeed's step=N, skipped=K counter", "line": best.skips.counter_line,
                           "start_step": best.skips.first_skipped, "source": best.path}


def _lines(facts: Facts, rules: Thresholds) -> tuple[int, int, dict[str, Any]] | None:
    scans = [s for s in facts.run.logs if s.skips.lines]
    if not scans:
        return None
    lines = sum(s.skips.lines for s in scans)
    # the steps the run went through: its last step (counted from 1), or its rows where it counts from 0
    rows = len(facts.run.metrics.data) if facts.run.metrics is not None else 0
    steps = max([rows, facts.last_step or 0, *((s.last_step or 0) for s in facts.run.logs)])
    first = scans[0]
    return min(lines, steps), steps, {"how": "lines that say a step was skipped", "line": first.skips.first_line,
                                      "example": first.skips.example, "source": first.path}


def _flag(facts: Facts, rules: Thresholds) -> tuple[int, int, dict[str, Any]] | None:
    """The `skipped_steps` series: a 0/1 flag per step (skipped where 1), or a count of the steps skipped so far
    (non-decreasing integers: its rise over the logged steps)."""
    s = facts.series("skipped_steps")
    if s is None or s.n < 2:
        return None
    v = s.values
    ev = {"how": f"the per-step {s.raw}", "series": "skipped_steps", "logged_as": s.raw, "source": s.source}
    if np.isin(v, (0.0, 1.0)).all():
        hit = v == 1.0
        return int(hit.sum()), s.n, {**ev, "start_step": int(s.steps[hit][0]) if hit.any() else None}
    if (np.diff(v) >= 0).all() and (v == np.round(v)).all():
        return int(v[-1] - v[0]), s.n - 1, ev
    return None


def _no_update(facts: Facts, rules: Thresholds) -> tuple[int, int, dict[str, Any]] | None:
    reward, m = facts.series("reward"), facts.run.metrics
    present = [c for c in UPDATE_SERIES if m is not None and c in m.data.columns]
    if reward is None or m is None or not present or len(m.data) < rules["min_series_steps"]:
        return None
    steps = facts.column("step")
    has_reward = np.isfinite(facts.column("reward"))
    updated = np.zeros(len(steps), dtype=bool)
    for c in present:
        updated |= np.isfinite(facts.column(c))
    rows = np.flatnonzero(has_reward)
    if not updated[rows].any() or _longest_run(updated[rows]) < MIN_CONSECUTIVE:
        return None
    after = rows[rows >= np.flatnonzero(updated)[0]]
    skipped = after[~updated[after]]
    return len(skipped), len(after), {
        "how": f"steps that log a reward but none of {', '.join(present)}", "first_skipped_step":
        int(steps[skipped[0]]) if len(skipped) else None, "start_step": int(steps[skipped[0]]) if len(skipped) else None,
        "source": m.source}


def _longest_run(mask: np.ndarray) -> int:
    """The longest run of True in a boolean array (0: none), from the edges of the runs in NumPy: a watch pass
    evaluates this each time, and a loop over 11,000 steps was a third of such a pass at 1 GB."""
    if not mask.any():
        return 0
    edges = np.flatnonzero(np.diff(np.concatenate(([0], mask.astype(np.int8), [0]))))  # each run's start and end
    return int((edges[1::2] - edges[::2]).max())


@rule("optim.steps_skipped", FAMILY, ("skipped_share", "skipped_all_share", "skipped_floor_lines", "min_series_steps"),
      cause="Optimizer steps were skipped, so the weights rarely (or never) changed: an fp16 loss scale that "
            "overflows on every step, or a filter that leaves no group to train on.",
      fix="fp16 overflow: train in bf16, or lower the learning rate and check for inf in the loss; nothing to train "
          "on: make the prompts' difficulty match the policy (groups that tie are dropped) or raise num_generations")
def steps_skipped(facts: Facts, rules: Thresholds) -> Finding | None:
    return _share(facts, rules) or _floor(facts, rules)


def _floor(facts: Facts, rules: Thresholds) -> Finding | None:
    """fp16 overflows with the loss scale at its floor: the scaler cannot go lower, so each such step is lost and
    the run cannot recover by itself, whatever share of the steps it is so far."""
    scans = [s for s in facts.run.logs if s.skips.at_floor]
    count = sum(s.skips.at_floor for s in scans)
    if not ge(count, rules["skipped_floor_lines"]):
        return None
    first = scans[0]
    return Finding("optim.steps_skipped", "medium",
                   f"{count} fp16 overflows with the loss scale at its floor: the scaler cannot lower it, so each "
                   "such step is skipped and the run cannot recover",
                   {"at_floor": count, "line": first.skips.floor_line, "source": first.path,
                    "how": "overflow lines whose loss scale could not be reduced"})


def _share(facts: Facts, rules: Thresholds) -> Finding | None:
    for how in (_counter(facts), _lines(facts, rules), _flag(facts, rules), _no_update(facts, rules)):
        if how is None:
            continue
        skipped, steps, ev = how
        if steps < rules["min_series_steps"] or steps <= 0:
            continue
        share = skipped / steps
        if not ge(share, rules["skipped_share"]):
            continue
        every = ge(share, rules["skipped_all_share"])
        sev: Severity = "high" if every else "medium"
        title = (f"Every optimizer step was skipped ({skipped} of {steps})" if every else
                 f"{skipped} of {steps} optimizer steps were skipped ({share:.0%})")
        return Finding("optim.steps_skipped", sev, f"{title}: {ev['how']}",
                       {"skipped": skipped, "steps": steps, "share": rnd(share, 3), **ev})
    return None
