"""Secrets never leave: redaction by key name and by value shape, for tool outputs, transcripts, reports
and error messages. Everything read from a run or a server passes through here before it is shown or sent."""

from __future__ import annotations

import re
from typing import Any

MASK = "[redacted]"
# key names that hold secrets: any *key, *secret*, *token*, password, credential*, private*, *_pat, auth
SECRET_NAME = re.compile(r"(?:key$|_key\b|secret|token|passw(?:or)?d|credential|^private|[._-]private|_pat$|^pat$|"
                         r"auth(?:orization)?$|cookie)", re.I)
# value shapes of secrets, whatever the key
SECRET_VALUE = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)"  # PEM blocks
    r"|\bsk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_-]{8,}"  # OpenAI / Anthropic style keys
    r"|\bhf_[A-Za-z0-9]{16,}"  # Hugging Face
    r"|\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"  # GitHub
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"  # AWS access key ids
    r"|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"  # JWTs
    r"|\bxox[abprs]-[A-Za-z0-9-]{10,}"  # Slack
    r"|(?i:\bbearer\s+)[A-Za-z0-9._~+/-]{8,}=*",  # an Authorization header echoed back
    re.S)


def text(s: str) -> str:
    """`s` with every secret-shaped substring masked."""
    return SECRET_VALUE.sub(MASK, s) if s else s


def is_secret_name(name: str) -> bool:
    leaf = name.rsplit(".", 1)[-1]
    # a bare `key` is the report's own field (an adjustment's dotted config path), not a credential
    return leaf.lower() not in ("key", "keys") and bool(SECRET_NAME.search(leaf))


def value(name: str, v: Any) -> Any:
    """A config or evidence value under key `name`: strings under a secret name are masked (numbers are not:
    `max_tokens: 512` is no secret); everything else is masked by shape."""
    if isinstance(v, str):
        return MASK if is_secret_name(name) and v else text(v)
    return obj(v, name)


def obj(o: Any, name: str = "", depth: int = 0) -> Any:
    """A JSON-like structure with secrets masked, by key name and by value shape (bounded depth)."""
    if depth > 64:
        return MASK
    if isinstance(o, dict):
        return {k: value(str(k), v) if isinstance(v, str) else obj(v, str(k), depth + 1) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [obj(v, name, depth + 1) for v in o]
    if isinstance(o, str):
        return value(name, o) if name else text(o)
    return o
