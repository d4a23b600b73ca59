"""Fixtures that build small run folders in tmp dirs."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, settings

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "sample_runs"
REAL_RUNS = REPO.parent / "shared" / "real_runs"

# One Hypothesis profile for every property test: no deadline (the machines are shared; no test asserts a time),
# fixtures shared across examples allowed (each test makes its own files per example), and each test's example
# count (300 unless it names one with `n_examples(n)`) scaled by TRIAGE_EXAMPLES_SCALE (default 1, CI's counts;
# 10 for a long hunt, 0.1 for a quick pass)
EXAMPLES_SCALE = float(os.environ.get("TRIAGE_EXAMPLES_SCALE", "1"))


def n_examples(n: int) -> int:
    """A property test's example count: `n` by default, scaled by TRIAGE_EXAMPLES_SCALE (at least 1)."""
    return max(1, round(n * EXAMPLES_SCALE))


settings.register_profile("triage", max_examples=n_examples(300), deadline=None,
                          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
settings.load_profile("triage")


_CACHES = {"n": 0}


@pytest.fixture(autouse=True)
def own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test its own `$XDG_CACHE_HOME` (created only when used): a sweep's result cache kept by one test
    (or the user's own, in ~/.cache) never answers another's, whose rules or profiles may be patched."""
    if "base" not in _CACHES:
        _CACHES["base"] = tmp_path_factory.mktemp("xdg-cache")  # type: ignore[assignment]
    _CACHES["n"] += 1
    monkeypatch.setenv("XDG_CACHE_HOME", str(Path(_CACHES["base"]) / str(_CACHES["n"])))  # type: ignore[arg-type]


def write(root: Path, rel: str, content: Any) -> Path:
    """Write text, a JSON-able object (for .json), rows (list of dicts) or a DataFrame by suffix."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content)
    else:
        frame = content if isinstance(content, pd.DataFrame) else None
        if path.suffix == ".json":
            path.write_text(json.dumps(content))
        elif path.suffix == ".jsonl":
            rows = frame.to_dict(orient="records") if frame is not None else content
            path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        elif path.suffix == ".csv":
            (frame if frame is not None else pd.DataFrame(content)).to_csv(path, index=False)
        elif path.suffix == ".parquet":
            (frame if frame is not None else pd.DataFrame(content)).to_parquet(path, index=False)
        else:
            raise ValueError(rel)
    return path


@pytest.fixture
def make_run(tmp_path: Path) -> Callable[[dict[str, Any]], Path]:
    counter = {"n": 0}

    def build(files: dict[str, Any]) -> Path:
        counter["n"] += 1
        root = tmp_path / f"run{counter['n']}"
        root.mkdir()
        for rel, content in files.items():
            write(root, rel, content)
        return root

    return build


def finding_ids(report: Any, min_severity: str = "info") -> set[str]:
    return {f.id for f in report.findings if f.at_least(min_severity)}


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The hostile-input corpus in one line: how many cases ran, the slowest, the largest; the real-run corpus's
    score in another."""
    from tests import corpus, hostile

    for score in corpus.RESULT:
        terminalreporter.write_line(score.line())
    if hostile.RESULTS:
        slow = max(hostile.RESULTS, key=lambda r: r.seconds)
        big = max(hostile.RESULTS, key=lambda r: r.peak_mb)
        terminalreporter.write_line(
            f"hostile cases: {len(hostile.RESULTS)} forked runs; slowest {slow.seconds:.1f} s "
            f"({' '.join(slow.argv)[:60]}); largest peak {big.peak_mb:.0f} MB ({' '.join(big.argv)[:60]})")


def cli(*argv: str, width: int = 200, stdin: str | None = None) -> tuple[int, str, str]:
    """Run the CLI in-process with captured consoles: (exit code, stdout, stderr)."""
    import io

    from rich.console import Console

    from triage_agent.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=Console(file=out, width=width),
                stderr=Console(file=err, width=width, soft_wrap=True))
    return code, out.getvalue(), err.getvalue()


ENDPOINT_VARS = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "TRIAGE_BASE_URL", "TRIAGE_API_KEY", "TRIAGE_MODEL",
                 "TRIAGE_PROFILE", "TRIAGE_TIMEOUT", "TRIAGE_DEADLINE")


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No endpoint from the machine's environment; config and state under the test's own folder."""
    for k in ENDPOINT_VARS:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return monkeypatch


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
