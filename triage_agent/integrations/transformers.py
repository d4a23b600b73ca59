"""`TriageCallback`: triage's rules on the metrics a transformers `Trainer` (and so every TRL trainer) logs,
while it trains.

    from triage_agent.integrations.transformers import TriageCallback
    trainer = GRPOTrainer(..., callbacks=[TriageCallback(every_n_logs=10, stop_on="high")])

Every `every_n_logs` logs, the rows logged so far go through the same path as a run folder's files (the
alias table onto canonical series, then the rules; `triage watch` does the same), and each finding that is
new, or more severe than before, is written once to `<output_dir>/triage_findings.jsonl` and to the
`triage` logger. With `stop_on="high"`, such a finding saves a checkpoint and stops training.

Install with `pip install 'rl-triage[trainer]'`. transformers is imported only if it is installed;
without it the class still follows `TrainerCallback`'s protocol (every `on_*` hook), so any loop that
calls those hooks can use it.
"""

from __future__ import annotations

import json
import logging
import math
import time
from pathlib import Path
from typing import Any

from triage_agent.commands.watch import WatchState, evaluate_pass
from triage_agent.findings.model import SEVERITIES, SEVERITY_RANK
from triage_agent.runs.load import run_from_rows


def _base() -> Any:
    """transformers' TrainerCallback when transformers is installed; nothing is imported when it is not."""
    try:
        from transformers import TrainerCallback
    except ImportError:
        return object
    return TrainerCallback


_Base: Any = _base()

LOG = logging.getLogger("triage")
FINDINGS_FILE = "triage_findings.jsonl"
SOURCE = "trainer logs (live)"
HOOKS = ("on_init_end", "on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end", "on_step_begin",
         "on_pre_optimizer_step", "on_optimizer_step", "on_substep_end", "on_step_end", "on_evaluate", "on_predict",
         "on_save", "on_log", "on_prediction_step", "on_push_begin")
MAX_ROWS = 200_000  # rows kept; past this every other one is dropped, as the log scanner does


class TriageCallback(_Base):  # type: ignore[misc]
    def __init__(self, every_n_logs: int = 10, stop_on: str | None = None, output_dir: str | Path | None = None,
                 findings_file: str = FINDINGS_FILE) -> None:
        if every_n_logs < 1:
            raise ValueError("every_n_logs must be 1 or more")
        if stop_on is not None and stop_on not in SEVERITIES[:3]:
            raise ValueError(f"stop_on must be one of {', '.join(SEVERITIES[:3])} or None")
        self.every_n_logs, self.stop_on, self.output_dir = every_n_logs, stop_on, output_dir
        self.findings_file = findings_file
        self.rows: list[dict[str, Any]] = []
        self.state = WatchState()
        self.logs = 0
        self.stopped_by: str | None = None  # the finding id that stopped training, if one did
        self.failures = 0  # hooks that failed (each is a warning, never an exception into the trainer)

    # -- the hooks that matter ----------------------------------------------------------------------
    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> Any:
        # a callback never raises into the trainer: a bug of ours, or a value we cannot read, costs a warning
        try:
            return self._on_log(args, state, control, logs)
        except Exception as exc:  # noqa: BLE001 - the user's training must go on
            return self._failed(exc, control)

    def _failed(self, exc: BaseException, control: Any) -> Any:
        if not self.failures:
            LOG.warning("triage: the callback failed (%s: %s); training goes on", type(exc).__name__, str(exc)[:200])
        self.failures += 1
        return control

    def _on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None) -> Any:
        if not logs or any(k in logs for k in ("train_runtime", "train_samples_per_second")):
            return control  # the final summary is not a training step
        row = {k: x for k, v in logs.items() if k != "step" and (x := _number(v)) is not None}
        row["step"] = int(getattr(state, "global_step", 0) or len(self.rows) + 1)
        self.rows.append(row)
        if len(self.rows) >= MAX_ROWS:
            self.rows = self.rows[::2]
        self.logs += 1
        if self.logs % self.every_n_logs == 0:
            self.evaluate(args, state, control)
        return control

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        try:
            if self.rows:
                self.evaluate(args, state, control)
        except Exception as exc:  # noqa: BLE001 - as in on_log
            return self._failed(exc, control)
        return control

    # -- the rules ------------------------------------------------------------------------------------
    def evaluate(self, args: Any, state: Any, control: Any) -> list[dict[str, Any]]:
        """Run the rules on the rows so far; write and return the findings that are new or more severe."""
        out_dir = Path(self.output_dir or getattr(args, "output_dir", None) or ".")
        config = _config(args)
        planned = getattr(state, "max_steps", None)
        run = run_from_rows(out_dir, SOURCE, list(self.rows), planned=planned if planned and planned > 0 else None,
                            trainer="transformers", config=config)
        events = evaluate_pass(run, self.state, time.time(), math.inf)
        docs = [ev.document() for ev in events]
        if docs:
            out_dir.mkdir(parents=True, exist_ok=True)
            with (out_dir / self.findings_file).open("a", encoding="utf-8") as fh:
                for doc in docs:
                    fh.write(json.dumps(doc, default=str) + "\n")
        for ev in events:
            LOG.warning("triage: %s %s from step %s: %s", ev.severity, ev.id, ev.step, ev.title)
            if self.stop_on and self.stopped_by is None and SEVERITY_RANK[ev.severity] <= SEVERITY_RANK[self.stop_on]:
                self.stopped_by = ev.id
                control.should_save = True  # the Trainer saves a checkpoint before it acts on the stop
                control.should_training_stop = True
                LOG.warning("triage: stopping training after a checkpoint (stop_on=%s)", self.stop_on)
        return docs


def _number(v: Any) -> float | None:
    """A logged value as a float, or None (a bool, a string, an integer too large for a float)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        return float(v)
    except OverflowError:
        return None


def _config(args: Any) -> dict[str, Any]:
    """The training arguments as flat config values (what the rules' suggestions point at)."""
    to_dict = getattr(args, "to_dict", None)
    try:
        values = to_dict() if callable(to_dict) else dict(vars(args)) if args is not None else {}
    except Exception:  # noqa: BLE001 - an odd args object only costs the config values
        return {}
    return {str(k): v for k, v in values.items() if isinstance(v, (int, float, str, bool))}


def _noop(self: TriageCallback, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
    return control


for _hook in HOOKS:  # the rest of TrainerCallback's protocol, for loops without transformers' base class
    if not hasattr(TriageCallback, _hook):
        setattr(TriageCallback, _hook, _noop)
