"""DeepSpeed-Chat's step 3 (training/step3_rlhf_finetuning/main.py, print_rank_0): a step's losses on one line, its
reward on one of the next lines; one row of both. Two spellings:

    Epoch: 0 | Step: 12 | PPO Epoch: 1 | Actor Loss: 0.21 | Critic Loss: 0.12 | Unsupervised Loss: 0.0
    Average reward score: 1.25

and, before 2023-08, `epoch: 0|step: 12|ppo_ep: 1|act_loss: 0.21|cri_loss: 0.12|unsuper_loss: 0.0` then
`average reward score: 1.25`. Keys as printed, lower case, spaces as `_` (`actor_loss`, `average_reward_score`).
`Step` counts the generation batches of one epoch from 0: the row's step counts on across epochs, and the plan is
the epochs times the batches ("Beginning of Epoch 1/2, Total Generation Batches 477")."""

from __future__ import annotations

import re
from typing import Any

from triage_agent.runs import values
from triage_agent.runs.console.dialect import Dialect, Line, Sink

_PAIR = re.compile(r"^\s*([A-Za-z][A-Za-z_ ]*?)\s*:\s*(\S+)\s*$")
_STEP_LINE = re.compile(r"^(?:Epoch: \d+ \| Step: \d+ \| |epoch: \d+\|step: \d+\|)")
_REWARD = re.compile(r"^[Aa]verage reward score: (?P<v>\S+?),?(?:\s|$)")
_EPOCHS = re.compile(r"Beginning of Epoch (?P<e>\d+)/(?P<n>\d+), Total Generation Batches (?P<b>\d+)")


def _key(name: str) -> str:
    return name.strip().lower().replace(" ", "_")


class Steps(Dialect):
    order = 60
    name = "deepspeed-chat lines"
    sniff = rb"Epoch: \d+ \| Step: \d+ \| PPO Epoch|epoch: \d+\|step: \d+\|ppo_ep:"
    trainer = "deepspeed-chat"
    markers = (b" | Actor Loss: ", b"|act_loss: ", b"verage reward score: ", b"Beginning of Epoch ")
    examples = (
        "Epoch: 0 | Step: 12 | PPO Epoch: 1 | Actor Loss: 0.2099609375 | Critic Loss: 0.12042236328125 | "
        "Unsupervised Loss: 0.0",
        "Average reward score: 1.25",
        "epoch: 0|step: 0|ppo_ep: 1|act_loss: 0.2099609375|cri_loss: 0.12042236328125|unsuper_loss: 0.0",
        "average reward score: -0.67919921875",
        "Beginning of Epoch 1/1, Total Generation Batches 477",
    )

    def __init__(self) -> None:
        self.pending: tuple[dict[str, Any], int] | None = None  # a step's losses, waiting for its reward
        self.step = -1  # the last row's step
        self.first: int | None = None  # the first step line's own step (the count starts there)

    def read(self, line: Line, sink: Sink) -> bool:
        raw, text = line.raw, line.text
        if (b" | Actor Loss: " in raw or b"|act_loss: " in raw) and _STEP_LINE.match(text):
            self._emit(sink)
            row: dict[str, Any] = {}
            for part in text.split("|"):
                m = _PAIR.match(part)
                if m and (v := values.parse(m.group(2))) is not None:
                    row[_key(m.group(1))] = v
            printed = int(row.pop("step", 0))
            self.first = printed if self.first is None else self.first
            self.pending = (row, line.lineno)
            return True
        m = _REWARD.match(text) if b"verage reward score: " in raw else None
        if m and self.pending is not None and (v := values.parse(m.group("v"))) is not None:
            self.pending[0]["average_reward_score"] = v
            self._emit(sink)
            return True
        m = _EPOCHS.search(text) if b"Beginning of Epoch " in raw else None
        if m:  # after the banners dialect's per-epoch total: the whole plan
            sink.planned(int(m.group("n")) * int(m.group("b")), banner=True)
        return False

    def _next(self) -> int:
        return (self.first or 0) if self.step < 0 else self.step + 1

    def _emit(self, sink: Sink) -> None:
        if self.pending is None:
            return
        row, lineno = self.pending
        self.pending = None
        self.step = self._next()
        sink.add_row({"step": self.step, **row}, lineno, self.name)

    def flush(self, sink: Sink) -> None:
        if self.pending is not None:  # the last step's losses, its reward never printed
            row, lineno = self.pending
            sink.add_row({"step": self._next(), **row}, lineno, self.name)


__all__ = ["Steps"]
