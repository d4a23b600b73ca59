"""Hostile input, round 4 (issue 38), item 2: each run in a sweep, compare or watch has its own budget. One run
of a slow shape held a whole sweep hostage (8 healthy runs never reported). Here a hostile run (a table with a
new metric name on every line: seconds of work even when read linearly; on the start commit, minutes) sits beside
healthy ones, with a budget of a fraction of a second: the hostile run is a row that says so and every other run
reports. The budget is the lever, so nothing here measures a time."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from tests.hostile import run_fn

HEALTHY = 4


def _table(path: Path, rows: list[dict[str, float]]) -> None:
    path.mkdir(parents=True)
    (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _sweep(root: Path) -> None:
    for i in range(HEALTHY):
        _table(root / f"healthy{i}", [{"step": s, "loss": 2.0 - s / 50, "reward": s / 50} for s in range(1, 41)])
    _table(root / "hostile", [{"step": s, "loss": 1.0, f"k{s}": 1.0} for s in range(300_000)])


def _main(argv: list[str], seconds: str, warm: Path):
    """`triage ARGV` with a budget, after a warm-up read (the first read imports the readers); its JSON document
    shortened to what the tests look at (the harness keeps only the end of a long output)."""

    def call(out, err):
        import io
        import os

        from triage_agent.cli import main

        main(["inspect", str(warm)], stdout=Console(file=io.StringIO()), stderr=Console(file=io.StringIO()))
        os.environ["TRIAGE_RUN_SECONDS"] = seconds
        got = io.StringIO()
        code = main(argv, stdout=Console(file=got, width=200), stderr=Console(file=err, width=200))
        doc = json.loads(got.getvalue())
        out.write(json.dumps({"runs": [{k: r[k] for k in ("name", "steps", "error") if k in r} if isinstance(r, dict)
                                       else r for r in doc["runs"]], "left_out": doc.get("left_out")}))
        return code

    return call


def test_a_run_past_its_budget_is_a_row_and_the_others_report(tmp_path):
    _sweep(tmp_path / "sweep")
    for jobs in ("1", "2"):  # in this process, and in a pool's workers
        res = run_fn(_main(["inspect", str(tmp_path / "sweep"), "--json", "--jobs", jobs], "0.25",
                           tmp_path / "sweep" / "healthy0"), ["inspect", "sweep", jobs], timeout=60)
        assert res.code in (0, 1), (res.code, res.stderr[-800:])
        runs = {r["name"]: r for r in json.loads(res.stdout)["runs"]}
        assert sorted(runs) == ["healthy0", "healthy1", "healthy2", "healthy3", "hostile"]
        assert "more than 0.25 s (the time budget of one run" in runs["hostile"].get("error", ""), (runs, res.stderr[-600:])
        assert all("error" not in runs[f"healthy{i}"] and runs[f"healthy{i}"]["steps"] == 40 for i in range(HEALTHY))


def test_compare_leaves_out_a_run_past_its_budget_and_compares_the_others(tmp_path):
    _sweep(tmp_path / "sweep")
    a, b, bad = (str(tmp_path / "sweep" / n) for n in ("healthy0", "healthy1", "hostile"))
    res = run_fn(_main(["compare", a, bad, b, "--json"], "0.25", Path(a)), ["compare"], timeout=60)
    assert res.code == 0, (res.code, res.stderr[-800:])
    doc = json.loads(res.stdout)
    assert doc["runs"] == [a, b] and doc["left_out"][0].startswith(bad + ": not read: it took more than 0.25 s")
    assert "note: left out " + bad in res.stderr


def test_a_watch_pass_past_its_budget_is_said_and_the_watch_goes_on(tmp_path):
    _sweep(tmp_path / "sweep")
    hostile = tmp_path / "sweep" / "hostile"

    def call(out, err):
        import os

        from triage_agent.commands.watch import watch

        os.environ["TRIAGE_RUN_SECONDS"] = "0.25"
        seen: list[str] = []
        code = watch(str(hostile), lambda ev: seen.append(ev.id) and False, interval=0.01, passes=2)
        out.write(json.dumps([code, seen]))
        return 0

    res = run_fn(call, ["watch", "hostile"], timeout=60)
    assert res.code == 0, (res.code, res.stderr[-800:])
    assert json.loads(res.stdout) == [0, ["run.over_budget", "run.over_budget"]]  # both passes ended, said
