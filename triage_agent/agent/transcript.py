"""Transcripts of model sessions in the state dir: messages, tool calls, timings, usage. Never the key."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from triage_agent import redact
from triage_agent.agent.loop import AgentResult
from triage_agent.llm.client import LLMClient


def save(state: Path, run_root: Path, command: str, result: AgentResult, client: LLMClient,
         extra: dict[str, Any] | None = None) -> Path:
    folder = state / "transcripts"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = folder / f"{stamp}-{command}-{run_root.name}.json"
    doc = {"command": command, "run": str(run_root), "endpoint": client.settings.base_url,
           "model": client.settings.model, "key_source": client.settings.sources.get("api_key"),
           "usage": vars(client.usage), "capabilities": client.capabilities,
           "tool_events": [vars(e) for e in result.events], "messages": result.messages,
           "problem": result.problem, **(extra or {})}
    path.write_text(json.dumps(redact.obj(doc), indent=1, ensure_ascii=False, default=str))
    return path
