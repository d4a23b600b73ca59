"""Tool schemas derived from signatures, and where settings come from."""

from typing import Literal

import pytest

from triage_agent.agent.schema import bind_arguments, function_schema
from triage_agent.errors import TriageError
from triage_agent.llm.settings import resolve


def sample_tool(run: object, name: str, count: int = 3, mode: Literal["a", "b"] = "a",
                changes: dict[str, float] | None = None, tags: list[str] | None = None) -> dict:
    """Do a thing with a run.

    Args:
        name: what to look at
        count: how many
    """
    return {}


def test_schema_from_signature_hides_the_run():
    s = function_schema(sample_tool)["function"]
    assert s["name"] == "sample_tool" and s["description"] == "Do a thing with a run."
    props = s["parameters"]["properties"]
    assert list(props) == ["name", "count", "mode", "changes", "tags"]
    assert props["name"] == {"type": "string", "description": "what to look at"}
    assert props["count"] == {"type": "integer", "description": "how many", "default": 3}
    assert props["mode"]["enum"] == ["a", "b"]
    assert props["changes"]["additionalProperties"] == {"type": "number"}
    assert props["tags"]["items"] == {"type": "string"}
    assert s["parameters"]["required"] == ["name"]


def test_bind_arguments_checks_types_and_names():
    assert bind_arguments(sample_tool, {"name": "x", "count": 2.0}) == {"name": "x", "count": 2}
    with pytest.raises(ValueError, match="missing required argument 'name'"):
        bind_arguments(sample_tool, {})
    with pytest.raises(ValueError, match="unknown argument"):
        bind_arguments(sample_tool, {"name": "x", "run": 1})
    with pytest.raises(ValueError, match="one of"):
        bind_arguments(sample_tool, {"name": "x", "mode": "c"})
    with pytest.raises(ValueError, match="must be a number"):
        bind_arguments(sample_tool, {"name": "x", "changes": {"k": "high"}})


def test_settings_precedence(tmp_path):
    cfg = tmp_path / "triage" / "config.toml"
    cfg.parent.mkdir()
    cfg.write_text('default_profile = "p"\n[profiles.p]\nbase_url = "http://profile/v1"\nmodel = "pm"\n'
                   'api_key_env = "MYKEY"\n[profiles.q]\nbase_url = "http://q/v1"\n')
    env = {"XDG_CONFIG_HOME": str(tmp_path), "MYKEY": "sk-profile-key-123"}
    s = resolve({}, env)
    assert (s.base_url, s.model, s.api_key) == ("http://profile/v1", "pm", "sk-profile-key-123")
    assert "profile p" in s.sources["base_url"]
    env |= {"OPENAI_BASE_URL": "http://openai-env/v1", "TRIAGE_BASE_URL": "http://triage-env/v1",
            "TRIAGE_MODEL": "em"}
    s = resolve({}, env)
    assert (s.base_url, s.model, s.sources["base_url"]) == ("http://triage-env/v1", "em", "$TRIAGE_BASE_URL")
    s = resolve({"base_url": "http://flag/v1", "profile": "q"}, env)
    assert s.base_url == "http://flag/v1" and s.sources["base_url"] == "--base-url"
    assert "sk-profile-key-123" not in repr(s) and "sk-profile-key-123" not in str(s.describe())
    with pytest.raises(TriageError, match="no profile 'zz'"):
        resolve({"profile": "zz"}, env)


def test_openai_key_alone_means_openai(tmp_path):
    s = resolve({}, {"XDG_CONFIG_HOME": str(tmp_path), "OPENAI_API_KEY": "sk-abc"})
    assert s.base_url == "https://api.openai.com/v1"
    assert not resolve({}, {"XDG_CONFIG_HOME": str(tmp_path)}).configured


def test_request_builder_leaves_out_what_the_endpoint_rejected():
    from triage_agent.llm.client import build_request

    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": []}]
    tool = [{"type": "function", "function": {"name": "t", "parameters": {}}}]
    schema = {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}
    full = build_request("m", 64, {}, msgs, tool, schema, stream=True)
    assert sorted(full) == ["max_tokens", "messages", "model", "response_format", "stream", "stream_options",
                            "tool_choice", "tools"]
    caps = {"tool_choice": False, "json_schema": False, "json_object": True, "stream_with_tools": False,
            "null_content": False}
    body = build_request("m", 64, caps, msgs, tool, schema, stream=True)
    assert "tool_choice" not in body and "stream" not in body and "stream_options" not in body
    assert body["response_format"] == {"type": "json_object"}
    assert body["messages"][1]["content"] == "" and msgs[1]["content"] is None  # the caller's list is untouched
    assert "tools" not in build_request("m", 64, {"tools": False}, msgs, tool)
