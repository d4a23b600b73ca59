"""tools/make_sample_runs.py is deterministic and plants what each README says."""

import filecmp
import subprocess
import sys

from tests.conftest import REPO
from tests.test_cli_inspect import PLANTED
from triage_agent.commands.inspect import inspect


def generate(out):
    subprocess.run([sys.executable, str(REPO / "tools" / "make_sample_runs.py"), "--out", str(out)], check=True,
                   capture_output=True)


def test_generator_is_deterministic_and_plants_the_findings(tmp_path):
    generate(tmp_path / "a")
    generate(tmp_path / "b")
    for name in PLANTED:
        cmp = filecmp.dircmp(tmp_path / "a" / name, tmp_path / "b" / name)
        stack = [cmp]
        while stack:
            c = stack.pop()
            assert not c.diff_files and not c.left_only and not c.right_only, (name, c.diff_files)
            _, mismatch, errors = filecmp.cmpfiles(c.left, c.right, c.common_files, shallow=False)
            assert not mismatch and not errors, (name, mismatch)
            stack.extend(c.subdirs.values())
        raised = {f.id for f in inspect(tmp_path / "a" / name).findings if f.at_least("medium")}
        assert raised == PLANTED[name], name
        size = sum(p.stat().st_size for p in (tmp_path / "a" / name).rglob("*") if p.is_file())
        assert size < 2_000_000
