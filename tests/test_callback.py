"""`TriageCallback`: the same rules live, inside a training loop."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from types import SimpleNamespace

import pytest

FINDINGS_FILE = "triage_findings.jsonl"


@pytest.fixture
def integration(monkeypatch):
    """The integration module imported with transformers blocked: the protocol test needs no transformers,
    and torch never loads into the test process (the hostile tests fork it under an address-space cap)."""
    monkeypatch.setitem(sys.modules, "transformers", None)
    sys.modules.pop("triage_agent.integrations.transformers", None)
    yield importlib.import_module("triage_agent.integrations.transformers")
    sys.modules.pop("triage_agent.integrations.transformers", None)


def entropy_at(step: int) -> float:
    return 1.0 if step <= 10 else 0.01  # collapses after step 10


def test_protocol_loop_stops_on_a_high_finding_and_writes_it_once(tmp_path, integration):
    assert integration.FINDINGS_FILE == FINDINGS_FILE and integration.TriageCallback.__mro__[1] is object
    cb = integration.TriageCallback(every_n_logs=5, stop_on="high")
    args = SimpleNamespace(output_dir=str(tmp_path), learning_rate=1e-6, temperature=0.7,
                           to_dict=lambda: {"output_dir": str(tmp_path), "learning_rate": 1e-6, "temperature": 0.7})
    state = SimpleNamespace(global_step=0, max_steps=60)
    control = SimpleNamespace(should_training_stop=False, should_save=False)
    for hook in integration.HOOKS:  # the whole protocol is there, whatever the base class
        assert callable(getattr(cb, hook))
    stopped_at = None
    for step in range(1, 61):
        state.global_step = step
        cb.on_log(args, state, control, logs={"loss": 0.1, "reward": 0.5, "entropy": entropy_at(step),
                                              "learning_rate": 1e-6})
        if control.should_training_stop:
            stopped_at = step
            break
    # the rule needs the collapse to show in the tail: by hand it first does at 15 logged steps
    assert stopped_at == 15 and control.should_save is True and cb.stopped_by == "policy.entropy_collapse"
    rows = [json.loads(line) for line in (tmp_path / FINDINGS_FILE).read_text().splitlines()]
    assert [r["id"] for r in rows].count("policy.entropy_collapse") == 1
    assert next(r for r in rows if r["id"] == "policy.entropy_collapse")["severity"] == "high"
    cb.on_train_end(args, state, control)
    again = [json.loads(line)["id"] for line in (tmp_path / FINDINGS_FILE).read_text().splitlines()]
    assert again.count("policy.entropy_collapse") == 1  # once per run, not once per evaluation


def test_the_module_imports_nothing_from_transformers_when_it_is_absent():
    code = ("import sys; sys.modules['transformers'] = None\n"
            "from triage_agent.integrations.transformers import TriageCallback, HOOKS\n"
            "print(TriageCallback.__mro__[1].__name__, all(hasattr(TriageCallback, h) for h in HOOKS))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["object", "True"]


REAL_TRAINER = """
import json, sys
import torch, transformers
from triage_agent.integrations.transformers import TriageCallback


class Inject(transformers.TrainerCallback):
    # a logging hook that adds an entropy series collapsing after step 10
    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs is not None and "loss" in logs:
            logs["entropy"] = 1.0 if state.global_step <= 10 else 0.01
            logs["reward"] = 0.5


class Data(torch.utils.data.Dataset):
    def __len__(self):
        return 256

    def __getitem__(self, i):
        ids = torch.tensor([(i + k) % 64 for k in range(8)])
        return {"input_ids": ids, "labels": ids}


torch.manual_seed(0)
model = transformers.GPT2LMHeadModel(transformers.GPT2Config(n_layer=1, n_head=2, n_embd=16, vocab_size=64,
                                                             n_positions=16, bos_token_id=0, eos_token_id=0))
args = transformers.TrainingArguments(output_dir=sys.argv[1], max_steps=60, logging_steps=1, save_steps=1000,
                                      per_device_train_batch_size=4, report_to=[], use_cpu=True, disable_tqdm=True)
cb = TriageCallback(every_n_logs=5, stop_on="high")
trainer = transformers.Trainer(model=model, args=args, train_dataset=Data(), callbacks=[Inject(), cb])
trainer.train()
print(json.dumps({"stopped_by": cb.stopped_by, "step": trainer.state.global_step}))
"""


def test_a_real_trainer_on_cpu_stops_after_a_checkpoint(tmp_path):
    # in its own interpreter: torch never loads into the test process (the hostile tests fork it)
    for module in ("torch", "transformers", "accelerate"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (.ci/run installs the CPU build)")
    proc = subprocess.run([sys.executable, "-c", REAL_TRAINER, str(tmp_path)], capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    # stopped at the first evaluation (every 5 logs) that saw the collapse, as the protocol test found by hand
    assert got == {"stopped_by": "policy.entropy_collapse", "step": 15}
    assert (tmp_path / "checkpoint-15").is_dir()  # saved before stopping
    ids = [json.loads(line)["id"] for line in (tmp_path / FINDINGS_FILE).read_text().splitlines()]
    assert ids.count("policy.entropy_collapse") == 1
