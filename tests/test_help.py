"""Every command has --help with an example, and the README shows every command in use."""

import re
import subprocess
import sys

from tests.conftest import REPO
from triage_agent.cli import commands as registered
from triage_agent.cli import parser


def commands():
    return [c.name for c in registered()]


def test_the_parser_is_built_from_the_command_registry():
    sub = next(a for a in parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    assert list(sub.choices) == commands()
    # the command modules of the package, each registering one command (an unregistered module would be lost)
    modules = sorted(p.stem for p in (REPO / "triage_agent" / "cli").glob("*.py") if p.stem not in ("__init__", "base"))
    assert sorted(commands()) == modules


def test_every_command_has_help_with_an_example():
    for name in commands():
        proc = subprocess.run([sys.executable, "-m", "triage_agent", name, "--help"], capture_output=True, text=True,
                              check=False)
        assert proc.returncode == 0, name
        assert re.search(rf"example: .*triage {name}\b", proc.stdout), name


def test_readme_shows_every_command():
    readme = (REPO / "README.md").read_text()
    for name in commands():
        assert f"triage {name}" in readme, name


def test_progress_bar_only_on_a_terminal():
    import io
    import threading

    from rich.console import Console

    from triage_agent.cli import progress as _progress
    from triage_agent.runs.load import load_run

    assert _progress(Console(file=io.StringIO())) is None
    buf = io.StringIO()
    threads = threading.active_count()
    update = _progress(Console(file=buf, force_terminal=True, width=100))
    # drawn by the updates, with no refresh thread: a sweep forks its workers only when no other thread runs
    assert threading.active_count() == threads
    load_run(REPO / "sample_runs" / "healthy", update)
    assert "reading" in buf.getvalue()
