"""Findings of selector/generator runs (findings.md, first table)."""

from __future__ import annotations

from triage_agent.analysis import filter as filt
from triage_agent.analysis import rewards, rounds, whatif
from triage_agent.analysis.generator import Trajectory, generator_round
from triage_agent.analysis.rollouts import reliability
from triage_agent.analysis.stats import spearman, swing_ratio
from triage_agent.findings.common import band, number, r, suggestion, target_accuracy, weights
from triage_agent.findings.model import Finding
from triage_agent.findings.rules import Rules, ge, gt
from triage_agent.runs.model import Round, Run


def check(run: Run, rules: Rules) -> list[Finding]:
    out: list[Finding] = []
    out += filter_findings(run, rules)
    out += reward_findings(run, rules)
    out += rollout_findings(run, rules)
    out += round_findings(run, rules)
    out += generator_findings(run, rules)
    return out


def filter_findings(run: Run, rules: Rules) -> list[Finding]:
    if run.filter_stats is None:
        return []
    frame, src = run.filter_stats.frame, run.filter_stats.source
    b = band(run)
    a = filt.audit(frame, b)
    out: list[Finding] = []
    easy_cv, uns_cv = run.config("easy_threshold"), run.config("unsolvable_threshold")
    easy, uns = (number(easy_cv.value) if easy_cv else None), (number(uns_cv.value) if uns_cv else None)
    if a.share_after is not None:
        evidence = {"band": list(b), "share_before": r(a.share_before), "share_after": r(a.share_after),
                    "band_before": a.band_before, "band_after": a.band_after, "questions": a.n_total,
                    "kept": a.n_kept, "source": src}
        lowered = (ge(a.share_before - a.share_after, rules["band_share_drop"])
                   or (a.band_before > 0 and a.band_after is not None
                       and ge(a.band_before - a.band_after, rules["band_dropped_fraction"] * a.band_before)))
        off = not ge(a.share_after, rules["band_share_min"]) and lowered
        over = gt(a.share_after, rules["band_share_max"])
        if off or over:
            sug = _threshold_suggestion(run, frame, b, easy, uns, rules)
            if sug:
                evidence["predicted"] = sug[1]
            fid = "filter.boundary_starved" if off else "filter.boundary_overloaded"
            title = (f"The filter left {a.share_after:.0%} boundary questions ({a.share_before:.0%} before it)"
                     if off else f"{a.share_after:.0%} of the kept questions sit in the boundary band "
                                 f"(more than {rules['band_share_max']:.0%})")
            out.append(Finding(fid, "high" if off else "medium", title, evidence, sug[0] if sug else None))
    check_ = filt.rule_check(frame, easy, uns)
    if check_ is not None and gt(check_.rate, rules["rule_mismatch_rate"]):
        out.append(Finding(
            "filter.rule_mismatch", "high",
            f"{check_.n_mismatch} of {check_.n_checked} kept flags ({check_.rate:.1%}) disagree with the "
            "config's filter rule",
            {"mismatch": check_.n_mismatch, "checked": check_.n_checked, "rate": r(check_.rate, 4),
             "kept_but_should_drop": check_.kept_but_should_drop,
             "dropped_but_should_keep": check_.dropped_but_should_keep,
             "easy_threshold": easy, "unsolvable_threshold": uns, "examples": check_.examples,
             "source": src, "config": (easy_cv or uns_cv).file if (easy_cv or uns_cv) else None}))
    return out


def _threshold_suggestion(run: Run, frame, b, easy, uns, rules: Rules):  # type: ignore[no-untyped-def]
    acc = frame["accuracy"].to_numpy(dtype=float)
    best = whatif.search_thresholds(acc, b, easy, uns, (rules["target_band_share_lo"], rules["target_band_share_hi"]))
    predicted = {"band_share_after_filter": r(best.band_share_after_filter), "kept": best.kept}
    for leaf, new, old in (("easy_threshold", best.easy_threshold, easy),
                           ("unsolvable_threshold", best.unsolvable_threshold, uns)):
        cv = run.config(leaf)
        if cv is not None and new is not None and old is not None and abs(new - old) > 1e-9:
            sug = suggestion(cv, new)
            other = _other(run, leaf, best)
            if other:  # both thresholds move; the second rides along as `also`
                sug["also"] = other
            return sug, predicted
    return None


def _other(run: Run, leaf: str, best: whatif.FilterOutcome) -> dict | None:
    other = "unsolvable_threshold" if leaf == "easy_threshold" else "easy_threshold"
    cv = run.config(other)
    new = best.unsolvable_threshold if other == "unsolvable_threshold" else best.easy_threshold
    if cv is None or new is None or number(cv.value) is None or abs(new - float(cv.value)) < 1e-9:
        return None
    return suggestion(cv, new)


def last_selector(run: Run) -> Round | None:
    rounds_ = [x for x in run.rounds_of("selector") if x.history is not None]
    return rounds_[-1] if rounds_ else None


def reward_findings(run: Run, rules: Rules) -> list[Finding]:
    out: list[Finding] = []
    w, wcv = weights(run)
    last = last_selector(run)
    bal = None
    if last is not None and w and last.history is not None:
        bal = rewards.balance(last.history.frame, last.samples.frame if last.samples else None, w,
                              last.history.source, last.samples.source if last.samples else None)
    ratio = None
    if w.get("boundary", 0) > 0 and "format" in w:
        ratio = w["format"] / w["boundary"]
    share = bal.shares.get("boundary") if bal else None
    if (ratio is not None and ge(ratio, rules["format_boundary_ratio"])) or (
            share is not None and not ge(share, rules["boundary_share_min"])):
        evidence = {"weights": w, "format_boundary_ratio": r(ratio), "boundary_share": r(share),
                    "shares": {k: r(v) for k, v in (bal.shares if bal else {}).items()},
                    "approximate": bal.approximate if bal else None,
                    "source": bal.source if bal else (wcv.file if wcv else None)}
        sug = None
        if bal is not None and wcv is not None and last is not None and last.history is not None:
            frame = last.samples.frame if last.samples else last.history.frame
            comps = [c for c in w if c in frame.columns]
            cov = rewards.covariance(frame, comps, within_step=last.samples is not None)
            change = whatif.search_boundary_weight(cov, comps, w, "boundary", rules["boundary_share_min"],
                                                   rules["format_boundary_ratio"], "format" if "format" in w else None)
            if change is not None:
                sug = {"file": wcv.file, "key": f"{wcv.key}.{change.key}", "to": change.to}
                evidence["predicted"] = {"shares": {k: r(v) for k, v in change.shares.items()}}
        title = (f"The boundary reward carries {share:.0%} of the reward signal" if share is not None
                 else "The boundary reward is outweighed")
        if ratio is not None and ge(ratio, rules["format_boundary_ratio"]):
            title += f"; format weight is {ratio:g}x the boundary weight"
        out.append(Finding("reward.boundary_suppressed", "high", title, evidence, sug))
    if last is not None and last.history is not None and "boundary" in last.history.frame.columns:
        frame = last.history.frame
        vals = frame["boundary"].to_numpy(dtype=float)
        swing = swing_ratio(vals)
        rho = spearman(frame["step"].to_numpy(dtype=float), vals)
        if swing is not None and ge(swing, rules["swing_ratio_max"]) and (rho is None or rho < rules["boundary_rho_min"]):
            out.append(Finding(
                "reward.boundary_oscillating", "medium",
                f"The boundary reward of {last.name} swings (swing ratio {swing:.2f}) without rising "
                f"(rho {0.0 if rho is None else rho:.2f})",
                {"round": last.name, "swing_ratio": r(swing), "rho_step": r(rho), "steps": len(vals),
                 "source": last.history.source}))
    return out


def rollout_findings(run: Run, rules: Rules) -> list[Finding]:
    low = []
    for leaf in ("rollouts_per_question", "boundary_rollouts"):
        cv = run.config(leaf)
        v = number(cv.value) if cv else None
        if cv is not None and v is not None and v < rules["min_rollouts"]:
            low.append((cv, v))
    if not low:
        return []
    worst = min(v for _, v in low)
    sev = "high" if worst <= rules["rollouts_high"] else "medium"
    b = band(run)
    evidence = {c.leaf: int(v) for c, v in low}
    evidence["p_true_half_outside_band"] = {c.leaf: r(reliability(int(v), b).p_outside_band) for c, v in low if v >= 1}
    evidence["source"] = low[0][0].file
    to = suggested_rollouts(int(rules["min_rollouts"]), b)
    ordered = sorted(low, key=lambda t: t[1])
    sug = suggestion(ordered[0][0], to)
    if len(ordered) > 1:
        sug["also"] = suggestion(ordered[1][0], to)
    names = ", ".join(f"{c.leaf} = {int(v)}" for c, v in low)
    return [Finding("rollouts.too_few", sev, f"Too few rollouts: {names} (at least {rules['min_rollouts']})",
                    evidence, sug)]


def suggested_rollouts(minimum: int, b: tuple[float, float]) -> int:
    """The smallest count >= minimum whose estimate of a true-0.5 question lands in the band at least half the time."""
    for n in range(minimum, 65):
        if reliability(n, b).p_outside_band <= 0.5:
            return n
    return minimum


def round_findings(run: Run, rules: Rules) -> list[Finding]:
    out: list[Finding] = []
    sel = run.rounds_of("selector")
    frozen = []
    for a, b in zip(sel, sel[1:]):
        ga, gb = a.meta.get("generator_checkpoint"), b.meta.get("generator_checkpoint")
        if ga is not None and ga == gb:
            frozen.append({"rounds": [a.name, b.name], "generator_checkpoint": ga, "source": b.meta_source})
    for g in run.rounds_of("generator"):
        ci, co = g.meta.get("checkpoint_in"), g.meta.get("checkpoint_out")
        if ci is not None and ci == co:
            frozen.append({"round": g.name, "checkpoint_in": ci, "checkpoint_out": co, "source": g.meta_source})
    if frozen:
        out.append(Finding("rounds.generator_frozen", "high",
                           f"The generator did not change between rounds ({len(frozen)} sign(s))",
                           {"cases": frozen[:5], "source": frozen[0]["source"]}))
    w, _ = weights(run)
    stale = []
    for a, b in zip(sel, sel[1:]):
        if a.history is None or b.history is None:
            continue
        comps = rewards.component_columns(a.history.frame, w)
        diffs = rounds.diff_components(a.history.frame, b.history.frame, comps)
        if diffs and all(not gt(d.rel_change, rules["stale_rel_change"]) and d.curve_r is not None
                         and ge(d.curve_r, rules["stale_curve_r"]) for d in diffs):
            stale.append({"rounds": [a.name, b.name],
                          "max_rel_change": r(max(d.rel_change for d in diffs), 4),
                          "min_curve_r": r(min(d.curve_r or 0.0 for d in diffs)),
                          "source": b.history.source})
    if stale:
        s = stale[-1]
        out.append(Finding("rounds.selector_stale", "medium",
                           f"Selector rounds {s['rounds'][0]} and {s['rounds'][1]} learned the same thing "
                           f"(means within {s['max_rel_change']:.1%}, curves r >= {s['min_curve_r']:.2f})",
                           {"cases": stale[:5], "source": s["source"]}))
    return out


def trajectory(run: Run) -> Trajectory | None:
    gens = [g for g in run.rounds_of("generator") if g.history is not None and "accuracy" in g.history.frame.columns]
    if not gens:
        return None
    return Trajectory(target_accuracy(run), [
        generator_round(g.index, g.history.frame["accuracy"].to_numpy(dtype=float), g.meta.get("checkpoint_in"),
                        g.meta.get("checkpoint_out")) for g in gens if g.history is not None])


def generator_findings(run: Run, rules: Rules) -> list[Finding]:
    traj = trajectory(run)
    if traj is None or traj.last is None:
        return []
    out: list[Finding] = []
    last, prev = traj.last, traj.previous
    src = next(g.history.source for g in run.rounds_of("generator") if g.index == last.index and g.history)
    gap = last.end - traj.target
    moved = traj.moved_toward_target()
    if gt(abs(gap), rules["target_gap"]) and moved is not None and not ge(moved, rules["target_progress_min"]):
        out.append(Finding(
            "generator.accuracy_off_target", "medium",
            f"The generator ends at {last.end:.0%} accuracy, target {traj.target:.0%}, and is not closing the gap",
            {"end_accuracy": r(last.end), "target": traj.target, "gap": r(gap),
             "previous_end": r(prev.end) if prev else None, "moved_toward_target": r(moved),
             "round": f"generator_round{last.index}", "source": src}))
    if prev is not None and ge(prev.end - last.end, rules["regression_drop"]):
        out.append(Finding(
            "generator.accuracy_regressed", "medium",
            f"Generator accuracy fell from {prev.end:.0%} to {last.end:.0%} in its last round",
            {"previous_end": r(prev.end), "end_accuracy": r(last.end), "drop": r(prev.end - last.end),
             "round": f"generator_round{last.index}", "source": src}))
    return out

