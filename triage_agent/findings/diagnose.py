"""The offline diagnosis: causes read off the findings by fixed rules (no model)."""

from __future__ import annotations

from triage_agent.findings.model import Diagnosis, Finding

CAUSES: dict[str, str] = {
    "filter.boundary_starved": "The pre-training filter drops most questions near the generator's 50% zone, so the "
                               "selector sees few examples where its evidence choice changes the outcome.",
    "filter.boundary_overloaded": "Too many kept questions sit in the boundary band; the generator trains mostly on "
                                  "hard questions and its accuracy tends to fall.",
    "filter.rule_mismatch": "The filter's kept flags do not follow the thresholds in the config: the filter code and "
                            "the config disagree.",
    "reward.boundary_suppressed": "Other reward components (format above all) outweigh the boundary reward, so the "
                                  "policy gradient mostly optimises them.",
    "reward.boundary_oscillating": "The boundary reward swings from step to step without rising: the selector's "
                                   "signal is noise-dominated.",
    "rollouts.too_few": "Too few rollouts per question make accuracy estimates coarse; a true 50% question often "
                        "lands outside the band.",
    "rounds.generator_frozen": "The generator checkpoint did not change between rounds, so the selector keeps "
                               "training against a stale generator.",
    "rounds.selector_stale": "Consecutive selector rounds learned the same curves: the alternation is not adding "
                             "information.",
    "generator.accuracy_off_target": "The generator's accuracy sits away from the target and is not converging.",
    "generator.accuracy_regressed": "The generator got worse in its last round.",
    "hacking.proxy_gold_divergence": "The policy is exploiting the solver: proxy reward rises while the gold pass "
                                     "rate does not (reward hacking).",
    "hacking.high_score_failures": "Many samples the solver scores highly fail the gold check: the solver is "
                                   "overconfident where the policy found its blind spots.",
    "calibration.too_frequent": "Calibrations come too often and flip many verdicts each time: the policy chases a "
                                "moving target.",
    "calibration.interface_changed": "The solver's output range moves between calibrations, which rescales the "
                                     "policy's reward.",
    "calibration.candidates_too_loose": "Most calibration candidates are merely hard, not misjudged: the candidate "
                                        "filter is too loose.",
    "calibration.surface_sensitive": "The solver's score changes under meaning-preserving rewrites: it reads "
                                     "surface features.",
    "calibration.miscalibrated": "The solver's scores do not match the gold pass rate (high expected calibration "
                                 "error).",
    "reward.zero_variance_groups": "Most rollout groups have identical rewards, so GRPO-style advantages are zero: "
                                   "prompts are too easy or too hard for the policy.",
    "generation.truncated": "Completions are cut at the length limit, so rewards are computed on cut-off answers.",
    "log.crash": "The run crashed.",
    "log.no_progress": "The run started but never completed a training step (hung, killed, or still compiling).",
}
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
        out.append(Diagnosis(CAUSES.get(f.id, f.title), [f.id], f.title, CONFIDENCE.get(f.severity, 0.5)))
    return out
