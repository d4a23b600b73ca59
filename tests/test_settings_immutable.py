"""Settings and Capabilities are typed, immutable values (issue 26): a command that learns the model name or an
endpoint's quirks makes new ones, and the caller's settings never change."""

from __future__ import annotations

import dataclasses

import pytest

from tests.scripted_server import ScriptedServer, completion
from triage_agent.commands.report import make_client
from triage_agent.llm.capabilities import NAMES, Capabilities
from triage_agent.llm.settings import Settings, resolve


def test_settings_cannot_be_changed_in_place():
    s = Settings(base_url="http://127.0.0.1:1/v1", sources={"base_url": "--base-url"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.model = "m"  # type: ignore[misc]
    with pytest.raises(TypeError):
        s.sources["model"] = "x"  # type: ignore[index]
    t = s.with_("/model in chat", model="m")
    assert (s.model, t.model, t.sources["model"], s.sources.get("model")) == (None, "m", "/model in chat", None)


def test_capabilities_learn_a_new_value_and_know_their_names():
    c = Capabilities()
    d = c.learn(tools=False)
    assert (c.tools, d.tools) == (None, False) and d.as_dict() == {"tools": False}
    with pytest.raises(AssertionError):
        c.learn(telepathy=True)
    # a profile's table or the state file: unknown names and non-booleans left out
    assert Capabilities.from_mapping({"tools": True, "telepathy": True, "streaming": "yes"}).as_dict() == {"tools": True}
    # the profile's facts win over what doctor remembered; what the profile does not say is taken from doctor's
    assert Capabilities(tools=False).over(Capabilities(tools=True, streaming=True)).as_dict() == {
        "tools": False, "streaming": True}
    assert "json_schema" in NAMES and "null_content" in NAMES


def test_make_client_completes_a_copy_and_leaves_the_callers_settings(env, tmp_path):
    with ScriptedServer([completion("ok")], models=["first", "second"]) as srv:
        given = resolve({"base_url": srv.base_url}, {"XDG_STATE_HOME": str(tmp_path)})
        client = make_client(given, {"XDG_STATE_HOME": str(tmp_path)})
        assert given.model is None and "model" not in given.sources
        assert client.settings.model == "first"
        assert client.settings.sources["model"] == "first model the endpoint lists"
        client.chat([{"role": "user", "content": "hi"}])
    assert given.capabilities == Capabilities()


def test_capabilities_are_read_by_typed_names_only():
    # issue 42: no string lookup that answers None on a typo; the names a table may hold are the fields
    from typing import get_args

    from triage_agent.llm import client
    from triage_agent.llm.capabilities import Name

    assert set(get_args(Name)) == set(NAMES)
    assert not hasattr(Capabilities, "get")
    assert {cap for _, cap, _ in client.OPTIONAL} <= set(NAMES)
    c = Capabilities(json_schema=False, stream_usage=True)
    assert [c.known(n) for n in ("json_schema", "stream_usage", "tools")] == [False, True, None]
