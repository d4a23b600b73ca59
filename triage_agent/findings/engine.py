"""Run every registered rule over a run's facts and sort the findings by severity."""

from __future__ import annotations

import importlib
import pkgutil

import triage_agent.findings as _package
from triage_agent.findings import chains
from triage_agent.findings.facts import Facts
from triage_agent.findings.model import SEVERITY_RANK, Finding
from triage_agent.findings.registry import REGISTRY
from triage_agent.runs.trainers.meaning import inferred_text

__all__ = ["REGISTRY", "evaluate"]

# the family modules (every module of this package that names a FAMILY) register their rules on import; their
# (alphabetical) order is the order of equal-severity findings
for _m in sorted(pkgutil.iter_modules(_package.__path__), key=lambda m: m.name):
    _mod = importlib.import_module(f"{_package.__name__}.{_m.name}")
    if not hasattr(_mod, "FAMILY"):
        del _mod


def evaluate(facts: Facts) -> list[Finding]:
    findings: list[Finding] = []
    for rule in REGISTRY.values():
        if rule.applies(facts.run.paradigm):
            findings += rule.run(facts, facts.rules)
    findings.sort(key=lambda f: SEVERITY_RANK[f.severity])
    last = facts.last_step
    findings = chains.link(findings, facts.rules["chain_onset_slack"] * (last or 0))
    if facts.run.metric_inferred:
        for f in findings:
            _say_inferred(f, facts.run.metric_inferred)
    return findings


def _say_inferred(finding: Finding, inferred: dict[str, str]) -> None:
    """A finding that reads a series resolved by meaning says so in its evidence (trainer-profiles.md)."""
    named = finding.evidence.get("series")
    series = [named] if isinstance(named, str) else list(named) if isinstance(named, (dict, list)) else []
    said = [inferred_text(s, inferred[s]) for s in series if s in inferred]
    if said:
        finding.evidence["inferred"] = said[0] if len(said) == 1 else said
