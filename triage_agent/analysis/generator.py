"""The generator's accuracy trajectory against `target_accuracy`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from triage_agent.analysis.stats import downsample, head, tail

END_FRACTION = 0.1  # spec: a round "ends" at the mean of its last 10% of steps


@dataclass(frozen=True)
class GeneratorRound:
    index: int
    start: float
    end: float
    n: int
    spark: list[float]
    checkpoint_in: str | None
    checkpoint_out: str | None


@dataclass(frozen=True)
class Trajectory:
    target: float
    rounds: list[GeneratorRound]

    @property
    def last(self) -> GeneratorRound | None:
        return self.rounds[-1] if self.rounds else None

    @property
    def previous(self) -> GeneratorRound | None:
        return self.rounds[-2] if len(self.rounds) >= 2 else None

    def gap(self) -> float | None:
        return None if self.last is None else self.last.end - self.target

    def moved_toward_target(self) -> float | None:
        """How much closer to the target the last round ended than the previous round (or its own start)."""
        if self.last is None:
            return None
        before = self.previous.end if self.previous is not None else self.last.start
        return abs(before - self.target) - abs(self.last.end - self.target)


def generator_round(index: int, accuracy: np.ndarray, checkpoint_in: str | None,
                    checkpoint_out: str | None) -> GeneratorRound:
    acc = accuracy[np.isfinite(accuracy)]
    return GeneratorRound(index, float(head(acc, END_FRACTION).mean()), float(tail(acc, END_FRACTION).mean()),
                          len(acc), downsample(acc, 40), checkpoint_in, checkpoint_out)
