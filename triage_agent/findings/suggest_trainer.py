"""Suggestions for trainer runs (trainer-findings.md, "Suggestions for trainer runs"): which config key,
which new value. Each is a suggestion hook of its finding's rule; `suggest.simulate` says what the data
can predict about it, and "not predictable from this run" where it cannot.
"""

from __future__ import annotations

from typing import Any

from triage_agent.findings.facts import Facts, number, suggestion
from triage_agent.findings.model import Finding
from triage_agent.findings.rules import Rules

TRUNCATION_KEYS = ("max_completion_length", "max_response_length", "response_length")
GENERATION_KEYS = ("num_generations", "rollout.n")
KL_KEYS = ("beta", "kl_coef", "kl_loss_coef", "init_kl_coef")
LR_KEYS = ("learning_rate", "lr")
ENTROPY_KEY, TEMPERATURE_KEY = "entropy_coeff", "temperature"
KL_DEFAULT = 0.04  # [M] ms-swift's default beta
ENTROPY_DEFAULT = 0.001


def numeric_entry(facts: Facts, leaves: tuple[str, ...]) -> tuple[Any, float] | None:
    """The first config entry (by leaf name, or dotted tail like `rollout.n`) that holds a number."""
    for leaf in leaves:
        cv = facts.config(leaf)
        v = number(cv.value) if cv is not None else None
        if cv is not None and v is not None:
            return cv, v
    return None


def truncation_suggestion(facts: Facts, rules: Rules, f: Finding) -> dict[str, Any] | None:
    got = numeric_entry(facts, TRUNCATION_KEYS)
    if got is None:
        return None
    cv, v = got
    share = f.evidence.get("mean_clipped_ratio") or 0.0
    return suggestion(cv, int(v * (4 if share >= 0.8 else 2)))


def generations_suggestion(facts: Facts, rules: Rules, f: Finding) -> dict[str, Any] | None:
    got = numeric_entry(facts, GENERATION_KEYS)
    return None if got is None else suggestion(got[0], int(got[1] * 2))


def kl_suggestion(facts: Facts, rules: Rules, f: Finding) -> dict[str, Any] | None:
    got = numeric_entry(facts, KL_KEYS)
    if got is None:
        return None
    cv, v = got
    return suggestion(cv, KL_DEFAULT if v == 0 else v * 2)


def entropy_suggestion(facts: Facts, rules: Rules, f: Finding) -> dict[str, Any] | None:
    out: dict[str, Any] | None = None
    coeff = numeric_entry(facts, (ENTROPY_KEY,))
    if coeff is not None and coeff[1] == 0:
        out = suggestion(coeff[0], ENTROPY_DEFAULT)
    temp = numeric_entry(facts, (TEMPERATURE_KEY,))
    if temp is not None and temp[1] < 1.0:
        t = suggestion(temp[0], 1.0)
        if out is None:
            return t
        out["also"] = t
    return out


def lr_suggestion(facts: Facts, rules: Rules, f: Finding) -> dict[str, Any] | None:
    got = numeric_entry(facts, LR_KEYS)
    return None if got is None or got[1] <= 0 else suggestion(got[0], got[1] / 2)
