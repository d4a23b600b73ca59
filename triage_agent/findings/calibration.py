"""Findings of solver-calibration runs (findings.md, second table).

Each finding names its troubleshooting stage (symptom, inputs, candidate filter, update
magnitude, validation) and whether it concerns signal generation (the solver's scoring)
or signal use (what the policy learns from it).
"""

from __future__ import annotations

from dataclasses import dataclass

from triage_agent.analysis import calibration as cal
from triage_agent.findings.common import number, r, score_range, suggestion
from triage_agent.findings.model import Finding
from triage_agent.findings.rules import Rules, ge, gt
from triage_agent.runs.model import Run

GENERATION, USE = "signal generation", "signal use"
STAGES = [
    ("symptom", "Does the proxy reward part from the gold signal?"),
    ("inputs", "Are candidates well sampled, and is the solver robust to surface changes?"),
    ("candidate filter", "Are the mined candidates misjudged, or merely hard?"),
    ("update magnitude", "Does each calibration move the solver too much or too often?"),
    ("validation", "Is the validation metric independent of the solver's own score?"),
]


def check(run: Run, rules: Rules) -> list[Finding]:
    out: list[Finding] = []
    if run.eval_history is not None and {"proxy_reward", "gold_pass_rate"} <= set(run.eval_history.frame.columns):
        pg = cal.proxy_gold(run.eval_history.frame, rules["proxy_rho_min"], rules["gold_rho_max"])
        trend = pg.rho_proxy is not None and pg.rho_proxy >= rules["proxy_rho_min"] and (
            pg.rho_gold is None or pg.rho_gold <= rules["gold_rho_max"])
        late = pg.rho_second_half is not None and pg.rho_second_half <= rules["second_half_rho_max"]
        if trend or late:
            out.append(Finding(
                "hacking.proxy_gold_divergence", "high",
                f"Proxy reward rose {pg.proxy_first:.2f} → {pg.proxy_last:.2f} while gold pass rate went "
                f"{pg.gold_first:.2f} → {pg.gold_last:.2f}",
                {"rho_step_proxy": r(pg.rho_proxy), "rho_step_gold": r(pg.rho_gold),
                 "rho_proxy_gold_second_half": r(pg.rho_second_half), "divergence_step": pg.divergence_step,
                 "points": pg.n, "source": run.eval_history.source},
                concerns=USE, stage="symptom"))
    lo, hi = score_range(run)
    if run.solver_scores is not None:
        frame = run.solver_scores.frame
        thr_cv = run.config("candidate_score_threshold")
        hs = cal.high_score_failures(frame, number(thr_cv.value) if thr_cv else None, rules["high_score_quantile"])
        if hs.n_candidates and ge(hs.fail_share, rules["high_score_fail_share"]):
            sev = "high" if ge(hs.fail_share, rules["high_score_fail_share_high"]) else "medium"
            out.append(Finding(
                "hacking.high_score_failures", sev,
                f"{hs.fail_share:.0%} of samples scored >= {hs.threshold:.2f} ({hs.threshold_source}) fail the gold check",
                {"threshold": r(hs.threshold), "threshold_source": hs.threshold_source, "candidates": hs.n_candidates,
                 "failing": hs.n_failing, "fail_share": r(hs.fail_share), "examples": hs.examples,
                 "source": run.solver_scores.source},
                concerns=GENERATION, stage="symptom"))
        rel = cal.reliability(frame["score"].to_numpy(dtype=float), frame["gold_pass"].astype(bool).to_numpy(),
                              (lo, hi), int(rules["ece_bins"]))
        if ge(rel.ece, rules["ece_max"]):
            out.append(Finding(
                "calibration.miscalibrated", "medium",
                f"The solver's scores are miscalibrated against gold (ECE {rel.ece:.2f})",
                {"ece": r(rel.ece), "bins": rel.bins, "samples": len(frame), "source": run.solver_scores.source},
                concerns=GENERATION, stage="validation"))
    interval_cv = run.config("calibrate_every_steps")
    cad = cal.cadence(run.calibration_events.frame if run.calibration_events else None,
                      int(interval_cv.value) if interval_cv and number(interval_cv.value) else None)
    ev_src = run.calibration_events.source if run.calibration_events else (interval_cv.file if interval_cv else None)
    if (cad.min_interval is not None and cad.min_interval < rules["calibration_min_interval"]
            and cad.mean_flip_rate is not None and ge(cad.mean_flip_rate, rules["flip_rate_max"])):
        out.append(Finding(
            "calibration.too_frequent", "medium",
            f"Calibrations {cad.min_interval} steps apart flip {cad.mean_flip_rate:.0%} of verdicts each",
            {"min_interval": cad.min_interval, "config_interval": cad.config_interval,
             "event_intervals": cad.event_intervals[:10], "mean_flip_rate": r(cad.mean_flip_rate), "source": ev_src},
            suggestion(interval_cv, int(rules["calibration_min_interval"])) if interval_cv else None,
            concerns=USE, stage="update magnitude"))
    if cad.range_move is not None and gt(cad.range_move, rules["interface_range_change"]):
        out.append(Finding(
            "calibration.interface_changed", "medium",
            f"The solver's output range moved by {cad.range_move:.0%} of its first range across calibrations",
            {"range_move": r(cad.range_move), "ranges": [list(x) for x in cad.ranges[:10]], "source": ev_src},
            concerns=USE, stage="update magnitude"))
    if cad.confirmed_ratio is not None and not ge(cad.confirmed_ratio, rules["confirmed_ratio_min"]):
        evidence = {"confirmed": cad.confirmed, "candidates": cad.candidates, "ratio": r(cad.confirmed_ratio),
                    "source": ev_src}
        sug = None
        thr_cv = run.config("candidate_score_threshold")
        if run.solver_scores is not None:
            pick = cal.threshold_for_confirmed_share(run.solver_scores.frame, rules["confirmed_ratio_min"],
                                                     max(10, len(run.solver_scores.frame) // 100))
            if pick is not None:
                evidence["predicted"] = {"threshold": pick[0], "confirmed_share": r(pick[1]), "candidates": pick[2]}
                if thr_cv is not None and pick[0] > (number(thr_cv.value) or 0):
                    sug = suggestion(thr_cv, pick[0])
        out.append(Finding(
            "calibration.candidates_too_loose", "medium",
            f"Only {cad.confirmed_ratio:.0%} of calibration candidates were confirmed misjudged",
            evidence, sug, concerns=GENERATION, stage="candidate filter"))
    if run.perturbations is not None:
        mean_delta, by_kind = cal.perturbation_sensitivity(run.perturbations.frame, (lo, hi))
        if ge(mean_delta, rules["perturbation_delta_max"]):
            worst = sorted(by_kind.items(), key=lambda kv: -kv[1])[:5]
            out.append(Finding(
                "calibration.surface_sensitive", "medium",
                f"Meaning-preserving rewrites move the solver's score by {mean_delta:.0%} of its range on average",
                {"mean_abs_delta": r(mean_delta), "by_perturbation": {k: r(v) for k, v in worst},
                 "source": run.perturbations.source},
                concerns=GENERATION, stage="inputs"))
    return out


@dataclass(frozen=True)
class Stage:
    stage: str
    question: str
    findings: list[str]
    status: str


def troubleshooting(run: Run, findings: list[Finding]) -> list[Stage]:
    """The order in which to look at a calibration run, with what each stage found."""
    out = []
    for stage, question in STAGES:
        ids = [f.id for f in findings if f.stage == stage]
        status = "problem" if ids else "ok"
        if stage == "validation" and run.eval_history is not None:
            cols = set(run.eval_history.frame.columns)
            if "gold_pass_rate" not in cols and "human_pass_rate" not in cols:
                status = "unknown: eval_history has no gold or human pass rate, only the solver's own score"
        if stage == "inputs" and run.perturbations is None and not ids:
            status = "unknown: no perturbations table"
        out.append(Stage(stage, question, ids, status))
    return out
