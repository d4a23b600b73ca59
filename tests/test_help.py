"""Every command has --help with an example, and the README shows every command in use."""

import re
import subprocess
import sys

from tests.conftest import REPO
from triage_agent.cli import _parser


def commands():
    sub = next(a for a in _parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    return sorted(sub.choices)


def test_every_command_has_help_with_an_example():
    assert commands() == ["apply", "ask", "chat", "doctor", "inspect", "report"]
    for name in commands():
        proc = subprocess.run([sys.executable, "-m", "triage_agent", name, "--help"], capture_output=True, text=True,
                              check=False)
        assert proc.returncode == 0, name
        assert re.search(rf"example: .*triage {name}\b", proc.stdout), name


def test_readme_shows_every_command():
    readme = (REPO / "README.md").read_text()
    for name in commands():
        assert f"triage {name}" in readme, name
