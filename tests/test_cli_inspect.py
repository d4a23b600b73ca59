"""`triage inspect` end to end, through the console script's main()."""

import io
import json
import subprocess
import sys

import pytest
from rich.console import Console

from tests.conftest import SAMPLES
from triage_agent.cli import main

PLANTED = {
    "healthy": set(),
    "boundary_collapse": {"filter.boundary_starved", "reward.boundary_suppressed", "reward.boundary_oscillating",
                          "reward.boundary_variance_dominates", "generator.accuracy_off_target"},
    "boundary_variance_near_miss": set(),
    "frozen_generator": {"rounds.generator_frozen", "rounds.selector_stale"},
    "few_rollouts": {"rollouts.too_few"},
    "reward_hacking": {"hacking.proxy_gold_divergence", "hacking.high_score_failures", "calibration.miscalibrated",
                       "calibration.too_frequent"},
    "calibration_healthy": set(),
    "trl_healthy": set(),
    "trl_entropy_collapse": {"policy.entropy_collapse"},
    "verl_kl_explosion": {"policy.kl_explosion"},
    "swift_zero_variance": {"reward.zero_variance_groups"},
    "trl_oom_crash": {"log.crash"},
    "verl_length_growth": {"generation.length_explosion", "generation.truncated"},
    "trl_dpo_saturated": {"preference.saturated"},
    "trl_dpo_displacement": {"preference.likelihood_displacement"},
    "swift_dpo_healthy": set(),
    "trl_sft_overfit": {"train.overfitting"},
    "trl_grpo_task_dead": {"reward.task_signal_dead"},
    # findings-v4.md: each new id on its sample, a healthy near-miss beside it
    "verl_entropy_blowup": {"policy.entropy_blowup", "generation.degenerate"},
    "verl_entropy_rise": set(),
    "verl_async_drift": {"policy.off_policy_stale", "policy.train_inference_mismatch"},
    "verl_async_steady": set(),
    "nemo_groups_too_hard": {"reward.groups_too_hard", "reward.zero_variance_groups"},
    "nemo_groups_too_easy": {"reward.groups_too_easy", "reward.zero_variance_groups"},
    "nemo_groups_mixed": set(),
    "nemo_agent_collapse": {"agent.tool_failures", "agent.turns_collapsed"},
    "nemo_agent_healthy": set(),
    "deepspeed_rm_steps_skipped": {"optim.steps_skipped"},
    "deepspeed_rm_fp16_warmup": set(),
    "trl_resume_jump": {"run.resume_discontinuity"},
    "trl_resume_clean": set(),
}


def run_cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=Console(file=out, width=200), stderr=Console(file=err, width=200))
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_sample_runs_raise_exactly_the_planted_findings(name):
    code, out, _ = run_cli("inspect", str(SAMPLES / name), "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["schema"] == "triage.report/v1"
    raised = {f["id"] for f in doc["findings"] if f["severity"] in ("high", "medium")}
    assert raised == PLANTED[name]
    for a in doc["adjustments"]:
        # checked on the data and met, or honestly not predictable (and then never shown as checked)
        assert a["meets_target"] is True or (a["meets_target"] is None
                                             and a["predicted"] == {"note": "not predictable from this run"}), a


def test_boundary_collapse_report_document():
    _, out, _ = run_cli("inspect", str(SAMPLES / "boundary_collapse"), "--json")
    doc = json.loads(out)
    assert doc["run"]["kind"] == "selector-generator"
    assert doc["run"]["rounds"] == {"generator": [1, 2, 3], "selector": [1, 2, 3]}
    assert doc["source"] == {"kind": "offline"}
    starved = next(f for f in doc["findings"] if f["id"] == "filter.boundary_starved")
    assert starved["evidence"]["source"] == "data/filter_stats.jsonl"
    keys = {a["key"]: a for a in doc["adjustments"]}
    assert keys["filter.easy_threshold"]["from"] == 0.4
    assert keys["reward.weights.format"]["from"] == 1.5


def test_fail_on_exit_codes():
    assert run_cli("inspect", str(SAMPLES / "boundary_collapse"), "--fail-on", "high")[0] == 1
    assert run_cli("inspect", str(SAMPLES / "few_rollouts"), "--fail-on", "medium")[0] == 1
    assert run_cli("inspect", str(SAMPLES / "healthy"), "--fail-on", "medium")[0] == 0  # no rule raises `low`: not offered


def test_terminal_view_shows_findings_and_sparklines():
    code, out, _ = run_cli("inspect", str(SAMPLES / "boundary_collapse"))
    assert code == 0
    assert "filter.boundary_starved" in out
    assert any(ch in out for ch in "▁▂▃▄▅▆▇█")
    assert "band 0.4-0.6" in out


def test_missing_folder_is_one_line_exit_2(tmp_path):
    code, out, err = run_cli("inspect", str(tmp_path / "missing"))
    assert code == 2 and out == ""
    assert err.strip().count("\n") == 0 and "no such folder" in err


def test_console_script_json_stdout_only(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "triage_agent", "inspect", str(SAMPLES / "few_rollouts"), "--json"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0
    json.loads(proc.stdout)
    assert "Traceback" not in proc.stderr


def test_a_trainer_run_shows_no_pseudo_round():
    # issue 41: trl_grpo_task_dead logs two reward components; their per-step table is no round of the run's
    code, out, _ = run_cli("inspect", str(SAMPLES / "trl_grpo_task_dead"), "--json")
    assert json.loads(out)["run"]["rounds"] == {}
    _, text, _ = run_cli("inspect", str(SAMPLES / "trl_grpo_task_dead"))
    assert "policy_round" not in text and "Per-round series" not in text
    from triage_agent.agent import tools
    from triage_agent.findings.facts import resolve
    from triage_agent.runs.load import load_run

    facts = resolve(load_run(SAMPLES / "trl_grpo_task_dead"))
    assert tools.call(facts, "run_overview", {}).output["rounds"] == []
    assert "diff_rounds" not in {s["function"]["name"] for s in tools.schemas(facts)}
