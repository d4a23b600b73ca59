"""Degenerate completions (findings-v4.md, `generation.degenerate`): text that loops, one symbol over and over, or
no words at all. Judged on a bounded head of each completion, in time linear in it.

- loop: a word 4-gram repeated so that repeated 4-grams fill at least half of the text, read as the rep-4 share
  (1 - distinct 4-grams / 4-grams; Welleck et al. 2019's seq-rep-4): a phrase of 10 words said 10 times is 0.90,
  prose well under 0.1;
- symbol: one non-alphanumeric character is at least 30% of the non-space characters ("!!!!", "????", "____");
- no letters: no letter and no digit at all, or 64 characters and more without a letter (a short numeric answer,
  "42", is an answer, not gibberish).
"""

from __future__ import annotations

from collections import Counter
from operator import itemgetter

MAX_CHARS = 4000  # of a completion judged (a looping one shows it long before)
MIN_WORDS = 12  # fewer words hold too few 4-grams to call a loop
REP4 = 0.5
SYMBOL_SHARE = 0.30
LETTERLESS_CHARS = 64
EXCERPT = 200  # characters of a degenerate sample shown as evidence


def kind(text: str) -> str | None:
    """"loop", "symbol", "no letters", or None for a completion that is none of these."""
    t = text[:MAX_CHARS].strip()
    if not t:
        return None  # an empty completion is a length problem, not gibberish
    if not any(c.isalnum() for c in t) or (len(t) >= LETTERLESS_CHARS and not any(c.isalpha() for c in t)):
        return "no letters"
    # every character counted in C, the blanks then left out (a list of the non-blank characters was a Python
    # test of each: most of the time a rollout dump's completions spent here); max() keeps the first of equal
    # counts, in the text's order, as most_common(1) does
    counts = Counter(t)
    blank = sum(k for c, k in counts.items() if c.isspace())
    top, n = max(((c, k) for c, k in counts.items() if not c.isspace()), key=itemgetter(1))
    if not top.isalnum() and n >= SYMBOL_SHARE * (len(t) - blank) and n >= 8:
        return "symbol"
    if rep4(t) >= REP4:
        return "loop"
    return None


def rep4(text: str) -> float:
    """The share of a text's word 4-grams that repeat an earlier one (0 for fewer than MIN_WORDS words)."""
    words = text.split()
    if len(words) < MIN_WORDS:
        return 0.0
    grams = list(zip(words, words[1:], words[2:], words[3:]))
    return 1.0 - len(set(grams)) / len(grams)


def excerpt(text: str) -> str:
    return text[:EXCERPT]
