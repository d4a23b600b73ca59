"""OpenRLHF: its metrics are the tqdm postfix of the training bar (`..., act_loss=0.1, reward=0.5, kl=0.01]`),
redrawn many times a step: the last postfix of a step is its row."""

from __future__ import annotations

import re

from triage_agent.runs.console.dialect import Dialect, Sink

_POSTFIX = re.compile(r"(?:^|,\s*)(?P<k>[A-Za-z_][\w/.-]*)=(?P<v>[-+]?(?:\d[\d.]*(?:e[-+]?\d+)?|nan|inf))(?=,|$)", re.I)


def postfix_row(rest: str) -> dict[str, float]:
    """The `key=value` pairs of a tqdm postfix (after the elapsed/remaining and rate fields)."""
    if "=" not in rest:  # a bar without a postfix, most of them
        return {}
    return {m.group("k"): float(m.group("v")) for m in _POSTFIX.finditer(rest.replace(" ", ""))}


class Postfix(Dialect):
    order = 10
    name = "tqdm postfix"
    sniff = rb"\d+/\d+ \[[\d:]+<[\d:?]+,[^\]]*(?:act_loss|reward|kl)="
    trainer = "openrlhf"
    markers = (b"%|",)
    literals = ()  # it reads no line itself: the bars dialect hands it each training-bar redraw
    examples = (
        "Train step of epoch 0:  12%|█▏        | 12/100 [01:02<07:33,  5.15s/it, act_loss=0.1, reward=0.5, kl=0.01]",
        "Episode [1/2]:  40%|████      | 4/10 [00:40<01:00, 10.0s/it, policy_loss=-0.02, reward=0.61, "
        "response_length=812.0]",
    )

    def __init__(self) -> None:
        self.pending: tuple[int, dict[str, float]] | None = None  # the last postfix of the current step

    def on_bar(self, current: int, rest: str, lineno: int, sink: Sink) -> None:
        if self.pending is not None and self.pending[0] != current:
            self.flush(sink, lineno)
            self.pending = None
        vals = postfix_row(rest)
        if vals and current > 0:
            self.pending = (current, vals)

    def flush(self, sink: Sink, lineno: int | None = None) -> None:
        if self.pending is not None:
            step, vals = self.pending
            sink.add_row({"step": step, **vals}, sink.lines if lineno is None else lineno, self.name)


__all__ = ["Postfix", "postfix_row"]
