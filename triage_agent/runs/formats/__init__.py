"""The format registry: every trainer output format triage reads, in sniffing order.

Adding a format is one module in this folder that defines a `Format`, plus one line here.
Discovery asks each format's `sniff` in this order; loading calls the matching `read`.
"""

from __future__ import annotations

from triage_agent.runs.formats import (
    by_metric,
    completions,
    console,
    llamafactory,
    rollouts,
    swift,
    table,
    tensorboard,
    trl,
    verl,
    wandb,
    wandb_binary,
)
from triage_agent.runs.formats.base import Format, FormatRead

FORMATS: tuple[Format, ...] = (
    tensorboard.FORMAT,
    wandb_binary.BINARY,
    wandb.SUMMARY,
    wandb.HISTORY,
    trl.FORMAT,
    swift.FORMAT,
    completions.FORMAT,
    rollouts.FORMAT,
    verl.JSONL,
    llamafactory.FORMAT,
    by_metric.FORMAT,
    table.FORMAT,  # any other metrics table, by content: after every named format
    console.FORMAT,  # text with training output, by content (any name, hidden or rotated)
)
BY_NAME: dict[str, Format] = {f.name: f for f in FORMATS}

__all__ = ["BY_NAME", "FORMATS", "Format", "FormatRead"]
