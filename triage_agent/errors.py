"""Errors by meaning. The CLI turns each into one line and the exit code its class stands for; no raise site
chooses an exit code.

- `BadInput` (exit 2): what the user gave cannot be used (a missing folder, nothing recognisable, a stale or
  malformed report, a bad flag value, a bad profile).
- `EndpointError` (exit 3, in `llm/errors.py`): the model endpoint failed, with its kind.
- `Unreachable` (exit 3): a service the user named (a Ray head) does not answer, like an endpoint that is down.
- `ToolRefusal`: an agent tool declines a call (no such round, no data, bad arguments); the model is told why.
- `ConfigSyntaxError`: a config file does not parse; carries the line, so nobody parses it back out of text.
"""

from __future__ import annotations

from typing import ClassVar


class TriageError(Exception):
    """A problem the user can fix; the CLI prints it as one line and exits with `exit_code`."""

    exit_code: ClassVar[int] = 2


class BadInput(TriageError):
    exit_code: ClassVar[int] = 2


class Unreachable(TriageError):
    exit_code: ClassVar[int] = 3


class ToolRefusal(ValueError):
    """An agent tool's refusal: its text goes back to the model, which can adapt (a ValueError, so a tool's own
    validation of arguments may raise either)."""


class ConfigSyntaxError(ValueError):
    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line
