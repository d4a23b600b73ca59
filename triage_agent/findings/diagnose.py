"""The offline diagnosis: causes read off the findings by fixed rules (no model)."""

from __future__ import annotations

from triage_agent.findings.engine import REGISTRY
from triage_agent.findings.model import Diagnosis, Finding

CONFIDENCE = {"high": 0.9, "medium": 0.7, "low": 0.5}
# Chains the rules know: a downstream symptom explained by upstream findings.
CHAINS = [
    ("generator.accuracy_off_target", ("filter.boundary_starved", "reward.boundary_suppressed",
                                       "reward.boundary_oscillating", "rounds.generator_frozen")),
]


def diagnose(findings: list[Finding]) -> list[Diagnosis]:
    ids = {f.id for f in findings}
    out: list[Diagnosis] = []
    explained: set[str] = set()
    for symptom, upstream in CHAINS:
        causes = [u for u in upstream if u in ids]
        if symptom in ids and causes:
            out.append(Diagnosis(
                f"The generator misses its accuracy target because the selector's boundary signal is weak: "
                f"{', '.join(causes)}.", [*causes, symptom],
                "; ".join(f.title for f in findings if f.id in (symptom, *causes)), 0.75))
            explained.add(symptom)
    for f in findings:
        if f.severity in ("info",) or f.id in explained:
            continue
        out.append(Diagnosis(REGISTRY[f.id].cause if f.id in REGISTRY else f.title, [f.id], f.title, CONFIDENCE.get(f.severity, 0.5)))
    return out
