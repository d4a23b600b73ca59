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


# FORMATS is read at each call, never copied: a format added to it is discovered, loaded and followed
def names() -> frozenset[str]:
    """The name of every format: the roles of the files a format reads."""
    return frozenset(f.name for f in FORMATS)


def named(name: str) -> Format:
    """The format called `name` (a file's role); KeyError for none."""
    for f in FORMATS:
        if f.name == name:
            return f
    raise KeyError(name)


__all__ = ["FORMATS", "Format", "FormatRead", "named", "names"]
