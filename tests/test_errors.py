"""Errors by meaning (issue 26, item 3): each class stands for its exit code; no raise site picks one."""

from __future__ import annotations

import ast

import pytest

from tests.conftest import REPO, cli
from triage_agent.errors import BadInput, ConfigSyntaxError, ToolRefusal, TriageError
from triage_agent.llm.errors import KINDS, EndpointError
from triage_agent.runs.configs import load_config, parse_config_text


def test_each_error_class_carries_its_exit_code():
    assert BadInput("x").exit_code == 2
    assert EndpointError("timeout", "x").exit_code == 3
    assert issubclass(BadInput, TriageError) and issubclass(EndpointError, TriageError)
    assert issubclass(ToolRefusal, ValueError)  # a tool's own argument checks may raise either
    with pytest.raises(AssertionError):
        EndpointError("no_such_kind", "x")  # type: ignore[arg-type]
    assert "model_not_found" in KINDS


def test_no_raise_site_chooses_an_exit_code():
    offenders = []
    for path in (REPO / "triage_agent").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("TriageError", "BadInput")
                    and (len(node.args) > 1 or any(k.arg == "exit_code" for k in node.keywords))):
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert offenders == []


def test_config_syntax_errors_carry_their_line(tmp_path):
    with pytest.raises(ConfigSyntaxError) as got:
        parse_config_text("a: 1\nb: [1, 2\nc: 3\n", ".yaml")
    assert got.value.line == 3  # PyYAML marks the line where the unclosed flow sequence is found to end
    with pytest.raises(ConfigSyntaxError) as got:
        parse_config_text('{\n  "a": 1,\n  "b": ,\n}', ".json")
    assert got.value.line == 3
    bad = tmp_path / "config.json"
    bad.write_text('{\n  "a": 1,\n  "b": ,\n}')
    _, values, errors = load_config(bad, "config.json")
    assert values == [] and errors[0].line == 3 and not errors[0].message.startswith("unreadable config: line")


@pytest.mark.parametrize("field, value", [("base_url", "5"), ("base_url", '"ftp://x"'), ("model", "[1]"),
                                          ("timeout", "true"), ("capabilities", '"yes"'), ("bse_url", '"http://x"')])
def test_a_bad_profile_field_is_bad_input_not_an_internal_error(env, tmp_path, field, value):
    cfg = tmp_path / "config" / "triage" / "config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text(f'default_profile = "p"\n[profiles.p]\n{field} = {value}\n')
    code, out, err = cli("report", str(REPO / "sample_runs" / "healthy"))
    assert code == 2, err
    assert err.count("\n") == 1 and "profile p" in err and field in err
