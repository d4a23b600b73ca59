"""Rounds of an alternating run from names (findings-v4.md, "the seed's own artifact layout"): a round number and
a role in a folder name (`selector_round2/`, `round_2/selector/`) or a file name (`selector_round1_reward_history
.jsonl`, `generator_round2_train.log`), and a per-round log of step lines read as that round's reward history.

The BAR-RAG seed (shared/seeds/000_4933788cbac857c9.txt, 3.1) tells users to gather `debug_artifacts/{logs,
rewards,configs}` with flat, round-prefixed names; those files are the same run as the round-folder layout.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from triage_agent import lazy
from triage_agent.runs.tables import LINE

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy.module("pandas")

_ROUND_DIR = re.compile(r"^(?P<role>[A-Za-z][A-Za-z0-9-]*?)_round_?(?P<n>\d+)$")
_ROUND_ONLY = re.compile(r"^round_?(?P<n>\d+)$")
# a file name that starts with <role>_round<N>: `selector_round1_reward_history.jsonl`, `generator_round2.log`
_ROUND_FILE = re.compile(r"^(?P<role>[A-Za-z][A-Za-z0-9-]*?)_round_?(?P<n>\d+)(?:[_.-](?P<rest>.*))?$")
ROUND_TABLES = ("reward_history", "reward_samples")
MAX_ROUND = 100_000  # a 40-digit "round" number is no round

# words a logged name carries around the component's own (`train/boundary_reward_mean` is `boundary`)
_NOISE = {"reward", "rewards", "mean", "avg", "average", "train", "training", "selector", "generator", "score",
          "r", "rw"}
_ALIASES = {"acc": "accuracy", "gen_accuracy": "accuracy", "correct": "accuracy"}
# trainer bookkeeping a round log prints beside its rewards: never a reward component
_NOT_COMPONENTS = {"lr", "learning_rate", "loss", "grad_norm", "epoch", "time", "elapsed", "throughput", "tokens",
                   "it", "iter", "iteration", "global_step", "samples", "memory", "gpu_mem"}
# a round's role by the columns its history has (load.py's rule for histories outside round folders)
ROLE_COLUMNS = {"selector": "boundary", "generator": "accuracy"}


def _index(text: str) -> int | None:
    n = int(text[:7])  # bounded digits: a name of a million digits is not parsed as a number
    return n if len(text) <= 6 and n <= MAX_ROUND else None


def from_dirs(dirs: tuple[str, ...]) -> tuple[str, int] | None:
    """`selector_round2/x`, `round2/selector/x`, `round_2/selector/x` -> (role, 2)."""
    for i, part in enumerate(dirs):
        m = _ROUND_DIR.match(part)
        if m and m.group("role").lower() != "round" and (n := _index(m.group("n"))) is not None:
            return m.group("role").lower(), n
        m = _ROUND_ONLY.match(part)
        if m and i + 1 < len(dirs) and (n := _index(m.group("n"))) is not None:
            return dirs[i + 1].lower(), n
    return None


def _stem(name: str) -> str:
    stem = name
    while "." in stem and len(stem.rsplit(".", 1)[1]) <= 8:  # `x.reward_history.jsonl`, `train.log.1`
        head, tail = stem.rsplit(".", 1)
        if not tail.isalnum():
            break
        stem = head
    return stem


def from_file(name: str) -> tuple[str, int, str] | None:
    """`selector_round1_reward_history.jsonl` -> ("selector", 1, "reward_history"); the rest may be empty."""
    m = _ROUND_FILE.match(_stem(name))
    if m is None or m.group("role").lower() == "round" or (n := _index(m.group("n"))) is None:
        return None
    return m.group("role").lower(), n, (m.group("rest") or "").lower()


def round_of(rel_parts: tuple[str, ...]) -> tuple[str, int] | None:
    """The round a file belongs to: its folders' names first, then its own name."""
    got = from_dirs(rel_parts[:-1])
    if got is not None:
        return got
    named = from_file(rel_parts[-1]) if rel_parts else None
    return (named[0], named[1]) if named else None


def table_role(name: str) -> str | None:
    """The round table a round-prefixed file name holds (`selector_round1_reward_history.csv` -> reward_history)."""
    named = from_file(name)
    return named[2] if named and named[2] in ROUND_TABLES else None


def component(key: str) -> str | None:
    """The component a logged name means in a round's log: `boundary_reward` and `reward/boundary` are `boundary`,
    `gen_acc` is `accuracy`; None for bookkeeping (`lr`, `loss`) and for names of several words."""
    low = key.lower().strip()
    if low in _ALIASES:
        return _ALIASES[low]
    words = [w for w in re.split(r"[/_.\-\s]+", low) if w and w not in _NOISE]
    if len(words) != 1 or words[0] in _NOT_COMPONENTS or not words[0].isidentifier():
        return None
    return _ALIASES.get(words[0], words[0])


def history_from_rows(rows: list[dict[str, Any]], role: str) -> pd.DataFrame | None:
    """A round's reward history from a log's step rows (raw names), or None when the rows hold nothing of the
    role (a selector log without a boundary reward, a generator log without accuracy)."""
    names: dict[str, str] = {}
    for row in rows[:200]:  # every key shows up early
        for k in row:
            if k != "step" and k not in names and (c := component(k)) is not None and c not in names.values():
                names[k] = c
    need = ROLE_COLUMNS.get(role)
    if need is not None and need not in names.values():
        return None
    if not names or not rows:
        return None
    out: dict[str, list[Any]] = {"step": [], **{c: [] for c in names.values()}}
    for i, row in enumerate(rows):
        step = row.get("step", i)
        if not isinstance(step, (int, float)) or isinstance(step, bool):
            continue
        out["step"].append(step)
        for k, c in names.items():
            v = row.get(k)
            out[c].append(v if isinstance(v, (int, float)) and not isinstance(v, bool) else float("nan"))
    frame = pd.DataFrame(out)
    frame[LINE] = range(1, len(frame) + 1)  # the row's place in the log's step rows, for reported bad rows
    return frame if len(frame) else None
