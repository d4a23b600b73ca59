"""The model's final answer: parse, check against the contract, then check every adjustment."""

from __future__ import annotations

import html
import json
import re
from typing import Any

from triage_agent import safejson
from triage_agent.findings import suggest
from triage_agent.findings.facts import Facts
from triage_agent.findings.model import Adjustment, Diagnosis, Rejected

ANSWER_SCHEMA = {
    "type": "json_schema",
    "json_schema": {"name": "triage_answer", "schema": {
        "type": "object", "required": ["diagnosis", "adjustments"], "additionalProperties": False,
        "properties": {
            "diagnosis": {"type": "array", "items": {
                "type": "object", "required": ["cause", "findings", "evidence", "confidence"],
                "properties": {"cause": {"type": "string"}, "findings": {"type": "array", "items": {"type": "string"}},
                               "evidence": {"type": "string"}, "confidence": {"type": "number"}}}},
            "adjustments": {"type": "array", "items": {
                "type": "object", "required": ["file", "key", "to", "rationale"],
                "properties": {"file": {"type": "string"}, "key": {"type": "string"}, "to": {"type": "number"},
                               "rationale": {"type": "string"}}}}}}},
}


def extract_json(text: str) -> Any:
    """The JSON object in a message: bare, fenced, or the outermost braces in prose."""
    text = text.strip()
    if "&#34;" in text or "&quot;" in text:  # HTML-escaped JSON from some chat templates
        text = html.unescape(text)
    fenced = re.search(r"```(?:json)?\s*(\{.*\})\s*```", text, re.S)
    candidates = [text] + ([fenced.group(1)] if fenced else [])
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start:end + 1])
    for c in candidates:
        try:
            return safejson.loads(c)
        except json.JSONDecodeError:
            continue
    raise ValueError("no JSON object found")


def check_contract(obj: Any) -> str | None:
    """None when `obj` has the contract's shape; else what is wrong, in one sentence for the model."""
    if not isinstance(obj, dict):
        return "the answer is not a JSON object"
    if not isinstance(obj.get("diagnosis"), list) or not isinstance(obj.get("adjustments"), list):
        return "the object needs the lists `diagnosis` and `adjustments`"
    for i, d in enumerate(obj["diagnosis"]):
        if not isinstance(d, dict) or not isinstance(d.get("cause"), str):
            return f"diagnosis[{i}] needs a string `cause`"
        if not isinstance(d.get("findings", []), list):
            return f"diagnosis[{i}].findings must be a list of finding ids"
        conf = d.get("confidence", 0.5)
        if isinstance(conf, bool) or not isinstance(conf, (int, float)) or not 0 <= conf <= 1:
            return f"diagnosis[{i}].confidence must be a number between 0 and 1"
    for i, a in enumerate(obj["adjustments"]):
        if not isinstance(a, dict) or not all(k in a for k in ("file", "key", "to")):
            return f"adjustments[{i}] needs `file`, `key` and `to`"
    return None


def parse_answer(text: str) -> tuple[dict[str, Any] | None, str | None]:
    try:
        obj = extract_json(text)
    except ValueError as exc:
        return None, str(exc)
    problem = check_contract(obj)
    return (obj, None) if problem is None else (None, problem)


def accept(facts: Facts, obj: dict[str, Any], known_ids: set[str]) -> tuple[list[Diagnosis], list[Adjustment], list[Rejected]]:
    """Turn a contract-shaped answer into checked diagnosis and adjustments (what-if filled in by the tool)."""
    diagnosis = [Diagnosis(str(d["cause"]), [f for f in d.get("findings", []) if f in known_ids],
                           str(d.get("evidence", "")), float(d.get("confidence", 0.5))) for d in obj["diagnosis"]]
    proposals = [{"file": a.get("file"), "key": a.get("key"), "to": a.get("to"), "rationale": a.get("rationale", "")}
                 for a in obj["adjustments"]]
    adjustments, rejected = suggest.finalize(facts, proposals)
    for a in adjustments:
        a.source = "model"
    return diagnosis, adjustments, rejected
