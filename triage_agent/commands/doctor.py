"""`triage doctor`: check the endpoint configuration step by step and say what to fix."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import httpx

from triage_agent.errors import TriageError
from triage_agent.llm import capabilities
from triage_agent.llm.client import LLMClient
from triage_agent.llm.settings import Settings, configure_hint, key_hint, mask, state_dir

if TYPE_CHECKING:
    from rich.console import Console

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

    @property
    def can_report(self) -> bool:
        return all(c.ok is not False for c in self.checks)

    def view(self, console: Console) -> None:
        from triage_agent.render.terminal import doctor_view

        doctor_view(self, console)

    def exit_code(self, fail_on: str | None = None) -> int:
        """3 when a check failed: endpoint trouble, as for every command."""
        return 0 if self.can_report else 3

    def document(self) -> dict[str, object]:
        return {"settings": self.settings, "can_report": self.can_report, "checks": [vars(c) for c in self.checks],
                "capabilities": self.capabilities}


@dataclass
class Probe:
    """What the steps share: a copy of the settings (the caller's are never changed), the HTTP client,
    the listed models and, once chat works, the LLM client."""

    settings: Settings
    http: httpx.Client
    models: list[str] = field(default_factory=list)
    client: LLMClient | None = None
    stop: bool = False  # a failed step that every later step depends on


Step = Callable[[Probe], list[Check]]


def _models_url(base: str) -> str:
    return base.rstrip("/") + "/models"


def _headers(settings: Settings) -> dict[str, str]:
    return {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}


def _fail(p: Probe, check: Check) -> list[Check]:
    p.stop = True
    return [check]


def step_reachable(p: Probe) -> list[Check]:
    """GET /models: the server answers, the key is accepted, the URL is right; lists the models."""
    st = p.settings
    assert st.base_url is not None
    try:
        resp = p.http.get(_models_url(st.base_url), headers=_headers(st))
    except httpx.TimeoutException as exc:
        busy = not isinstance(exc, httpx.ConnectTimeout)
        return _fail(p, Check("reachable", False, f"{st.base_url} did not answer within {st.timeout:g} s "
                              f"({type(exc).__name__})", "the server is busy or stuck (a long generation?): wait or "
                              "restart it" if busy else "server down: start the server or fix the host and port in "
                              "the base URL"))
    except httpx.HTTPError as exc:
        return _fail(p, Check("reachable", False, f"cannot connect to {st.base_url} ({type(exc).__name__})",
                              "server down: start the server or fix the host and port in the base URL"))
    if resp.status_code in (401, 403):
        p.stop = True
        detail = (f"the endpoint wants a key and none is set (HTTP {resp.status_code})" if not st.api_key
                  else f"the endpoint refused the key (HTTP {resp.status_code})")
        return [Check("reachable", True, f"HTTP {resp.status_code} from {st.base_url}"),
                Check("authentication", False, detail, key_hint(st))]
    if resp.status_code == 404:
        return _fail(p, Check("reachable", False, f"{_models_url(st.base_url)} answered 404", _url_fix(p)))
    try:
        p.models = [m["id"] for m in resp.json().get("data", [])]
    except (ValueError, AttributeError, KeyError, TypeError):
        p.models = []
    return [Check("reachable", True, f"{st.base_url} answered HTTP {resp.status_code}"),
            Check("authentication", True, "the key was accepted" if st.api_key else "no key needed")]


def _url_fix(p: Probe) -> str:
    base = (p.settings.base_url or "").rstrip("/")
    try:
        if not base.endswith("/v1") and p.http.get(_models_url(base + "/v1"),
                                                  headers=_headers(p.settings)).status_code == 200:
            return f"wrong base URL: add /v1 (use {base}/v1)"
    except httpx.HTTPError:
        pass
    return "wrong base URL: check the path"


def step_model(p: Probe) -> list[Check]:
    st = p.settings
    if st.model is None and p.models:
        p.settings = st.with_("first model the endpoint lists", model=p.models[0])
        st = p.settings
    if st.model not in p.models and p.models:
        # some servers serve names they do not list (aliases, one loaded model under any name): the chat
        # step decides; the warning names what is listed
        return [Check("model", None, f"'{st.model}' is not listed (listed: {', '.join(p.models[:8])}); trying it",
                      f"if chat fails: use one of {', '.join(p.models[:8])} (--model or TRIAGE_MODEL)")]
    return [Check("model", True if p.models else None, f"'{st.model}' is listed" if p.models
                  else "the endpoint lists no models; trying the configured name")]


def step_chat(p: Probe) -> list[Check]:
    p.client = LLMClient(p.settings)
    try:
        r = p.client.chat([{"role": "user", "content": "Reply with the word ok."}], max_tokens=PROBE_TOKENS)
    except TriageError as exc:
        fix = "fix the error above; `triage report` cannot work without chat"
        if p.models and p.settings.model not in p.models:
            fix = f"unknown model: use one of {', '.join(p.models[:8])} (--model or TRIAGE_MODEL)"
        return _fail(p, Check("chat", False, str(exc), fix))
    return [Check("chat", True, f"minimal request answered ({len(r.content)} characters)")]


def step_tools(p: Probe) -> list[Check]:
    client = p.client
    assert client is not None
    try:
        r = client.chat([{"role": "user", "content": "Call get_run_kind with run='demo'."}], tools=[PROBE_TOOL],
                        max_tokens=PROBE_TOKENS)
    except TriageError as exc:
        client.capabilities = client.capabilities.learn(tools=False)
        return [Check("tool calling", None, str(exc), TOOL_FIX)]
    if client.capabilities.tools is False:
        return [Check("tool calling", None, "the server rejected `tools`", TOOL_FIX)]
    if r.tool_calls:
        client.capabilities = client.capabilities.learn(tools=True)
        return [Check("tool calling", True, f"the model called {r.tool_calls[0].name}")]
    return [Check("tool calling", None, "tools accepted but the model made no tool call", TOOL_FIX)]


def step_json_schema(p: Probe) -> list[Check]:
    client = p.client
    assert client is not None
    schema = {"type": "json_schema", "json_schema": {"name": "probe", "schema": {
        "type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}}
    try:
        r = client.chat([{"role": "user", "content": 'Answer with the JSON object {"ok": true}.'}],
                        response_format=schema, max_tokens=PROBE_TOKENS)
    except TriageError as exc:
        return [Check("JSON-schema output", None, str(exc))]
    if client.capabilities.json_object:
        return [Check("JSON-schema output", None, "JSON schemas rejected; plain JSON mode (json_object) used instead")]
    if client.capabilities.json_schema is False:
        return [Check("JSON-schema output", None, "response_format rejected; answers are parsed and repaired")]
    try:
        json.loads(r.content)
    except json.JSONDecodeError:
        return [Check("JSON-schema output", None, "accepted, but the reply was not JSON; answers will be repaired")]
    client.capabilities = client.capabilities.learn(json_schema=True)
    return [Check("JSON-schema output", True, "valid JSON returned")]


def step_streaming(p: Probe) -> list[Check]:
    client = p.client
    assert client is not None
    chunks: list[str] = []
    try:
        client.chat([{"role": "user", "content": "Reply with the word ok."}], stream=True, on_text=chunks.append,
                    max_tokens=PROBE_TOKENS)
    except TriageError as exc:
        return [Check("streaming", None, str(exc))]
    if client.capabilities.streaming is False:
        return [Check("streaming", None, "streaming rejected; `ask` prints the answer when complete")]
    client.capabilities = client.capabilities.learn(streaming=True)
    return [Check("streaming", True, f"{len(chunks)} chunks received")]


STEPS: tuple[Step, ...] = (step_reachable, step_model, step_chat, step_tools, step_json_schema, step_streaming)


def doctor(settings: Settings, env: dict[str, str]) -> DoctorResult:
    res = DoctorResult({"base_url": settings.base_url, "model": settings.model, "api_key": mask(settings.api_key),
                        "profile": settings.profile, "sources": dict(settings.sources)})
    if not settings.configured:
        res.checks.append(Check("configuration", False, "no endpoint configured", configure_hint(env)))
        return res
    src = settings.sources
    res.checks.append(Check("configuration", True, f"base URL {settings.base_url} (from {src.get('base_url')}), model "
                            f"{settings.model or '(not set)'} (from {src.get('model', '-')}), key "
                            f"{mask(settings.api_key)} (from {src.get('api_key', '-')})"))
    http = httpx.Client(timeout=httpx.Timeout(settings.timeout, connect=settings.connect_timeout))
    probe = Probe(settings, http)  # Settings are immutable: the caller's stay as they were
    for step in STEPS:
        res.checks += step(probe)
        if probe.stop:
            return res
    assert probe.client is not None
    res.capabilities = probe.client.capabilities.as_dict()
    try:
        capabilities.save(state_dir(env), probe.settings.base_url, probe.settings.model, probe.client.capabilities)
    except OSError as exc:
        res.checks.append(Check("state dir", None, f"capabilities not remembered: {exc.strerror or exc}",
                                f"make {state_dir(env)} writable, or set XDG_STATE_HOME"))
    return res
