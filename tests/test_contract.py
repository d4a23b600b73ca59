"""The answer contract is one pydantic model: the schema sent, the validator and the prompt's example follow it."""

from __future__ import annotations

import json

from pydantic import Field

from triage_agent.agent import answer, contract, prompts


def test_the_schema_the_validator_and_the_example_all_come_from_the_answer_model():
    schema = answer.ANSWER_SCHEMA["json_schema"]["schema"]
    assert schema == contract.json_schema(contract.Answer)
    assert set(schema["properties"]) == set(contract.Answer.model_fields) == {"diagnosis", "adjustments"}
    change = schema["properties"]["adjustments"]["items"]
    assert set(change["properties"]) == set(contract.Change.model_fields) and change["required"] == ["file", "key", "to"]
    assert "$ref" not in json.dumps(schema) and "title" not in json.dumps(schema)
    # the prompt shows the example derived from the same model, and the example is itself a valid answer
    shown = contract.example(contract.Answer)
    assert shown in prompts.render("report.md") and shown in prompts.render("repair.md", problem="p")
    assert contract.validate(json.loads(shown))[1] is None


def test_a_change_to_the_answer_model_changes_schema_validator_and_example_together():
    class Cause(contract.Cause):
        severity: str = Field(description="high, medium or low")

    class Answer(contract.Answer):
        diagnosis: list[Cause]  # type: ignore[assignment]

    # the schema asks for the new field
    item = contract.json_schema(Answer)["properties"]["diagnosis"]["items"]
    assert "severity" in item["required"] and item["properties"]["severity"]["type"] == "string"
    # the example shows it
    example = json.loads(contract.example(Answer))
    assert example["diagnosis"][0]["severity"] == "string"
    # the validator checks it
    ok = {"diagnosis": [{"cause": "c", "severity": "high"}], "adjustments": []}
    assert contract.validate(ok, Answer)[1] is None
    got, problem = contract.validate({"diagnosis": [{"cause": "c"}], "adjustments": []}, Answer)
    assert got is None and problem == "diagnosis[0].severity: Field required"


def test_the_validator_says_where_the_answer_is_wrong():
    bad = {"diagnosis": [{"cause": "c", "confidence": 1.5}], "adjustments": [{"file": "f", "key": "k", "to": True}]}
    got, problem = contract.validate(bad)
    assert got is None
    assert problem == "diagnosis[0].confidence: Input should be less than or equal to 1 (and 1 more problems)"
    assert contract.validate([1])[1] == "the answer is not a JSON object"
    typed, _ = answer.parse_answer('{"diagnosis": [{"cause": "c"}], "adjustments": '
                                   '[{"file": "f.yaml", "key": "a.b", "to": 2}]}')
    assert isinstance(typed, contract.Answer)
    assert typed.adjustments[0].proposal() == contract.Proposal("f.yaml", "a.b", 2.0, "", (), "model")
    assert typed.diagnosis[0].confidence == 0.5 and typed.diagnosis[0].findings == []



def test_combine_keeps_both_changes_for_a_key_and_picks_the_default():
    from triage_agent.findings.model import Adjustment

    def adj(key, to, meets, source):
        return Adjustment("c.yaml", key, 1, to, "", {}, meets, [], source)

    model = [adj("a", 2, False, "model"), adj("b", 3, True, "model"), adj("c", 4, None, "model"), adj("d", 5, True, "model")]
    rules = [adj("a", 6, True, "rules"), adj("b", 7, True, "rules"), adj("c", 8, True, "rules"), adj("d", 5, True, "rules"),
             adj("e", 9, None, "rules")]
    got = [(a.key, a.source, a.default) for a in answer.combine(model, rules)]
    assert got == [("a", "model", False), ("b", "model", True), ("c", "model", False), ("d", "model", True),
                   ("a", "rules", True),  # the model's misses, the rules' meets: the rules' is taken
                   ("b", "rules", False),  # both meet: the model's stands
                   ("c", "rules", True),  # the model's cannot be told, the rules' meets
                   ("e", "rules", True)]  # d: the same value twice is listed once
