"""What an endpoint can do, as `triage doctor` found it; later runs start from it."""

from __future__ import annotations

import json
from pathlib import Path

from triage_agent import safejson

FILE = "capabilities.json"


def _key(base_url: str | None, model: str | None) -> str:
    return f"{base_url}|{model}"


def load(state: Path, base_url: str | None, model: str | None) -> dict[str, bool]:
    try:
        doc = safejson.load_file(state / FILE, 1 << 20)
    except (OSError, ValueError):
        return {}
    found = doc.get(_key(base_url, model), {}) if isinstance(doc, dict) else {}
    return {str(k): bool(v) for k, v in found.items() if isinstance(v, bool)}


def save(state: Path, base_url: str | None, model: str | None, caps: dict[str, bool]) -> Path:
    path = state / FILE
    state.mkdir(parents=True, exist_ok=True)
    try:
        doc = safejson.load_file(path, 1 << 20)
    except (OSError, ValueError):
        doc = {}
    doc[_key(base_url, model)] = caps
    path.write_text(json.dumps(doc, indent=1))
    return path
