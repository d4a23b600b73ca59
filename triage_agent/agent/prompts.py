"""Prompt files from `prompts/` (inside the wheel as triage_agent/prompts; beside the package in a checkout)."""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path


@cache
def load(name: str) -> str:
    packaged = resources.files("triage_agent").joinpath("prompts", name)
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    checkout = Path(__file__).resolve().parents[2] / "prompts" / name
    return checkout.read_text(encoding="utf-8")
