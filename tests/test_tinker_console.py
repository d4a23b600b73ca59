"""Tinker's console (tinker-cookbook utils/ml_log.py's Rich tables, the SDK's non-retryable error line, its logger
names) read from its profile's dialect; lines copied from tests/real_runs/tinker_rlvr_qwen3_4b_rubric_if_*."""

from __future__ import annotations

from tests.conftest import cli
from triage_agent.commands.inspect import inspect

ESC = "\x1b"


def table(step: int, reward: float) -> str:
    """A `Step N` table as Rich prints it into a log: ANSI codes around the header cells, names cut with `…`."""
    head = (f"┃{ESC}[1;35m {ESC}[0m{ESC}[1;35mMetric                        {ESC}[0m{ESC}[1;35m {ESC}[0m┃"
            f"{ESC}[1;35m {ESC}[0m{ESC}[1;35mValue      {ESC}[0m{ESC}[1;35m {ESC}[0m┃")
    rows = [("env/all/reward/total", f"{reward:.6f}"), ("optim/entropy", "0.458961"), ("progress/batch", str(step)),
            ("progress/done_frac", f"{(step + 1) / 57:.6f}"), ("test/env/all/by_group/frac_al…", "0.210000")]
    body = "".join(f"│{ESC}[36m {ESC}[0m{ESC}[36m{k:<30}{ESC}[0m{ESC}[36m {ESC}[0m│{ESC}[32m {v:<11} {ESC}[0m│\n"
                   for k, v in rows)
    return (f"tinker_cookbook.utils.ml_log:195 [INFO] \n                     Step {step}                     \n"
            f"┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━┓\n{head}\n"
            f"┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━┩\n{body}"
            "└────────────────────────────────┴─────────────┘\n")


def env_block() -> str:
    # an environment's own per-step metrics, printed inside a rollout: no training step
    return "Per-step metrics:\n  Step 0:\n    pass_rate: 0.35\n    num_rubrics: 17\n    num_passed: 6\n"


FATAL = ("tinker.lib.retry_handler:222 [ERROR] Request failed with non-retryable error: BadRequestError: Error code: "
         "400 - {'detail': \"Prompt length plus max_tokens exceeds the model's context window: 20847 prompt tokens + "
         "16384 max_tokens > 32768.\"}\n")


def test_tables_are_the_rows_and_the_sdk_error_is_the_crash(make_run):
    # the trainer is told in the log's head; the tables come past the head that is read line by line
    log = "tinker_cookbook.rl.train:1104 [INFO] Will train on 57 batches\n" + "x\n" * 6000 + "".join(
        env_block() * 30 + table(step, 0.5 + 0.01 * step) for step in range(7)) + env_block() * 30 + FATAL
    rep = inspect(make_run({"logs.log": log}))
    scan = rep.run.logs[0]
    assert scan.trainer == "tinker" and scan.readers == {"tinker tables": 7} and scan.last_step == 6
    frame = rep.run.metrics.frame
    assert list(frame["step"]) == list(range(7)) and frame["reward"].iloc[-1] == 0.56
    assert "test/env/all/by_group/frac_al…" not in frame.columns  # a cut name is no name
    crash = next(f for f in rep.findings if f.id == "log.crash")
    assert crash.evidence["exception"] == "BadRequestError" and "context window" in crash.evidence["message"]
    assert rep.run.lifecycle == "crashed"


def test_a_tinker_log_that_stops_after_its_first_eval_made_no_progress(make_run):
    log = ("tinker_cookbook.utils.ml_log:475 [INFO] Logging to: logs_v2p5\n"
           "tinker_cookbook.rl.train:1104 [INFO] Will train on 57 batches\n"
           "tinker_cookbook.utils.misc_utils:23 [INFO] run_evals took 199.03 seconds\n"
           "openai._base_client:1621 [INFO] Retrying request to /chat/completions in 0.461200 seconds\n")
    code, out, _ = cli("inspect", str(make_run({"logs.log": log})), "--json")
    assert '"log.no_progress"' in out
