"""Finding and Adjustment: what the rules and the agent produce."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

# the spec's severities (findings.md); `low` is part of the report schema though no rule raises it today
Severity = Literal["high", "medium", "low", "info"]
SEVERITIES: tuple[Severity, ...] = get_args(Severity)
SEVERITY_RANK: dict[str, int] = {s: i for i, s in enumerate(SEVERITIES)}
RAISED: tuple[Severity, ...] = ("high", "medium", "info")  # the severities rules raise: what --fail-on offers


@dataclass
class Finding:
    id: str
    severity: Severity
    title: str
    evidence: dict[str, Any]
    suggestion: dict[str, Any] | None = None
    # solver-calibration runs: "signal generation" (the solver's scoring) or "signal use" (what the policy learns)
    concerns: str | None = None
    stage: str | None = None  # troubleshooting stage (calibration runs)
    fix: str | None = None  # one line: what to do about it
    # the first step where the finding's condition held (findings-v4.md, Presentation); None where no step applies
    # (a config, a filter table, a round)
    onset_step: int | None = None
    # a causal chain (findings/chains.py): the finding that explains this one, and the ones this one explains
    explained_by: str | None = None
    explains: list[str] = field(default_factory=list)

    def at_least(self, severity: Severity | str) -> bool:
        return SEVERITY_RANK[self.severity] <= SEVERITY_RANK[severity]


@dataclass(frozen=True)
class Proposal:
    """A config change someone proposes (a rule's suggestion or the model's), before it is checked and
    re-computed; `to` is whatever was proposed, the checks decide whether it is a usable number."""

    file: str
    key: str
    to: Any
    rationale: str = ""
    findings: tuple[str, ...] = ()
    source: str = "rules"  # "rules" or "model"


@dataclass
class Adjustment:
    file: str
    key: str
    from_: Any
    to: Any
    rationale: str
    predicted: dict[str, Any] = field(default_factory=dict)
    meets_target: bool | None = None
    findings: list[str] = field(default_factory=list)
    source: str = "rules"  # "rules" (the deterministic suggestions) or "model"
    # when a rules change and a model change name the same key, both are kept and exactly one is the default
    # (the one `apply` takes): the one whose what-if meets its target, the model's when that does not decide
    default: bool = True


@dataclass
class Rejected:
    file: str
    key: str
    to: Any
    reason: str


@dataclass
class Diagnosis:
    cause: str
    findings: list[str]
    evidence: str
    confidence: float
