"""Config lookups the finding rules share (with the spec's defaults)."""

from __future__ import annotations

from typing import Any

from triage_agent.runs.model import ConfigValue, Run


def number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def band(run: Run) -> tuple[float, float]:
    value = run.config_value("boundary_band")
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(number(v) is not None for v in value):
        return float(value[0]), float(value[1])
    return 0.4, 0.6  # spec default


def score_range(run: Run) -> tuple[float, float]:
    v = run.config_value("score_range")
    if isinstance(v, (list, tuple)) and len(v) == 2 and all(number(x) is not None for x in v) and v[1] > v[0]:
        return float(v[0]), float(v[1])
    return 0.0, 1.0  # spec default


def target_accuracy(run: Run) -> float:
    v = number(run.config_value("target_accuracy"))
    return 0.5 if v is None else v


def weights(run: Run) -> tuple[dict[str, float], ConfigValue | None]:
    cv = run.config("weights")
    if cv is None or not isinstance(cv.value, dict):
        return {}, None
    out = {str(k): float(v) for k, v in cv.value.items() if number(v) is not None}
    return out, cv


def suggestion(cv: ConfigValue, to: Any) -> dict[str, Any]:
    return {"file": cv.file, "key": cv.key, "to": to}


def r(x: float | None, digits: int = 3) -> float | None:
    return None if x is None else round(float(x), digits)
