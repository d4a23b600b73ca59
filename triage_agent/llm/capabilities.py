"""What an endpoint can do, as `triage doctor` found it; later runs start from it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from triage_agent import safejson
from triage_agent.state import update_json

FILE = "capabilities.json"


def _key(base_url: str | None, model: str | None) -> str:
    return f"{base_url}|{model}"


def load(state: Path, base_url: str | None, model: str | None) -> dict[str, bool]:
    try:
        doc = safejson.load_file(state / FILE, 1 << 20)
    except (OSError, ValueError):
        return {}
    found = doc.get(_key(base_url, model), {}) if isinstance(doc, dict) else {}
    if not isinstance(found, dict):
        return {}
    return {str(k): bool(v) for k, v in found.items() if isinstance(v, bool)}


def save(state: Path, base_url: str | None, model: str | None, caps: dict[str, bool]) -> Path:
    """Merge this endpoint's capabilities into the file, under its lock (concurrent doctors lose nothing)."""
    path = state / FILE

    def merge(doc: dict[str, Any]) -> None:
        doc[_key(base_url, model)] = caps

    update_json(path, merge)
    return path
