"""What a reward component measures, from its name (post-training-findings.md, `reward.task_signal_dead`): the
task (correctness, accuracy, answer, equation, pass, exec, math, code, f1, em...) or an auxiliary shaping term
(format, length, style...). Names are split into words (`correctness_reward_func` -> correctness, reward,
func; `formatReward` -> format, reward); an auxiliary word wins over a task word (`answer_format` checks a
format), and a name with neither is `unknown`.
"""

from __future__ import annotations

import re
from typing import Literal

Role = Literal["task", "auxiliary", "unknown"]

TASK_WORDS = frozenset({
    "correct", "correctness", "accuracy", "acc", "accurate", "answer", "answers", "ans", "equation", "equations",
    "pass", "passed", "passrate", "exec", "execution", "executes", "math", "code", "coding", "f1", "em",
    "exact", "solve", "solved", "solution", "verify", "verified", "verifier", "verifiable", "test", "tests",
    "unittest", "gold", "task", "success", "outcome", "result", "score", "gsm8k", "countdown", "rouge", "bleu",
})
AUX_WORDS = frozenset({
    "format", "formatting", "fmt", "length", "len", "style", "xml", "xmlcount", "tag", "tags", "think",
    "thinking", "reasoning", "strict", "soft", "count", "repetition", "repeat", "language", "lang", "cosine",
    "overlong", "penalty", "brevity", "structure", "structured", "int", "integer", "json", "schema", "diversity",
})
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def words(name: str) -> list[str]:
    """`correctness_reward_func` -> [correctness, reward, func]; `formatReward` -> [format, reward]."""
    out: list[str] = []
    for part in re.split(r"[_\-/.\s]+", name):
        out += [w.lower() for w in _WORD.findall(part)] if not part.isalnum() or not part.islower() else [part.lower()]
    return out


def role(name: str) -> Role:
    ws = set(words(name))
    if ws & AUX_WORDS:
        return "auxiliary"
    if ws & TASK_WORDS:
        return "task"
    return "unknown"
