"""The agent loop: one explicit list of messages, tools run locally, a named turn limit."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from triage_agent.agent import answer, context, contract, prompts, tools
from triage_agent.findings.facts import Facts
from triage_agent.llm.client import LLMClient
from triage_agent.llm.errors import EndpointError
from triage_agent.report import Report

MAX_TURNS = 6  # requests per report/ask, repair included; past it the offline answer stands


@dataclass
class ToolEvent:
    name: str
    arguments: str
    seconds: float
    output_chars: int


@dataclass
class AgentResult:
    messages: list[dict[str, Any]]
    final: str | None
    answer: contract.Answer | None = None
    problem: str | None = None  # why the answer could not be used, when it could not
    repaired: bool = False  # the answer needed the repair turn
    invalid: bool = False  # the model answered, but not with a valid answer even after the repair (exit 3)
    error: EndpointError | None = None  # the endpoint failed mid-session (timeout, 5xx, cut stream...)
    events: list[ToolEvent] = field(default_factory=list)


def first_message(offline: Report, task: str, question: str | None) -> str:
    overview = tools.call(offline.facts, "run_overview", {}).text
    # the report already holds the findings: no second pass of every rule over the run
    findings = json.dumps(tools.findings_payload(offline.findings), ensure_ascii=False, default=str)
    checked = [{"file": a.file, "key": a.key, "from": a.from_, "to": a.to, "predicted": a.predicted,
                "meets_target": a.meets_target} for a in offline.adjustments]
    numbers = json.dumps(context.key_numbers(offline), ensure_ascii=False, default=str)
    parts = [prompts.render(f"{task}.md"), "## Run\n" + context.header(offline), "## Run overview\n" + overview,
             "## Deterministic findings\n" + findings,
             "## Numbers the findings rest on (computed from the run's files)\n" + numbers,
             "## Changes the rules suggest (already re-computed on this run)\n" + json.dumps(checked)]
    if offline.facts.peers:
        parts.append(prompts.render("vs.md", runs=", ".join(f"{chr(66 + i)} = {p.run.where}"
                                                           for i, p in enumerate(offline.facts.peers))))
    if question:
        parts.append("## Question\n" + question)
    return "\n\n".join(parts)


def inline_results(offline: Report) -> str:
    results = {name: tools.call(offline.facts, name, {}) for name in tools.inlined(offline.facts)}
    usable = {k: v.output for k, v in results.items() if v.error is None}
    return prompts.render("inline_tools.md", results=json.dumps(usable, default=str))


def converse(messages: list[dict[str, Any]], facts: Facts, client: LLMClient, max_requests: int, *, stream: bool,
             on_text: Callable[[str], None] | None = None, on_tool: Callable[[ToolEvent], None] | None = None,
             events: list[ToolEvent] | None = None, response_format: dict[str, Any] | None = None,
             last_without_tools: bool = False, offer_tools: bool = True) -> tuple[str | None, int]:
    """Request, run the tools the model asks for, repeat until it answers in text.

    Appends to `messages`; returns (the answer, requests used), the answer None at `max_requests`.
    With `last_without_tools`, the last request offers no tools, so a model that keeps calling
    them must answer.
    """
    schemas = tools.schemas(facts)
    for used in range(1, max_requests + 1):
        offer = None if not offer_tools or (last_without_tools and used == max_requests and used > 1) else schemas
        reply = client.chat(messages, tools=offer, response_format=response_format, stream=stream, on_text=on_text)
        if not reply.tool_calls:
            messages.append({"role": "assistant", "content": reply.content})
            return reply.content, used
        messages.append({"role": "assistant", "content": reply.content or None, "tool_calls": [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": tools.echoed(c.arguments)}}
            for c in reply.tool_calls]})
        for c in reply.tool_calls:
            t0 = time.perf_counter()
            out = tools.call(facts, c.name, c.arguments).text
            event = ToolEvent(c.name, tools.echoed(c.arguments), time.perf_counter() - t0, len(out))
            if events is not None:
                events.append(event)
            if on_tool:
                on_tool(event)
            messages.append({"role": "tool", "tool_call_id": c.id, "content": out})
    return None, max_requests


def run_agent(offline: Report, client: LLMClient, task: str, question: str | None = None,
              on_text: Callable[[str], None] | None = None,
              on_tool: Callable[[ToolEvent], None] | None = None) -> AgentResult:
    """The session for `task`; an endpoint failure ends it with `error` set (the messages so far kept for the
    transcript), never with an exception."""
    result = AgentResult([], None)
    try:
        _session(result, offline, client, task, question, on_text, on_tool)
    except EndpointError as exc:
        result.error, result.problem = exc, str(exc)
    return result


def _session(result: AgentResult, offline: Report, client: LLMClient, task: str, question: str | None,
             on_text: Callable[[str], None] | None, on_tool: Callable[[ToolEvent], None] | None) -> None:
    messages = result.messages
    messages += [{"role": "system", "content": prompts.render("system.md")},
                 {"role": "user", "content": first_message(offline, task, question)}]
    if client.capabilities.tools is False:
        messages[1]["content"] += "\n\n" + inline_results(offline)
    repaired = inlined = False
    response_format = None
    turns = 0
    while turns < MAX_TURNS:
        had_tools = client.capabilities.tools is not False
        # one request stays in reserve for a repair until it has been used
        budget = MAX_TURNS - turns - (0 if repaired or task == "ask" else 1)
        content, used = converse(messages, offline.facts, client, budget, stream=task == "ask", on_text=on_text,
                                 on_tool=on_tool, events=result.events, response_format=response_format,
                                 last_without_tools=True, offer_tools=not repaired)
        turns += used
        if content is None:
            break
        result.final = content
        if task == "ask":
            return
        obj, problem = answer.parse_answer(content)
        if obj is not None:
            result.answer = obj
            return
        if had_tools and client.capabilities.tools is False and not inlined:
            # the endpoint refused tools during this request: give the model the results instead
            inlined = True
            messages.append({"role": "user", "content": inline_results(offline) + "\n\n" + prompts.render("report.md")})
            continue
        if repaired:
            result.problem = f"the model's answer was not valid after one repair ({problem})"
            result.invalid = True
            return
        repaired = result.repaired = True
        response_format = answer.ANSWER_SCHEMA
        messages.append({"role": "user", "content": prompts.render("repair.md", problem=str(problem))})
    result.problem = f"no final answer within the turn limit ({MAX_TURNS} requests)"
