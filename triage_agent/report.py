"""The report: what `inspect` and `report` return, rendered as text, JSON or HTML."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from triage_agent.findings import calibration, diagnose, engine, suggest
from triage_agent.findings.model import Adjustment, Diagnosis, Finding, Rejected
from triage_agent.findings.rules import Rules
from triage_agent.runs.model import Run


@dataclass
class Report:
    run: Run
    findings: list[Finding]
    diagnosis: list[Diagnosis]
    adjustments: list[Adjustment]
    rejected: list[Rejected]
    rules: Rules
    source: dict[str, Any] = field(default_factory=lambda: {"kind": "offline"})
    notes: list[str] = field(default_factory=list)
    troubleshooting: list[calibration.Stage] = field(default_factory=list)

    def worst(self) -> str | None:
        return self.findings[0].severity if self.findings else None


def offline_report(run: Run) -> Report:
    findings, rules, unknown = engine.evaluate(run)
    adjustments, rejected = suggest.finalize(run, suggest.offline_proposals(findings), rules)
    notes = list(run.notes)
    if unknown:
        notes.append(f"triage.toml [rules]: unknown or non-numeric names ignored: {', '.join(sorted(unknown))}")
    stages = calibration.troubleshooting(run, findings) if run.kind == "solver-calibration" else []
    return Report(run, findings, diagnose.diagnose(findings), adjustments, rejected, rules, {"kind": "offline"}, notes,
                  stages)
