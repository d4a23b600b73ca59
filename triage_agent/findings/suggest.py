"""Adjustments: check a proposed config change, then re-compute it on the run's own data (what-if).

Both the offline rules and the model's answer go through here, so `from`, `predicted`
and `meets_target` are always the tool's numbers, never a model's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from triage_agent.analysis import rewards, whatif
from triage_agent.analysis.rollouts import pass_rates, reliability, zero_variance_share
from triage_agent.analysis.stats import rnd
from triage_agent.findings.engine import REGISTRY
from triage_agent.findings.facts import Facts, number
from triage_agent.findings.model import Adjustment, Finding, Proposal, Rejected
from triage_agent.runs.model import ConfigValue, Run

UNIT_KEYS = {"easy_threshold", "unsolvable_threshold", "target_accuracy"}
COUNT_KEYS = {"rollouts_per_question", "boundary_rollouts", "calibrate_every_steps", "num_generations",
              "max_completion_length", "max_response_length", "response_length", "max_steps"}
# trainer keys that are non-negative reals whatever their type in the file (`beta: 0` is a coefficient)
REAL_KEYS = {"beta", "kl_coef", "kl_loss_coef", "init_kl_coef", "learning_rate", "lr", "entropy_coeff",
             "temperature", "max_grad_norm", "pref_beta", "rpo_alpha", "pref_ftx", "num_train_epochs"}
# upper bounds of counts: a what-if past them would cost more than it can tell (1e12 rollouts)
COUNT_MAX = {"rollouts_per_question": 10_000, "boundary_rollouts": 10_000, "num_generations": 1024, "n": 1024,
             "calibrate_every_steps": 10**9, "max_steps": 10**9, "max_completion_length": 1 << 20,
             "max_response_length": 1 << 20, "response_length": 1 << 20}
DEFAULT_COUNT_MAX = 10**9
NOT_PREDICTABLE = "not predictable from this run"
GENERATION_LEAVES = {"num_generations", "n"}
TRUNCATION_LEAVES = {"max_completion_length", "max_response_length", "response_length"}
CODE_SUFFIXES = (".py", ".sh", ".ipynb", ".cpp", ".c", ".rs", ".js", ".ts")


def find_value(run: Run, file: str, key: str) -> ConfigValue | None:
    for cv in run.config_values:
        if cv.file == file and key in (cv.key, cv.alias):
            return cv
    return None


def check(facts: Facts, file: str, key: str, to: Any) -> tuple[ConfigValue | None, str | None]:
    """(the config entry, None) when the change may be shown; (None, reason) otherwise."""
    run = facts.run
    if file.endswith(CODE_SUFFIXES):
        return None, "training code is never a target; only config values are"
    if file not in run.config_files():
        return None, "not a config file of this run"
    cv = find_value(run, file, key)
    if cv is None:
        return None, f"no key {key} in {file}"
    if number(cv.value) is None:
        return None, f"{key} does not hold a number"
    new = number(to)
    if new is None or not math.isfinite(new):
        return None, "the new value is not a number"
    leaf = cv.leaf
    parent = cv.name.rsplit(".", 2)[-2] if cv.name.count(".") >= 1 else ""
    if leaf in REAL_KEYS:
        if new < 0 or (leaf == "temperature" and new == 0):
            return None, f"{leaf} must be {'> 0' if leaf == 'temperature' else '>= 0'}"
    elif leaf in COUNT_KEYS or cv.name.endswith("rollout.n") or (isinstance(cv.value, int) and parent != "weights"):
        top = COUNT_MAX.get(leaf, DEFAULT_COUNT_MAX)
        if new < 1 or int(new) != new or new > top:
            return None, f"a count must be an integer from 1 to {top:,}"
    elif parent == "weights" or ".weights." in f".{cv.name}":
        if new < 0:
            return None, "a weight must be >= 0"
    elif leaf == "candidate_score_threshold":
        lo, hi = facts.score_range
        if not lo <= new <= hi:
            return None, f"outside the score range [{lo:g}, {hi:g}]"
    elif (leaf in UNIT_KEYS or any(t in leaf for t in ("threshold", "share", "ratio", "rate"))) and not 0.0 <= new <= 1.0:
        return None, "a threshold or share must be in 0..1"
    return cv, None


@dataclass
class Simulation:
    """The run's numbers with a set of changes applied together."""

    values: dict[str, float] = field(default_factory=dict)  # leaf or weights.<name> -> value
    predicted: dict[str, dict[str, Any]] = field(default_factory=dict)
    meets: dict[str, bool | None] = field(default_factory=dict)


def simulate(facts: Facts, changes: list[tuple[ConfigValue, float]]) -> Simulation:
    run, rules = facts.run, facts.rules
    sim = Simulation()
    by_name = {cv.name: (cv, v) for cv, v in changes}
    leaf_new = {cv.leaf: v for cv, v in changes}
    # filter thresholds
    if run.filter_stats is not None and ({"easy_threshold", "unsolvable_threshold"} & set(leaf_new)):
        easy = leaf_new.get("easy_threshold", facts.number("easy_threshold"))
        uns = leaf_new.get("unsolvable_threshold", facts.number("unsolvable_threshold"))
        acc = run.filter_stats.frame["accuracy"].to_numpy(dtype=float)
        out = whatif.filter_outcome(acc, facts.band, easy, uns)
        now = whatif.filter_outcome(acc, facts.band, facts.number("easy_threshold"), facts.number("unsolvable_threshold"))
        filter_pred = {"band_share_after_filter": rnd(out.band_share_after_filter), "kept": out.kept,
                       "band_questions_before": now.band_kept, "band_questions_after": out.band_kept}
        # a change that meets the share by dropping more than half of the band is not "a little" (BAR-RAG 5.4)
        filter_ok = (rules["target_band_share_lo"] <= out.band_share_after_filter <= rules["target_band_share_hi"]
                     and out.band_kept >= rules["suggest_band_keep_min"] * now.band_kept - 1e-9)
        for leaf in ("easy_threshold", "unsolvable_threshold"):
            sim.predicted[leaf], sim.meets[leaf] = filter_pred, filter_ok
    # reward weights
    w, wcv = facts.weights, facts.weights_cv
    wchanges = {name.rsplit(".", 1)[-1]: v for name, (cv, v) in by_name.items()
                if wcv is not None and name.startswith(wcv.name + ".")}
    if wchanges:
        new_w = dict(w) | wchanges
        last = facts.last_selector
        pred: dict[str, Any] = {"weights": new_w}
        ok: bool | None = None
        if last is not None and last.history is not None:
            frame = last.samples.frame if last.samples is not None else last.history.frame
            comps = [c for c in new_w if c in frame.columns]
            shares = rewards.shares_from_cov(rewards.covariance(frame, comps, last.samples is not None), comps, new_w)
            pred["shares"] = {k: rnd(v) for k, v in shares.items()}
            if "boundary" in shares:
                pred["boundary_share"] = rnd(shares["boundary"])
                ok = shares["boundary"] >= rules["boundary_share_min"]
                if new_w.get("boundary", 0) > 0 and "format" in new_w:
                    ratio = new_w["format"] / new_w["boundary"]
                    pred["format_boundary_ratio"] = rnd(ratio)
                    ok = ok and ratio < rules["format_boundary_ratio"]
        for name in wchanges:
            sim.predicted[f"weights.{name}"], sim.meets[f"weights.{name}"] = pred, ok
    for leaf in ("rollouts_per_question", "boundary_rollouts"):
        if leaf in leaf_new:
            n = int(leaf_new[leaf])
            sim.predicted[leaf] = {"rollouts": n, "p_true_half_outside_band": rnd(reliability(n, facts.band).p_outside_band)}
            sim.meets[leaf] = n >= rules["min_rollouts"]
    if "calibrate_every_steps" in leaf_new:
        sim.predicted["calibrate_every_steps"] = {"interval": int(leaf_new["calibrate_every_steps"])}
        sim.meets["calibrate_every_steps"] = leaf_new["calibrate_every_steps"] >= rules["calibration_min_interval"]
    _simulate_trainer(facts, changes, sim)
    if "candidate_score_threshold" in leaf_new and run.solver_scores is not None:
        thr = leaf_new["candidate_score_threshold"]
        frame = run.solver_scores.frame
        sel = frame["score"].to_numpy(dtype=float) >= thr
        gold = frame["gold_pass"].astype(bool).to_numpy()
        n = int(sel.sum())
        share = float((~gold[sel]).mean()) if n else 0.0
        sim.predicted["candidate_score_threshold"] = {"candidates": n, "confirmed_share": rnd(share)}
        sim.meets["candidate_score_threshold"] = n > 0 and share >= rules["confirmed_ratio_min"]
    return sim


def _simulate_trainer(facts: Facts, changes: list[tuple[ConfigValue, float]], sim: Simulation) -> None:
    """Trainer keys: the zero-variance share from per-prompt pass rates, a lower bound of the clipped share from
    per-sample lengths; anything else the data cannot predict says so and is never shown as checked."""
    rollouts = facts.run.rollouts.frame if facts.run.rollouts is not None else None
    for cv, value in changes:
        leaf = cv.leaf
        if leaf not in REAL_KEYS and leaf not in GENERATION_LEAVES and leaf not in TRUNCATION_LEAVES:
            continue
        if leaf in GENERATION_LEAVES and (leaf != "n" or cv.name.endswith("rollout.n")) and rollouts is not None:
            rates = pass_rates(rollouts["prompt"].tolist(), rollouts["score"].to_numpy())
            now = number(cv.value)
            sim.predicted[leaf] = {
                "zero_variance_share": rnd(zero_variance_share(rates, int(value)), 4),
                "zero_variance_share_now": rnd(zero_variance_share(rates, int(now)), 4) if now else None,
                "prompts": len(rates), "source": facts.run.rollouts.source if facts.run.rollouts else None}
            sim.meets[leaf] = zero_variance_share(rates, int(value)) < facts.rules["zero_std_share_max"]
        elif leaf in TRUNCATION_LEAVES and rollouts is not None and "length" in rollouts.columns:
            lengths = rollouts["length"].to_numpy(dtype=float)
            # samples cut at the old cap are censored: their true length is unknown, so this is a lower bound
            sim.predicted[leaf] = {"clipped_share_at_least": rnd(float((lengths >= value).mean()), 4),
                                   "samples": len(lengths)}
            sim.meets[leaf] = None
        else:
            sim.predicted[leaf] = {"note": NOT_PREDICTABLE}
            sim.meets[leaf] = None


def _sim_key(cv: ConfigValue, facts: Facts) -> str:
    wcv = facts.weights_cv
    if wcv is not None and cv.name.startswith(wcv.name + "."):
        return f"weights.{cv.leaf}"
    return cv.leaf


def finalize(facts: Facts, proposals: list[Proposal]) -> tuple[list[Adjustment], list[Rejected]]:
    """Check each proposal, then what-if all accepted ones together (the first proposal for a key counts)."""
    accepted: list[tuple[ConfigValue, Proposal]] = []
    rejected: list[Rejected] = []
    seen: set[tuple[str, str]] = set()
    for p in proposals:
        cv, reason = check(facts, str(p.file), str(p.key), p.to)
        if cv is None:
            rejected.append(Rejected(str(p.file), str(p.key), p.to, reason or "rejected"))
            continue
        if (cv.file, cv.key) in seen:
            continue
        seen.add((cv.file, cv.key))
        accepted.append((cv, p))
    sim = simulate(facts, [(cv, float(p.to)) for cv, p in accepted])
    out = []
    for cv, p in accepted:
        k = _sim_key(cv, facts)
        to = p.to
        if isinstance(cv.value, int) and not isinstance(cv.value, bool) and float(to).is_integer():
            to = int(to)
        out.append(Adjustment(cv.file, cv.key, cv.value, to, p.rationale, sim.predicted.get(k, {}), sim.meets.get(k),
                              list(p.findings), p.source))
    return out, rejected


def offline_proposals(findings: list[Finding]) -> list[Proposal]:
    out: list[Proposal] = []
    for f in findings:
        s = f.suggestion
        while s:
            out.append(Proposal(s["file"], s["key"], s["to"], _rationale(f), (f.id,)))
            s = s.get("also")
    return out


def _rationale(f: Finding) -> str:
    rule = REGISTRY.get(f.id)
    return rule.rationale if rule is not None and rule.rationale else f.title
