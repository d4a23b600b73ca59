"""The offline diagnosis: causes read off the findings by fixed rules (no model). A finding that explains others
(findings/chains.py) is one diagnosis with its consequences; the others each their own."""

from __future__ import annotations

from triage_agent.findings import chains
from triage_agent.findings.engine import REGISTRY
from triage_agent.findings.model import Diagnosis, Finding

CONFIDENCE = {"high": 0.9, "medium": 0.7, "low": 0.5}
# a chain's diagnosis: the cause and its consequences agree, which is more than one finding says alone
CHAIN_CONFIDENCE = 0.75


def _cause(f: Finding) -> str:
    return REGISTRY[f.id].cause if f.id in REGISTRY else f.title


def diagnose(findings: list[Finding]) -> list[Diagnosis]:
    out: list[Diagnosis] = []
    for f in findings:
        if f.severity == "info" or f.explained_by is not None:
            continue
        if f.explains:
            tree = [x for x in findings if x is f or (above := chains.causes(findings, x)) and above[-1] is f]
            how = chains.why(f.id)
            consequences = ", ".join(x.id for x in tree if x is not f)
            out.append(Diagnosis(f"{_cause(f)} It explains {consequences}" + (f": {how}." if how else "."),
                                 [x.id for x in tree], "; ".join(x.title for x in tree), CHAIN_CONFIDENCE))
            continue
        out.append(Diagnosis(_cause(f), [f.id], f.title, CONFIDENCE.get(f.severity, 0.5)))
    return out

