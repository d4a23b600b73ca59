"""The model's answer contract (spec: report.md), written once as a pydantic model.

The JSON schema sent to the endpoint (`response_format`), the validation of the model's final message and the
example the prompts show are all derived from `Answer`, so the three cannot disagree: add a field here and
the schema asks for it, the validator checks it and the example shows it.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, ValidationError

from triage_agent.findings.model import Proposal


class Cause(BaseModel):
    """One root cause of the run's trouble."""

    model_config = ConfigDict(extra="ignore")  # a model's extra keys cost nothing; a missing one is asked for

    cause: str = Field(description="the root cause, in a sentence or two")
    findings: list[str] = Field(default_factory=list, description="the finding ids this cause explains",
                                examples=[["finding id"]])
    evidence: str = Field("", description="the numbers and source files that show it")
    confidence: StrictFloat = Field(0.5, ge=0.0, le=1.0, description="between 0 and 1")


class Change(BaseModel):
    """One proposed config change: a numeric value in a config file of the run."""

    model_config = ConfigDict(extra="ignore")

    file: str = Field(description="a config file of the run, as read_config shows it")
    key: str = Field(description="the dotted key inside that file")
    to: StrictFloat = Field(description="the new value")
    rationale: str = Field("", description="why, in a sentence")

    def proposal(self) -> Proposal:
        """The typed proposal the checks and the what-if take."""
        return Proposal(self.file, self.key, self.to, self.rationale, source="model")


class Answer(BaseModel):
    """The model's final answer of `triage report`."""

    model_config = ConfigDict(extra="ignore")

    diagnosis: list[Cause] = Field(description="root causes, most important first")
    adjustments: list[Change] = Field(description="config changes that address the causes; empty when none helps")


class Changes(BaseModel):
    """The changes block of an `ask` or `chat` answer: the same typed changes as a report's."""

    model_config = ConfigDict(extra="ignore")

    adjustments: list[Change] = Field(description="config changes the answer proposes; empty when none")


def json_schema(model: type[BaseModel] = Answer) -> dict[str, Any]:
    """The model's JSON schema, self-contained (no `$ref`) and without pydantic's titles: small servers'
    grammar converters handle neither well, and titles only cost tokens."""
    raw = model.model_json_schema()
    defs = raw.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return inline(defs[node["$ref"].rsplit("/", 1)[-1]])
            return {k: inline(v) for k, v in node.items() if k not in ("title", "examples")}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    schema: dict[str, Any] = inline(raw)
    return schema


def response_format(model: type[BaseModel] = Answer) -> dict[str, Any]:
    """The `response_format` of a request that asks for this answer."""
    return {"type": "json_schema", "json_schema": {"name": f"triage_{model.__name__.lower()}",
                                                   "schema": json_schema(model)}}


def example(model: type[BaseModel] = Answer) -> str:
    """The example object the prompts show: every field, each with a placeholder of its type, one top-level
    key a line."""
    raw = model.model_json_schema()
    defs = raw.get("$defs", {})

    def sample(node: dict[str, Any]) -> Any:
        if "$ref" in node:
            node = defs[node["$ref"].rsplit("/", 1)[-1]]
        if node.get("examples"):
            return node["examples"][0]
        kind = node.get("type")
        if kind == "object":
            return {name: sample(prop) for name, prop in node.get("properties", {}).items()}
        if kind == "array":
            return [sample(node.get("items", {}))]
        return {"string": "string", "number": 0.0, "integer": 0, "boolean": False}.get(str(kind))

    top = sample(raw)
    return "{" + ",\n ".join(f"{json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in top.items()) + "}"


def validate(obj: Any, model: type[BaseModel] = Answer) -> tuple[BaseModel | None, str | None]:
    """(the typed answer, None), or (None, what is wrong in one sentence the model can act on)."""
    if not isinstance(obj, dict):
        return None, "the answer is not a JSON object"
    try:
        return model.model_validate(obj), None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"]).lstrip(".")
        more = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
        return None, f"{where or 'the object'}: {first['msg']}{more}"


__all__ = ["Answer", "Cause", "Change", "Changes", "Proposal", "example", "json_schema", "response_format", "validate"]
