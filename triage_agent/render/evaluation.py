"""`triage eval` as terminal tables (ranked by score; then per paradigm) and as an HTML page (one row per model,
then one per model and paradigm)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console

from triage_agent.render.text import LiteralTable, html_text, literal

if TYPE_CHECKING:
    from triage_agent.commands.eval import EvalResult, ModelScore

COLUMNS = ("model", "score", "recall", "precision", "changes ok", "fell back", "repaired", "rejected", "requests",
           "tokens in/out", "s/report", "runs")
PARADIGM_COLUMNS = ("model", "paradigm", *COLUMNS[1:])


def _row(m: ModelScore) -> list[str]:
    s = m.summary(paradigms=False)
    correct = sum(r.correct for r in m.runs)
    return [s["model"], f"{s['score']:.2f}", f"{s['recall']:.2f} ({correct}/{s['planted']})",
            f"{s['precision']:.2f} ({correct}/{s['cited']})", f"{s['changes_pass_and_meet']:.2f} (of {s['proposed']})",
            f"{s['fallback_share']:.0%}", f"{s['repair_share']:.0%}", str(s["rejected"]), str(s["requests"]),
            f"{s['prompt_tokens']:,}/{s['completion_tokens']:,}", f"{s['seconds_per_report']:.1f}", str(s["runs"])]


def _rows(result: EvalResult) -> list[list[str]]:
    return [_row(m) for m in result.ranked()]


def _paradigm_rows(result: EvalResult) -> list[list[str]]:
    """One row per model and paradigm, models in rank order."""
    rows = []
    for m in result.ranked():
        for paradigm, sub in m.by_paradigm().items():
            row = _row(sub)
            rows.append([row[0], paradigm, *row[1:]])
    return rows


def formula(weights: dict[str, float]) -> str:
    return (f"score = {weights['recall']} x recall + {weights['precision']} x precision + {weights['changes']} x "
            f"changes that pass the checks and reach their target + {weights['no_fallback']} x (1 - fell back)")


def render(result: EvalResult, console: Console) -> None:
    t = LiteralTable(title=f"triage eval on {result.suite}", expand=False)
    for col in COLUMNS:
        t.add_column(col)
    for row in _rows(result):
        t.add_row(*row)
    console.print(t)
    per = LiteralTable(title="per paradigm (the same figures over each paradigm's runs)", expand=False)
    for col in PARADIGM_COLUMNS:
        per.add_column(col)
    for row in _paradigm_rows(result):
        per.add_row(*row)
    console.print(per)
    console.print(literal(formula(result.weights) + ". Recall and precision count the finding ids the model's causes cite, "
                          "over all runs (correct/total in brackets); each figure rests on the runs column.", "dim"))


def _html_table(columns: tuple[str, ...], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html_text(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{html_text(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def html(result: EvalResult) -> str:
    style = "body{font:14px system-ui,sans-serif;margin:24px}td,th{border:1px solid #ddd;padding:4px 8px}" \
            "table{border-collapse:collapse}"
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>triage eval</title><style>{style}</style>"
            f"</head><body><h1>triage eval: {html_text(result.suite)}</h1>{_html_table(COLUMNS, _rows(result))}"
            f"<h2>Per paradigm</h2>{_html_table(PARADIGM_COLUMNS, _paradigm_rows(result))}"
            f"<p>{html_text(formula(result.weights))}</p></body></html>")


def per_run(result: EvalResult) -> list[dict[str, Any]]:
    return [{"model": m.model, **vars(r)} for m in result.ranked() for r in m.runs]
