"""Run every rule family that applies and sort the findings by severity."""

from __future__ import annotations

from triage_agent.findings import calibration, generic, selector
from triage_agent.findings.model import SEVERITY_RANK, Finding
from triage_agent.findings.rules import Rules, rules_for
from triage_agent.runs.model import Run


def evaluate(run: Run) -> tuple[list[Finding], Rules, list[str]]:
    rules, unknown = rules_for(run.rule_overrides)
    findings: list[Finding] = []
    findings += selector.check(run, rules)
    findings += calibration.check(run, rules)
    findings += generic.check(run, rules)
    findings.sort(key=lambda f: SEVERITY_RANK[f.severity])
    return findings, rules, unknown
