"""`run.resume_discontinuity` (findings-v4.md): at a resume the reward, loss or length moves by more than 5x its
step-to-step noise within 5 steps. Where the rows show a resume (runs/formats/restarts.py: a step counter that goes
back, a step logged again, an epoch counter that goes back) and nothing jumps, the resume is an info note: the
findings describe two launches."""

from __future__ import annotations

from typing import Any

import numpy as np

from triage_agent.analysis.stats import rnd
from triage_agent.findings.facts import Facts
from triage_agent.findings.model import Finding
from triage_agent.findings.registry import rule
from triage_agent.findings.rules import Thresholds, gt
from triage_agent.runs.model import Resume

FAMILY = "trainer"
JUDGED = ("reward", "loss", "length")


def _jump(facts: Facts, r: Resume, rules: Thresholds) -> dict[str, Any] | None:
    """The largest move of a judged series across the resume, in units of its noise, when above the bar."""
    w = int(rules["resume_window"])
    worst: dict[str, Any] | None = None
    for name in JUDGED:
        s = facts.series(name)
        if s is None or s.n < 2 * w:
            continue
        at = s.steps >= r.step
        before, after = s.values[~at][-w:], s.values[at][:w]
        sb, sa = s.steps[~at][-w:].astype(float), s.steps[at][:w].astype(float)
        # the step-to-step noise away from the resume: the one difference across it is what is judged
        diffs = np.diff(s.values)
        keep = at[1:] == at[:-1]
        noise = float(np.std(diffs[keep]) / np.sqrt(2)) if keep.sum() >= 2 else 0.0
        if len(before) < 2 or len(after) < 2 or noise <= 0:
            continue
        move = float(after.mean() - before.mean())
        # a series with a trend moves between two windows w steps apart even without a resume (a length falling 12
        # tokens a step across a resume of batch J's verl export, from 190.7 to 125.9): what is judged is the move
        # beyond the trend the two windows share
        drift = _slope(sb, before, sa, after) * float(sa.mean() - sb.mean())
        k = abs(move - drift) / noise
        if gt(k, rules["resume_noise_k"]) and (worst is None or k > worst["noise_multiple"]):
            worst = {"series": name, "logged_as": s.raw, "before_mean": rnd(float(before.mean()), 4),
                     "after_mean": rnd(float(after.mean()), 4), "move": rnd(move, 4), "trend_drift": rnd(drift, 4), "noise": rnd(noise, 4),
                     "noise_multiple": rnd(k, 3)}
    return worst


def _slope(sb: np.ndarray, before: np.ndarray, sa: np.ndarray, after: np.ndarray) -> float:
    """The least-squares slope per step the two windows share, each about its own mean (so the jump between them
    does not enter it); 0 where the steps do not vary."""
    xb, xa = sb - sb.mean(), sa - sa.mean()
    var = float((xb * xb).sum() + (xa * xa).sum())
    cov = float((xb * (before - before.mean())).sum() + (xa * (after - after.mean())).sum())
    return cov / var if var > 0 else 0.0


@rule("run.resume_discontinuity", FAMILY, ("resume_noise_k", "resume_window"),
      cause="The run was resumed and its metrics jumped at the resume: the resumed launch is not the run that "
            "stopped (another checkpoint, optimizer or scheduler state lost, a different data order or config).",
      fix="check what the resume loaded: the checkpoint's step, the optimizer and LR-scheduler state, the data "
          "loader's position and the config; resume with the same settings the first launch had. Runs that wrote "
          "one file at once: give each its own output folder")
def resume_discontinuity(facts: Facts, rules: Thresholds) -> list[Finding]:
    run = facts.run
    out = []
    for r in run.resumes[:8]:
        jump = _jump(facts, r, rules)
        base = {"resume_step": r.step, "furthest_before": r.before, "why": r.why, "resumes": run.resume_count,
                "start_step": r.step, "source": r.source}
        if r.writers > 1:
            out.append(Finding("run.resume_discontinuity", "medium",
                               f"In {r.source} {r.why}; its series hold their rows merged by step, so what the "
                               "other findings read mixes them",
                               {**base, "writers": r.writers}))
        elif jump is not None:
            out.append(Finding("run.resume_discontinuity", "medium",
                               f"At the resume at step {r.step} ({r.why}) {jump['series']} moved "
                               f"{jump['before_mean']:.4g} → {jump['after_mean']:.4g}, "
                               f"{jump['noise_multiple']:.1f}x its step-to-step noise"
                               + (" beyond its trend" if jump["trend_drift"] else ""), {**base, **jump}))
        elif not any(f.severity == "info" for f in out):  # one note for the resumes that moved nothing
            out.append(Finding("run.resume_discontinuity", "info",
                               f"The run was resumed at step {r.step} ({r.why}); the reward, loss and length carry "
                               "on within their noise", base))
    return out
