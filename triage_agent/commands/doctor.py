"""`triage doctor`: check the endpoint configuration step by step and say what to fix."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import httpx

from triage_agent.errors import TriageError
from triage_agent.llm import capabilities
from triage_agent.llm.client import LLMClient
from triage_agent.llm.settings import CONFIGURE_HINT, Settings, mask, state_dir

TOOL_FIX = ("the server does not do tool calls: start it with a tool-capable chat template (llama.cpp server "
            "--jinja; llama-cpp-python --chat_format chatml-function-calling; vLLM --enable-auto-tool-choice "
            "--tool-call-parser NAME); until then triage inlines tool results in the prompt")
PROBE_TOKENS = 64  # the probes need a word or a small object, never a long answer
PROBE_TOOL = {"type": "function", "function": {
    "name": "get_run_kind", "description": "Return the kind of the training run.",
    "parameters": {"type": "object", "properties": {"run": {"type": "string"}}, "required": ["run"]}}}


@dataclass
class Check:
    name: str
    ok: bool | None  # None: skipped or a warning that does not stop `report`
    detail: str
    fix: str | None = None


@dataclass
class DoctorResult:
    settings: dict[str, object]
    checks: list[Check] = field(default_factory=list)
    capabilities: dict[str, bool] = field(default_factory=dict)
    saved_to: str | None = None

    @property
    def can_report(self) -> bool:
        return all(c.ok is not False for c in self.checks)


def _models_url(base: str) -> str:
    return base.rstrip("/") + "/models"


def doctor(settings: Settings, env: dict[str, str], http_client: httpx.Client | None = None) -> DoctorResult:
    res = DoctorResult({"base_url": settings.base_url, "model": settings.model, "api_key": mask(settings.api_key),
                        "profile": settings.profile, "sources": dict(settings.sources)})
    add = res.checks.append
    if not settings.configured:
        add(Check("configuration", False, "no endpoint configured", CONFIGURE_HINT))
        return res
    src = settings.sources
    add(Check("configuration", True, f"base URL {settings.base_url} (from {src.get('base_url')}), model "
              f"{settings.model or '(not set)'} (from {src.get('model', '-')}), key {mask(settings.api_key)} "
              f"(from {src.get('api_key', '-')})"))
    http = http_client or httpx.Client(timeout=httpx.Timeout(settings.timeout, connect=settings.connect_timeout))
    headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
    assert settings.base_url is not None
    try:
        resp = http.get(_models_url(settings.base_url), headers=headers)
    except httpx.TimeoutException as exc:
        busy = not isinstance(exc, httpx.ConnectTimeout)
        add(Check("reachable", False, f"{settings.base_url} did not answer within {settings.timeout:g} s "
                  f"({type(exc).__name__})", "the server is busy or stuck (a long generation?): wait or restart it"
                  if busy else "server down: start the server or fix the host and port in the base URL"))
        return res
    except httpx.HTTPError as exc:
        add(Check("reachable", False, f"cannot connect to {settings.base_url} ({type(exc).__name__})",
                  "server down: start the server or fix the host and port in the base URL"))
        return res
    if resp.status_code in (401, 403):
        add(Check("reachable", True, f"HTTP {resp.status_code} from {settings.base_url}"))
        add(Check("authentication", False, f"the endpoint refused the key (HTTP {resp.status_code})",
                  "wrong key: set OPENAI_API_KEY (or TRIAGE_API_KEY, or the profile's api_key_env) to a valid key"))
        return res
    if resp.status_code == 404:
        fix = "wrong base URL: check the path"
        try:
            if not settings.base_url.rstrip("/").endswith("/v1") and \
                    http.get(_models_url(settings.base_url.rstrip("/") + "/v1"), headers=headers).status_code == 200:
                fix = f"wrong base URL: add /v1 (use {settings.base_url.rstrip('/')}/v1)"
        except httpx.HTTPError:
            pass
        add(Check("reachable", False, f"{_models_url(settings.base_url)} answered 404", fix))
        return res
    add(Check("reachable", True, f"{settings.base_url} answered HTTP {resp.status_code}"))
    add(Check("authentication", True, "the key was accepted" if settings.api_key else "no key needed"))
    try:
        models = [m["id"] for m in resp.json().get("data", [])]
    except (ValueError, AttributeError, KeyError, TypeError):
        models = []
    if settings.model is None and models:
        settings.model = models[0]
        settings.sources["model"] = "first model the endpoint lists"
    if settings.model not in models and models:
        add(Check("model", False, f"model '{settings.model}' is not listed",
                  f"unknown model: use one of {', '.join(models[:8])} (--model or TRIAGE_MODEL)"))
        return res
    add(Check("model", True if models else None, f"'{settings.model}' is listed" if models
              else "the endpoint lists no models; trying the configured name"))
    client = LLMClient(settings, http_client=http_client)
    try:
        r = client.chat([{"role": "user", "content": "Reply with the word ok."}], max_tokens=PROBE_TOKENS)
        add(Check("chat", True, f"minimal request answered ({len(r.content)} characters)"))
    except TriageError as exc:
        add(Check("chat", False, str(exc), "fix the error above; `triage report` cannot work without chat"))
        return res
    try:
        r = client.chat([{"role": "user", "content": "Call get_run_kind with run='demo'."}], tools=[PROBE_TOOL],
                        max_tokens=PROBE_TOKENS)
        if client.capabilities.get("tools") is False:
            add(Check("tool calling", None, "the server rejected `tools`", TOOL_FIX))
        elif r.tool_calls:
            client.capabilities["tools"] = True
            add(Check("tool calling", True, f"the model called {r.tool_calls[0].name}"))
        else:
            add(Check("tool calling", None, "tools accepted but the model made no tool call", TOOL_FIX))
    except TriageError as exc:
        client.capabilities["tools"] = False
        add(Check("tool calling", None, str(exc), TOOL_FIX))
    schema = {"type": "json_schema", "json_schema": {"name": "probe", "schema": {
        "type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}}
    try:
        r = client.chat([{"role": "user", "content": 'Answer with the JSON object {"ok": true}.'}],
                        response_format=schema, max_tokens=PROBE_TOKENS)
        if client.capabilities.get("json_object"):
            add(Check("JSON-schema output", None, "JSON schemas rejected; plain JSON mode (json_object) used instead"))
        elif client.capabilities.get("json_schema") is False:
            add(Check("JSON-schema output", None, "response_format rejected; answers are parsed and repaired"))
        else:
            try:
                json.loads(r.content)
                client.capabilities["json_schema"] = True
                add(Check("JSON-schema output", True, "valid JSON returned"))
            except json.JSONDecodeError:
                add(Check("JSON-schema output", None, "accepted, but the reply was not JSON; answers will be repaired"))
    except TriageError as exc:
        add(Check("JSON-schema output", None, str(exc)))
    try:
        chunks: list[str] = []
        client.chat([{"role": "user", "content": "Reply with the word ok."}], stream=True, on_text=chunks.append,
                    max_tokens=PROBE_TOKENS)
        if client.capabilities.get("streaming") is False:
            add(Check("streaming", None, "streaming rejected; `ask` prints the answer when complete"))
        else:
            client.capabilities["streaming"] = True
            add(Check("streaming", True, f"{len(chunks)} chunks received"))
    except TriageError as exc:
        add(Check("streaming", None, str(exc)))
    res.capabilities = dict(client.capabilities)
    res.saved_to = str(capabilities.save(state_dir(env), settings.base_url, settings.model, res.capabilities))
    return res



