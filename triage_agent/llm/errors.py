"""The one error an endpoint failure becomes: what kind, the HTTP status, the body the server sent."""

from __future__ import annotations

from triage_agent import redact
from triage_agent.errors import TriageError

KINDS = ("timeout", "unreachable", "auth", "not_found", "model_not_found", "rate_limited", "server", "rejected",
         "bad_response", "cut", "failed")


class EndpointError(TriageError):
    """An endpoint failure; exit code 3. `body` is the server's text, kept for the fallback logic, never printed."""

    def __init__(self, kind: str, message: str, status: int | None = None, body: str = "") -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown endpoint error kind {kind}")
        super().__init__(redact.text(message), 3)
        self.kind = kind
        self.status = status
        self.body = body
