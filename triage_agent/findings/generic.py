"""Findings of any run: trainer metrics, logs and unreadable input (findings.md, "Any run")."""

from __future__ import annotations

import numpy as np

from triage_agent.analysis.stats import tail
from triage_agent.findings.common import r
from triage_agent.findings.model import Finding
from triage_agent.findings.rules import Rules, ge
from triage_agent.runs.model import Run


def check(run: Run, rules: Rules) -> list[Finding]:
    return metric_findings(run, rules) + log_findings(run) + parse_findings(run, rules)


def _tail_mean(run: Run, column: str, fraction: float) -> tuple[float, int] | None:
    if run.metrics is None or column not in run.metrics.frame.columns:
        return None
    values = run.metrics.frame[column].to_numpy(dtype=float)
    values = values[np.isfinite(values)]
    if not len(values):
        return None
    t = tail(values, fraction)
    return float(t.mean()), len(t)


def metric_findings(run: Run, rules: Rules) -> list[Finding]:
    out: list[Finding] = []
    frac = rules["tail_fraction"]
    zs = _tail_mean(run, "frac_reward_zero_std", frac)
    if zs is not None and ge(zs[0], rules["zero_std_share_max"]) and run.metrics is not None:
        out.append(Finding(
            "reward.zero_variance_groups", "medium",
            f"{zs[0]:.0%} of rollout groups have tied rewards over the last {frac:.0%} of steps",
            {"mean_frac_reward_zero_std": r(zs[0]), "steps": zs[1], "source": run.metrics.source}))
    tr = _tail_mean(run, "clipped_ratio", frac)
    if tr is not None and ge(tr[0], rules["truncated_share"]) and run.metrics is not None:
        sev = "high" if ge(tr[0], rules["truncated_share_high"]) else "medium"
        length = _tail_mean(run, "completion_length", frac)
        out.append(Finding(
            "generation.truncated", sev,
            f"{tr[0]:.0%} of completions hit the length limit over the last {frac:.0%} of steps",
            {"mean_clipped_ratio": r(tr[0]), "steps": tr[1],
             "mean_completion_length": r(length[0], 1) if length else None, "source": run.metrics.source}))
    return out


def log_findings(run: Run) -> list[Finding]:
    out: list[Finding] = []
    crashed = [s for s in run.logs if s.crash is not None]
    for scan in crashed:
        c = scan.crash
        assert c is not None
        msg = f": {c.message}" if c.message else ""
        out.append(Finding(
            "log.crash", "high", f"{scan.path} ends in {c.exception}{msg}"[:160],
            {"exception": c.exception, "message": c.message, "file": scan.path, "line": c.line,
             "last_step": scan.last_step, "last_step_line": scan.last_step_line, "source": scan.path}))
    any_traceback = bool(crashed) or any(s.handled_tracebacks for s in run.logs)
    started = any(s.started for s in run.logs)
    logged_steps = any(s.metric_steps for s in run.logs)
    progressed = any((s.progress_current or 0) > 0 for s in run.logs)
    rows = any(rd.history is not None and len(rd.history.frame) for rd in run.rounds) or (
        run.metrics is not None and len(run.metrics.frame)) or (
        run.eval_history is not None and len(run.eval_history.frame))
    if started and not (logged_steps or progressed or rows or any_traceback):
        bar = next((s for s in run.logs if s.progress_total), None)
        evidence = {"logs": [s.path for s in run.logs][:5], "metric_lines": 0,
                    "source": bar.path if bar else run.logs[0].path}
        if bar is not None:
            evidence |= {"progress": f"{bar.progress_current}/{bar.progress_total}", "line": bar.progress_line}
        title = "The run started but never completed a training step"
        if bar is not None:
            title += f" (progress {bar.progress_current}/{bar.progress_total})"
        out.append(Finding("log.no_progress", "high", title, evidence))
    return out


def parse_findings(run: Run, rules: Rules) -> list[Finding]:
    if not run.parse_errors:
        return []
    k = int(rules["parse_error_examples"])
    files = sorted({e.file for e in run.parse_errors})
    return [Finding(
        "data.parse_errors", "info",
        f"{len(run.parse_errors)} row(s) or file(s) could not be read and were skipped",
        {"count": len(run.parse_errors), "files": files[:10],
         "first": [f"{e.location()}: {e.message}" for e in run.parse_errors[:k]], "source": files[0]})]
