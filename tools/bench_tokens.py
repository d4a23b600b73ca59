#!/usr/bin/env python3
"""Prompt tokens and requests per `triage report`, beside simply pasting the run's files.

For each sample run, a scripted OpenAI-compatible server on 127.0.0.1 plays a model that
calls two tools and then answers; the prompt tokens are what that server received
(characters / 4, the same estimate used for pasting: bytes / 4). Prints the ratio.

    python tools/bench_tokens.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.scripted_server import ScriptedServer, completion, tool_call  # noqa: E402
from triage_agent.commands.report import report  # noqa: E402
from triage_agent.llm.settings import Settings  # noqa: E402

ANSWER = json.dumps({"diagnosis": [{"cause": "x", "findings": [], "evidence": "y", "confidence": 0.5}],
                     "adjustments": []})


def main() -> None:
    print(f"{'run':22} {'requests':>8} {'prompt tok':>11} {'paste tok':>10} {'ratio':>7}")
    for run in sorted(p for p in (ROOT / "sample_runs").iterdir() if p.is_dir()):
        script = [completion(tool_calls=[tool_call("run_overview", "{}", "a"), tool_call("read_config", "{}", "b")]),
                  completion(ANSWER)]
        with ScriptedServer(script) as srv:
            report(run, Settings(base_url=srv.base_url, model="m", retry_wait=0.01), save=False)
        prompt = sum(len(json.dumps(r["messages"])) + len(json.dumps(r.get("tools", []))) for r in srv.requests) // 4
        paste = sum(f.stat().st_size for f in run.rglob("*") if f.is_file()) // 4
        print(f"{run.name:22} {len(srv.requests):>8} {prompt:>11,} {paste:>10,} {paste / prompt:>6.0f}x")


if __name__ == "__main__":
    main()
