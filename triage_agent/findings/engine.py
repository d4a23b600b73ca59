"""Run every registered rule over a run's facts and sort the findings by severity."""

from __future__ import annotations

# the family modules register their rules on import; their order is the order of equal-severity findings
from triage_agent.findings import (  # noqa: F401
    calibration,
    components,
    generic,
    preference,
    selector,
    trainer,
    training,
)
from triage_agent.findings.facts import Facts
from triage_agent.findings.model import SEVERITY_RANK, Finding
from triage_agent.findings.registry import REGISTRY

__all__ = ["REGISTRY", "evaluate"]


def evaluate(facts: Facts) -> list[Finding]:
    findings: list[Finding] = []
    for rule in REGISTRY.values():
        if rule.applies(facts.run.paradigm):
            findings += rule.run(facts, facts.rules)
    findings.sort(key=lambda f: SEVERITY_RANK[f.severity])
    return findings
