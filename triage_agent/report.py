"""The report: what `inspect` and `report` return, rendered as text, JSON or HTML.

It carries the run's `Facts`, so every view formats the analyses computed once for the findings
(with the run's own `[rules]`) instead of computing them again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from triage_agent.findings import calibration, diagnose, engine, suggest
from triage_agent.findings.facts import Facts, resolve
from triage_agent.findings.model import Adjustment, Diagnosis, Finding, Rejected
from triage_agent.findings.rules import Rules
from triage_agent.runs.model import Run


@dataclass
class Report:
    facts: Facts
    findings: list[Finding]
    diagnosis: list[Diagnosis]
    adjustments: list[Adjustment]
    rejected: list[Rejected]
    source: dict[str, Any] = field(default_factory=lambda: {"kind": "offline"})
    notes: list[str] = field(default_factory=list)
    troubleshooting: list[calibration.Stage] = field(default_factory=list)
    model_error: str | None = None  # the model part failed after the rules' part was done (exit 3)

    @property
    def run(self) -> Run:
        return self.facts.run

    @property
    def rules(self) -> Rules:
        return self.facts.rules


def offline_report(run: Run) -> Report:
    facts = resolve(run)
    findings = engine.evaluate(facts)
    adjustments, rejected = suggest.finalize(facts, suggest.offline_proposals(findings))
    notes = list(run.notes)
    if facts.unknown_rules:
        notes.append("triage.toml [rules]: unknown names or values out of range, ignored: "
                     f"{', '.join(sorted(facts.unknown_rules)[:20])}")
    stages = calibration.troubleshooting(run, findings) if run.kind == "solver-calibration" else []
    return Report(facts, findings, diagnose.diagnose(findings), adjustments, rejected, {"kind": "offline"}, notes,
                  stages)
