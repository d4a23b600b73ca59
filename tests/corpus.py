"""Score triage against the labelled corpus of real public runs in tests/real_runs (issue 22, item 7).

Each run folder holds the run's files as its repository has them; `labels/<run>.json` says, from the run's
own numbers and before triage was run on it, what is wrong with it (finding ids with evidence) or that it is
healthy. The score: recall of labelled problems (a labelled id that triage raises, at any severity), false
alarms (a medium or high finding on a run labelled healthy), and unreadable runs (triage refuses the folder).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

CORPUS = Path(__file__).resolve().parent / "real_runs"
LABELS = CORPUS / "labels"
FIRST_BATCHES = "1-4"  # the runs labelled before batch A (issues 22-28): a label without a batch is one of them


@dataclass
class RunScore:
    name: str
    labelled: list[str]
    healthy: bool
    batch: str = FIRST_BATCHES
    readable: bool = True  # the label's own judgement: False where refusing the folder is the right answer
    found: list[str] = field(default_factory=list)  # every id triage raised
    alarms: list[str] = field(default_factory=list)  # medium/high ids
    unreadable: str | None = None

    @property
    def missed(self) -> list[str]:
        return [i for i in self.labelled if i not in self.found]

    @property
    def false_alarms(self) -> list[str]:
        return self.alarms if self.healthy else []


@dataclass
class Score:
    runs: list[RunScore]

    @property
    def labelled(self) -> int:
        return sum(len(r.labelled) for r in self.runs)

    @property
    def caught(self) -> int:
        return sum(len(r.labelled) - len(r.missed) for r in self.runs)

    @property
    def recall(self) -> float:
        return self.caught / self.labelled if self.labelled else 1.0

    @property
    def false_alarm_runs(self) -> list[RunScore]:
        return [r for r in self.runs if r.false_alarms]

    @property
    def unreadable(self) -> list[RunScore]:
        return [r for r in self.runs if r.unreadable]

    def batch(self, name: str) -> Score:
        return Score([r for r in self.runs if r.batch == name])

    @property
    def batches(self) -> list[str]:
        return list(dict.fromkeys(r.batch for r in self.runs))

    def line(self) -> str:
        healthy = sum(r.healthy for r in self.runs)
        batches = {r.batch for r in self.runs}
        which = f" batch {next(iter(batches))}" if len(batches) == 1 else ""
        return (f"real-run corpus{which}: {len(self.runs)} runs ({healthy} healthy); recall {self.recall:.2f} "
                f"({self.caught}/{self.labelled} labelled problems); false alarms on "
                f"{len(self.false_alarm_runs)}/{healthy} healthy runs; unreadable {len(self.unreadable)}")


def labels(root: Path = CORPUS) -> list[dict[str, object]]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted((root / "labels").glob("*.json"))]


def score_run(label: dict[str, object], now: float | None = None, root: Path = CORPUS) -> RunScore:
    from triage_agent.commands.inspect import inspect
    from triage_agent.errors import TriageError

    name = str(label["run"])
    problems = label.get("problems") or []
    assert isinstance(problems, list)
    got = RunScore(name, [str(p["id"]) for p in problems], bool(label["healthy"]),
                   str(label.get("batch", FIRST_BATCHES)), bool(label.get("readable", True)))
    try:
        report = inspect(str(root / name), now=now)
    except TriageError as exc:
        got.unreadable = str(exc)
        return got
    got.found = [f.id for f in report.findings]  # type: ignore[union-attr]
    got.alarms = [f.id for f in report.findings if f.at_least("medium")]  # type: ignore[union-attr]
    return got


# The labels describe each run as it was found, long after it stopped; a fresh checkout's files are minutes old,
# so the run is read as of a year from now (file age is only the life cycle's last resort: post-training-findings.md)
YEAR = 365 * 86400.0


def score(now: float | None = None, root: Path = CORPUS) -> Score:
    import time

    when = time.time() + YEAR if now is None else now
    return Score([score_run(label, when, root) for label in labels(root)])


RESULT: list[Score] = []  # the last score, for the terminal summary
