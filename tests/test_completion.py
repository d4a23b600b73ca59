"""`triage completion`: the scripts complete in a real bash (and zsh, where installed) from the parser's own
commands, options and choices."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.conftest import cli


def _complete(script: str, words: list[str]) -> list[str]:
    """COMPREPLY of `_triage` for the words typed so far (the last one being completed), in a real bash."""
    arr = " ".join(f"'{w}'" for w in words)
    prog = f"{script}\nCOMP_WORDS=({arr}); COMP_CWORD={len(words) - 1}; _triage; printf '%s\\n' \"${{COMPREPLY[@]}}\"\n"
    done = subprocess.run(["bash", "--norc", "-c", prog], capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.split()


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_bash_completes_commands_options_and_choices():
    code, script, _ = cli("completion", "bash")
    assert code == 0 and script.startswith("# triage completion (bash)")
    assert _complete(script, ["triage", "ins"]) == ["inspect"]
    assert set(_complete(script, ["triage", "inspect", "--fa"])) == {"--fail-on"}
    assert _complete(script, ["triage", "inspect", "--fail-on", "m"]) == ["medium"]
    assert "completion" in _complete(script, ["triage", "c"]) and "compare" in _complete(script, ["triage", "c"])


@pytest.mark.skipif(shutil.which("zsh") is None, reason="no zsh on this machine")
def test_zsh_loads_the_script():
    _, script, _ = cli("completion", "zsh")
    subprocess.run(["zsh", "-f", "-c", script], check=True, timeout=60)


def test_fish_names_every_command_and_its_long_options():
    _, script, _ = cli("completion", "fish")
    assert "-a inspect " in script and "__fish_seen_subcommand_from inspect' -l fail-on -x -a 'high medium info'" in script
    assert "-a completion " in script
