"""The JSON report document (spec: report.md, schema triage.report/v1)."""

from __future__ import annotations

import math
from typing import Any

from triage_agent import redact
from triage_agent.report import Report

SCHEMA = "triage.report/v1"


def _clean(value: Any) -> Any:
    """JSON has no NaN: non-finite floats become null; numpy scalars become Python numbers."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def rounds_summary(report: Report) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for rd in report.run.rounds:
        out.setdefault(rd.role, []).append(rd.index)
    return {k: sorted(v) for k, v in out.items()}


def document(report: Report) -> dict[str, Any]:
    run = report.run
    doc = {
        "schema": SCHEMA,
        "run": {"path": run.where, "kind": run.kind, "paradigm": run.paradigm,
                "paradigm_evidence": list(run.paradigm_evidence), "rounds": rounds_summary(report),
                "lifecycle": {"state": run.lifecycle, "evidence": run.lifecycle_evidence},
                "files": [{"path": f.path, "role": f.role,
                           **({"read_as": f.read_as} if f.read_as else {}),
                           **({"rows": f.rows} if f.rows is not None else {})} for f in run.files]},
        "findings": [
            {"id": f.id, "severity": f.severity, "title": f.title, "evidence": f.evidence,
             **({"suggestion": {k: v for k, v in f.suggestion.items()}} if f.suggestion else {}),
             **({"concerns": f.concerns} if f.concerns else {}), **({"stage": f.stage} if f.stage else {}),
             **({"fix": f.fix} if f.fix else {})}
            for f in report.findings],
        "diagnosis": [{"cause": d.cause, "findings": d.findings, "evidence": d.evidence, "confidence": d.confidence}
                      for d in report.diagnosis],
        "adjustments": [{"file": a.file, "key": a.key, "from": a.from_, "to": a.to, "rationale": a.rationale,
                         "predicted": a.predicted, "meets_target": a.meets_target, "findings": a.findings,
                         "source": a.source, "default": a.default}
                        for a in report.adjustments],
        "rejected": [{"file": x.file, "key": x.key, "to": x.to, "reason": x.reason} for x in report.rejected],
        **({"troubleshooting": [{"stage": t.stage, "question": t.question, "findings": t.findings,
                                  "status": t.status} for t in report.troubleshooting]}
           if report.troubleshooting else {}),
        "source": report.source,
        "notes": report.notes,
    }
    cleaned: dict[str, Any] = redact.obj(_clean(doc))
    return cleaned
