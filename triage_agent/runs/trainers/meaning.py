"""Names no profile knows, resolved by meaning (trainer-profiles.md, "Meaning, not spelling").

A name is split into tokens (`/ _ . -` and camelCase). Scope tokens (`train`, `rollout`, `actor`, `env`, ...)
and aggregation tokens (`mean`, `avg`, `total`, ...) say where and how; concept tokens say what. A name
qualifies for a series when its concepts say that series and nothing else, and its aggregation is the batch's
mean or total (or none): `env/all/reward/total` is a reward, `response_len/max` is no length, `reward_std` is
the reward's spread. Among the names that qualify for one series the most specific wins (every token known,
then a mean or total, then the fewest tokens); two that tie are reported and neither is chosen.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache

_SPLIT = re.compile(r"[/_.\-\s:@]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")

SCOPE = frozenset({"train", "training", "rollout", "rollouts", "actor", "critic", "env", "all", "ppo", "update",
                   "policy", "batch", "step", "trainer", "sampling", "samples", "grpo", "rl", "avg", "overall", "optim",
                   "objective", "environment", "worker", "agg", "effective", "metrics", "stats", "generate"})
MEAN = frozenset({"mean", "avg", "average", "total"})
OTHER_AGG = frozenset({"max", "min", "std", "median", "sum", "p50", "p90", "p95", "p99", "var", "count", "hist"})
HELD_OUT = frozenset({"eval", "val", "valid", "validation", "test"})
# tokens that make a name something else than the series its other tokens suggest
# ("per" is not one: tokens per sample is a length, turns per episode a turn count; a rate per second says "second")
NOT_TRAINING = frozenset({"time", "timing", "seconds", "sec", "throughput", "second", "memory", "mem", "gb",
                          "gpu", "flops", "mfu", "tflops", "speed", "latency", "perf"})


@dataclass(frozen=True)
class Inference:
    series: str
    name: str  # the raw name as the run logs it
    why: str  # "inferred from its name"


def tokens(name: str) -> list[str]:
    return [t.lower() for t in _SPLIT.split(_CAMEL.sub("_", name)) if t]


PAIR_SERIES = ("pref_accuracy", "pref_margin", "pref_chosen", "pref_rejected", "logps_chosen", "logps_rejected",
               "logps_ref_chosen", "logps_ref_rejected", "log_odds_ratio",
               "rm_accuracy", "rm_margin", "rm_chosen", "rm_rejected")


def _is_logp(toks: set[str]) -> bool:
    """Log-probabilities, however split: `logps`, `logprob`, torchtune's `log_probs`."""
    return bool(toks & {"logp", "logps", "logprob", "logprobs"}) or ("log" in toks and bool(toks & {"prob", "probs"}))


_COUNTING = frozenset({"group", "groups", "responses", "response", "per", "rate", "count", "num", "least"})


def _pair(toks: set[str]) -> str | None:
    """A pair statistic of a preference run (implicit rewards, log-probs of chosen and rejected) or a reward model's
    (scores of chosen and rejected), by its words; None for any other name."""
    # `positive`/`negative` name a pair's sides only outside counts of a group's responses: verl-agent's
    # `group_reward/positive_responses_per_group/mean` counts rewards above 0 and had made a GRPO run a DPO one
    counted = bool(toks & _COUNTING)
    side = ("chosen" if toks & {"chosen", "chose"} or (not counted and toks & {"pos", "positive"}) else
            "rejected" if toks & {"rejected", "reject"} or (not counted and toks & {"neg", "negative"}) else None)
    logp = _is_logp(toks)
    if side and toks & {"ref", "reference"}:
        # the reference model's log-probs: fixed, no signal alone; policy minus reference on the same batch is the
        # chosen answer's log-ratio (the implicit reward over beta), which is what displacement is judged on
        return f"logps_ref_{side}" if logp else None
    if side and logp:
        return f"logps_{side}"
    if side and toks & {"reward", "rewards"}:
        return f"pref_{side}"
    if side and toks & {"score", "scores"}:
        return f"rm_{side}"
    if toks & {"margin", "margins"} or ("gap" in toks and not toks & {"positive", "rate"}):
        return "rm_margin" if toks & {"score", "scores", "gap"} else "pref_margin"
    if "gap" in toks and toks & {"positive", "rate"}:  # the share of pairs scored chosen above rejected
        return "rm_accuracy"
    if toks & {"acc", "accuracy", "accuracies"} and toks & {"reward", "rewards", "pair", "pairwise", "preference"}:
        return "pref_accuracy"
    return None


def _any(toks: set[str], *stems: str) -> bool:
    """Whether a token starts with one of the stems (`clipfrac` starts with `clip`)."""
    return any(t.startswith(stems) for t in toks)


_KL = re.compile(r"^(?:r|k\d|)kl\d*$|^kl")  # kl, kl3, rkl, kl_loss's kl, klref
_SETTING = {"coef", "coeff", "coefficient", "scale", "threshold", "cutoff", "target", "ctl", "bonus"}
_ONE_SIDE = {"lower", "low", "high", "higher", "upper", "dual"}  # one side of a clip: the series is both
_OTHER_MODEL = {"critic", "value", "draft", "ref", "reference", "router", "aux"}
_MISMATCH = {"sample", "sampling", "rollout", "vllm", "gen", "generation", "engine", "inference", "infer", "behave",
             "behavior", "correction", "local", "error", "mismatch"}
_NOT = {"no", "not", "non", "without", "missing"}
_GROUP = {"group", "groups", "prompt", "prompts"}
_TIED_AT = {"zero", "zeros", "fail", "failed", "wrong", "correct", "pass", "passed", "solved"}
_DROPPED = {"filtered", "dropped", "removed", "discarded"}
_GENERATED = {"response", "responses", "completion", "completions", "gen", "generation", "generated", "generate",
              "output", "assistant", "ac", "answer"}


def _kl(toks: set[str]) -> str | None:
    """The KL series a name means: rollout/trainer mismatch, teacher, one update's, or the reference's."""
    if not (any(_KL.match(t) for t in toks) or toks & {"divergence", "approxkl", "policykl"}) or toks & _SETTING:
        return None
    if toks & {"reward", "rewards"}:
        return None  # a KL penalty paid as reward (AReaL's kl_rewards: -kl_ctl x the estimate), not the KL
    if toks & _MISMATCH:
        return "is_ratio"
    if toks & {"teacher", "student", "distill", "distillation", "opd", "kd"}:
        return "teacher_kl"
    if (toks & {"update", "ppo", "approx", "approxkl", "policykl"} or {"pre", "post"} <= toks) and \
            not toks & {"ref", "reference"}:  # Tinker's kl_pre_post: before and after one update
        return "update_kl"
    return "kl"


def _mismatch(toks: set[str]) -> bool:
    """Rollout engine against trainer: a log-prob difference, an importance-sampling ratio or weight."""
    logprob = bool(toks & {"logprob", "logprobs", "logp", "probs", "prob"})
    # a log-prob difference between two named things: the engine's (or `old`) and the trainer's; without such a
    # word it may be any two (a prefix-replay run's `actor/prefix_logprob_delta_abs` compares a teacher's tokens)
    return (logprob and bool(toks & {"diff", "difference", "mismatch", "error", "abs"})
            and bool(toks & (_MISMATCH | {"train", "training", "trainer", "old"}))) or \
        (bool(toks & {"importance", "tis", "imp", "is"}) and
         bool(toks & {"ratio", "weight", "sampling", "abs", "corr", "correction"}) and
         not toks & {"factor", "size", "eff", "norm"}) or \
        ("train" in toks and bool(toks & {"infer", "inference"})) or toks - SCOPE - MEAN == {"tis"}


# the series of a name's words, the most specific first: the first that holds wins
_RULES: tuple[tuple[str, Callable[[set[str]], bool]], ...] = (
    # an update that did not happen, flagged per step (a hint-ladder verl export's `update_skipped`, a custom GRPO
    # loop's `skipped`); what else a loop skips (samples, batches, groups, prompts) is not an optimizer step
    ("skipped_steps", lambda t: _any(t, "skip") and not t & {"samples", "sample", "batches", "groups", "group", "prompt",
                                                             "prompts", "tokens", "token", "data", "rate", "share"}),
    # groups dropped by a filter (DAPO dynamic sampling drops the groups whose rewards tie) and what it kept
    ("groups_filtered", lambda t: bool(t & _GROUP) and bool(t & _DROPPED) and "kept" not in t),
    ("groups_kept", lambda t: "kept" in t and bool(t & (_GROUP | {"samples", "sample"})) and not t & _DROPPED),
    # ... and the groups whose rewards are all 0 or all 1 (verl-agent's `group_reward/all_zero_rate`): tied groups,
    # at least that share of them
    ("zero_std_share", lambda t: ("zero" in t and "std" in t) or (bool(t & {"flat", "tied", "identical", "constant"})
                                                                   and bool(t & {"group", "groups"}))
     or (bool(t & {"group", "groups"}) and "all" in t and bool(t & _TIED_AT))),
    ("clipped_share", lambda t: (_any(t, "clip", "truncat", "overlong") or ("eos" in t and bool(t & _NOT)))
     and bool(t & {"len", "length", "lengths", "truncated", "truncation", "eos", "overlong", *_GENERATED})
     and not t & {"count", "num", "total"} and not t & _ONE_SIDE),
    # the share that ended with EOS: the complement of the share cut at the cap (a Tinker RLVR env's format_eos)
    ("eos_share", lambda t: "eos" in t and not t & _NOT and not t & {"count", "num", "tokens", "token", "mask"}),
    ("ratio_clip_share", lambda t: (_any(t, "clipfrac") or (_any(t, "clip") and bool(
        t & {"ratio", "frac", "fraction", "pg", "region"}))) and not t & _ONE_SIDE),
    ("length", lambda t: bool(t & {"len", "length", "lengths", "tokens", "ntokens"}) and bool(t & _GENERATED)
     and not t & {"prompt", "input", "ob", "padded", "packed", "total", "seq"}),
    ("num_turns", lambda t: bool(t & {"turn", "turns"}) and not t & {"tokens", "len", "length", "max", "stop"}
     or ("round" in t and "number" in t)),
    ("tool_failure_share", lambda t: _any(t, "tool") and bool(t & {"fail", "failure", "failed", "invalid", "error"})),
    ("staleness", lambda t: bool(t & {"staleness", "stale", "age", "lag"}) or ({"off", "policy"} <= t and not t & {"loss", "dropped", "filtered"})),
    ("log_odds_ratio", lambda t: {"log", "odds"} <= t or "log_odds" in t),
    ("repetition_share", lambda t: _any(t, "repetit", "repeat")),
    ("grad_norm", lambda t: _any(t, "grad") and "norm" in t and not t & _OTHER_MODEL),
    ("lr", lambda t: "lr" in t or ("learning" in t and "rate" in t)),
    ("entropy", lambda t: (_any(t, "entrop") or "ent" in t) and not t & _SETTING and not t & _OTHER_MODEL),
)
_REWARD = {"reward", "rewards", "score", "scores", "return", "returns"}


def _reward(toks: set[str]) -> str | None:
    if not toks & _REWARD or _any(toks, "success") or any(_KL.match(t) for t in toks) or toks & {"advantage", "advantages", "filtered", "num", "count", "center", "loss",
                                     "low", "high", "length", "len"}:
        return None
    if toks & {"verifiable", "correctness"}:  # a task reward alone is the reward (AReaL task_reward)
        return "task_score"
    if toks & {"rlhf", "penalized", "shaped"}:
        return "optimized_reward"
    return "reward_std" if "std" in toks else "reward"


def _concept(toks: set[str]) -> str | None:
    """The series these tokens name, or None."""
    found = _pair(toks) or _kl(toks) or ("is_ratio" if _mismatch(toks) else None)
    found = found or next((series for series, holds in _RULES if holds(toks)), None) or _reward(toks)
    if found is None and (_any(toks, "acc", "success", "correct", "solved") or "pass" in toks):
        # not an optimiser step's flag (AReaL's update_successful)
        found = "pass_rate" if not toks & {"proj", "token", "update", "optimizer", "step"} else None
    if found is None and toks & {"kd", "distill", "distillation"} and _any(toks, "loss"):
        found = "teacher_kl"  # a distillation loss is the KL (or cross-entropy) to the teacher
    if found is None and (_any(toks, "loss") or "nll" in toks) and not toks & (_SETTING | _OTHER_MODEL | {"tokens", "num"}):
        found = "loss"
    return found


@lru_cache(maxsize=4096)  # the same names recur across a sweep's runs
def infer(name: str) -> tuple[str, int] | None:
    """(series, specificity) for a name that means one training series, or None. Higher specificity wins."""
    toks = tokens(name)
    if not toks:
        return None
    s = set(toks)
    if s & HELD_OUT or s & NOT_TRAINING:
        return None
    series = _concept(s)
    if series is None:
        return None
    if s & OTHER_AGG and not (series in ("reward_std", "zero_std_share") and s & OTHER_AGG == {"std"}):
        return None  # a max, min or spread of the batch: the mean is the series
    concept_words = s - SCOPE - MEAN - OTHER_AGG
    unknown = len([t for t in concept_words if not _is_concept_word(t)])
    return series, (0 if unknown else 100) + (10 if s & MEAN else 0) - len(toks)


_CONCEPT_WORDS = ("skip", "chosen", "reject", "pos", "neg", "margin", "gap", "positive", "policy", "pair", "reward", "score",
                  "return", "turn", "tool", "fail", "stale", "age", "repet", "importance", "tis", "is", "teacher",
                  "verifiable", "task", "zero", "group", "num", "per", "entropy", "ent", "nll", "kd", "odds", "off", "kl", "grad", "norm", "loss", "len", "length", "tokens",
                  "clip", "truncat", "eos", "lr", "learning", "rate", "acc", "pass", "correct", "solved", "success",
                  "response", "completion", "gen", "output", "sequence", "seq", "logprob", "logp", "prob", "diff",
                  "mismatch", "error", "abs", "ratio", "frac", "fraction", "ref", "approx", "std", "pg", "no", "kept",
                  "filtered", "dropped", "removed", "discarded", "prompt")


def _is_concept_word(t: str) -> bool:
    return t.startswith(_CONCEPT_WORDS)


# a pair statistic means its paradigm's own series: a preference run's accuracy is its pair accuracy, a reward
# model's pair statistics are its own
_AS = {"preference": {"pass_rate": "pref_accuracy"},
       "reward_model": {"pass_rate": "rm_accuracy", "pref_accuracy": "rm_accuracy", "pref_margin": "rm_margin",
                        "pref_chosen": "rm_chosen", "pref_rejected": "rm_rejected"}}


def paradigm_of(names: Iterable[str]) -> tuple[str, list[str]] | None:
    """A preference or reward-model run told by its names' meaning: at least two pair statistics, those of a
    preference run (implicit rewards, log-probs of chosen and rejected) or of a reward model (their scores)."""
    pairs = [(n, got[0]) for n in names if (got := infer(n)) is not None and got[0] in PAIR_SERIES]
    for paradigm, prefix in (("preference", ("pref_", "logps_", "log_odds")), ("reward_model", ("rm_",))):
        hits = [(n, s) for n, s in pairs if s.startswith(prefix)]
        # an accuracy alone proves nothing (`accuracy_reward` is a GRPO reward function): a chosen, rejected or
        # margin statistic must be among them
        if len(hits) >= 2 and any(not s.endswith("accuracy") for _, s in hits):
            return paradigm, [n for n, _ in hits][:4]
    return None


def resolve(names: Iterable[str], taken: set[str], paradigm: str | None = None
            ) -> tuple[dict[str, Inference], dict[str, list[str]]]:
    """Series not in `taken`, each from the most specific of `names` that means it; and the ties: series ->
    the names that tied (none of them is chosen). Pair statistics only on the runs of their paradigm."""
    allowed = {"preference": ("pref_", "logps_", "log_odds"), "reward_model": ("rm_",)}.get(paradigm or "", ())
    best: dict[str, tuple[int, list[str]]] = {}
    for name in names:
        got = infer(name)
        if got is not None and got[0] in _AS.get(paradigm or "", {}):
            got = (_AS[paradigm or ""][got[0]], got[1])
        if got is None or got[0] in taken or (got[0] in PAIR_SERIES and not got[0].startswith(allowed or ("-",))):
            continue
        series, score = got
        old = best.get(series)
        if old is None or score > old[0]:
            best[series] = (score, [name])
        elif score == old[0]:
            old[1].append(name)
    chosen = {s: Inference(s, ns[0], "inferred from its name") for s, (_, ns) in best.items() if len(ns) == 1}
    ties = {s: ns for s, (_, ns) in best.items() if len(ns) > 1}
    return chosen, ties


def inferred_text(series: str, raw: str) -> str:
    """How a series resolved by meaning is named wherever it is shown (header, JSON, evidence)."""
    return f"{series} = {raw}, inferred from its name"
