"""The command line: parse arguments, call the command's function (it returns a typed result), render it.

Each subcommand's parser names its handler with `set_defaults(func=...)`; a handler only turns
parsed arguments into a call and the result into text or JSON. Nothing heavy is imported before
parsing, so `triage --help` stays fast."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from triage_agent import __version__
from triage_agent.errors import TriageError
from triage_agent.findings.model import SEVERITIES

if TYPE_CHECKING:
    from rich.console import Console

EXAMPLES = {
    "inspect": "example: triage inspect sample_runs/boundary_collapse --json --fail-on high",
    "report": "example: OPENAI_BASE_URL=http://127.0.0.1:8080/v1 triage report sample_runs/boundary_collapse --json",
    "ask": 'example: triage ask sample_runs/boundary_collapse "why does the boundary reward oscillate?"',
    "doctor": "example: OPENAI_BASE_URL=http://127.0.0.1:8080/v1 triage doctor --model qwen2.5-7b",
    "apply": "example: triage report RUN --json > r.json && triage apply r.json --write fixed/",
    "chat": "example: triage chat sample_runs/boundary_collapse --resume",
    "eval": "example: OPENAI_BASE_URL=http://127.0.0.1:8080/v1 triage eval --models qwen2.5-7b,llama-3.1-8b --json",
    "watch": """example: triage watch outputs/run1 --exit-on high --on-finding 'curl -s -d @- $SLACK_WEBHOOK'
         triage watch outputs/run1 --json --interval 30 --stall-after 20m""",
    "compare": "example: triage compare sample_runs/healthy sample_runs/boundary_collapse --html compare.html",
    "mcp": """example: triage mcp --root ~/runs   (stdio, for an IDE agent)
         triage mcp --print-config claude   (.mcp.json for Claude Code; also codex, cursor, vscode)
         triage mcp --http 127.0.0.1:8765   (Streamable HTTP with a bearer token, TRIAGE_MCP_TOKEN)""",
}


RUN_HELP = "the run folder (or a folder of several runs; or a remote URL: s3://, gs://, hf://)"


def _report_flags(sp: argparse.ArgumentParser) -> None:
    """What inspect and report share: the run, JSON on stdout, a CI gate, the HTML page."""
    sp.add_argument("run", help=RUN_HELP)
    sp.add_argument("--run", dest="pick", metavar="NAME", help="in a folder of several runs, the one to read")
    sp.add_argument("--json", action="store_true", help="print the JSON report document on stdout")
    sp.add_argument("--fail-on", choices=SEVERITIES[:3], help="exit 1 when a finding this severe or worse exists")
    sp.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report with plots")


def _endpoint_flags(sp: argparse.ArgumentParser, sends: bool = True) -> None:
    sp.add_argument("--model", help="model name (else $TRIAGE_MODEL, the profile, or the endpoint's first model)")
    sp.add_argument("--base-url", help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1")
    sp.add_argument("--profile", help="a profile of ~/.config/triage/config.toml")
    if sends:
        sp.add_argument("--dry-run", action="store_true", help="print exactly what would be sent, and send nothing")
        sp.add_argument("--no-save", action="store_true", help="do not save a transcript in the state dir")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="triage", description="Diagnose failing RL fine-tuning runs.")
    p.add_argument("--version", action="version", version=f"triage {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def command(name: str, summary: str, description: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=summary, description=description, epilog=EXAMPLES[name],
                            formatter_class=argparse.RawDescriptionHelpFormatter)
        sp.add_argument("--width", type=_width, metavar="N",
                        help="lay text out N columns wide (default: the terminal's width, 80 when piped)")
        return sp

    sp = command("inspect", "deterministic findings for a run folder (no model)",
                 "Read a run folder and print its findings, computed by the rules alone.")
    _report_flags(sp)
    sp.add_argument("--jobs", type=int, metavar="N", help="runs inspected in parallel in a sweep (default: the cores)")
    sp.add_argument("--executor", choices=("local", "ray"), default="local",
                    help="where a sweep's runs are inspected: local processes, or Ray tasks (extra [ray])")
    sp.add_argument("--ray-address", metavar="ADDR", help="the Ray cluster (default: $RAY_ADDRESS, else a local one)")
    sp.set_defaults(func=_cmd_inspect)
    sp = command("report", "diagnosis and checked config changes, from a model when one is configured",
                 "Ask the configured model for a diagnosis; every suggested change is checked and "
                 "re-computed on the run. Without an endpoint, the offline report.")
    _report_flags(sp)
    sp.add_argument("--offline", action="store_true", help="never call a model")
    _endpoint_flags(sp)
    sp.set_defaults(func=_cmd_report)
    sp = command("ask", "ask a question about a run (answer streamed)",
                 "Ask the configured model a question about one run; the question may come on stdin.")
    sp.add_argument("run", help="the run folder")
    sp.add_argument("question", nargs="?", help="the question (else read from stdin)")
    sp.add_argument("--vs", action="append", metavar="RUN",
                    help="another run to compare with (repeatable); the model gets the compare_runs tool")
    _endpoint_flags(sp)
    sp.set_defaults(func=_cmd_ask)
    sp = command("chat", "an interactive session about a run",
                 "Chat with the configured model about one run; slash commands work without one.")
    sp.add_argument("run", help="the run folder")
    sp.add_argument("--resume", action="store_true", help="continue the last conversation about this run")
    _endpoint_flags(sp, sends=False)
    sp.set_defaults(func=_cmd_chat)
    sp = command("doctor", "check the model endpoint step by step and say what to fix",
                 "Check settings, reachability, key, model, chat, tool calls, JSON-schema output "
                 "and streaming; remember the endpoint's capabilities for later runs.")
    _endpoint_flags(sp, sends=False)
    sp.add_argument("--json", action="store_true", help="print the checks as JSON")
    sp.set_defaults(func=_cmd_doctor)
    sp = command("apply", "turn accepted adjustments into config edits (a diff by default)",
                 "Edit the run's config values from a report JSON (or a run folder's offline "
                 "report). Only values change; comments, order and formatting stay.")
    sp.add_argument("source", help="a report JSON from `triage report --json`, or a run folder")
    sp.add_argument("--run", help="the run folder, when the report JSON was written elsewhere")
    sp.add_argument("--include-unmet", action="store_true",
                    help="also apply changes whose what-if says they miss their target")
    sp.add_argument("--force", action="store_true",
                    help="apply even when a value in the file differs from the report's `from` (a stale report)")
    group = sp.add_mutually_exclusive_group()
    group.add_argument("--write", metavar="DIR", help="write edited copies of the config files under DIR")
    group.add_argument("--in-place", action="store_true", help="edit the originals, after saving .bak backups")
    sp.set_defaults(func=_cmd_apply)
    sp = command("watch", "follow a run while it trains; report each finding once, as it appears",
                 "Follow a run folder while it is written: each pass reads only what was appended, evaluates the "
                 "same rules as inspect and prints each new (or more severe) finding once, with the step where it "
                 "starts. A run that stops logging steps raises run.stalled; a log that ends in a crash raises "
                 "log.crash. Wakes on file changes (watchfiles, when installed) or every --interval seconds.")
    sp.add_argument("run", help="the run folder (or a remote URL, re-listed every pass)")
    sp.add_argument("--interval", type=_duration, default=5.0, metavar="SECONDS",
                    help="seconds between passes when nothing wakes the watch earlier (default 5)")
    sp.add_argument("--stall-after", type=_duration, default=900.0, metavar="DURATION",
                    help="run.stalled after no new step for this long (90s, 15m, 1h; default 15m) or 10x the "
                         "median step time, whichever is longer")
    sp.add_argument("--on-finding", metavar="CMD",
                    help="run CMD (a shell command) for each event, the event as JSON on its stdin")
    sp.add_argument("--exit-on", choices=SEVERITIES[:3], help="exit 1 at the first finding this severe or worse")
    sp.add_argument("--json", action="store_true", help="one JSON object per line for each event")
    sp.set_defaults(func=_cmd_watch)
    sp = command("compare", "runs side by side: config keys that differ, curves, where they part, findings",
                 "Put runs side by side: the config keys that differ, each series' first, last, head and tail "
                 "with the difference to the first run, the step where each curve parts from the first run's "
                 "(beyond the runs' noise), and the findings each run has that the others do not.")
    sp.add_argument("runs", nargs="+", metavar="RUN", help="two or more run folders (the first is the reference)")
    sp.add_argument("--json", action="store_true", help="print the comparison as JSON")
    sp.add_argument("--html", metavar="FILE", help="also write an HTML page with the curves overlaid")
    sp.set_defaults(func=_cmd_compare)
    sp = command("mcp", "serve triage's tools to IDE agents over the Model Context Protocol",
                 "Serve triage's deterministic tools (inspect_run, run_overview, trainer_metrics, search_log, "
                 "simulate_adjustment, ...) to an IDE agent over MCP: stdio by default, Streamable HTTP with "
                 "--http. It reads only under its roots and never writes unless --allow-write. Register it "
                 "with the snippet --print-config prints: Claude Code (.mcp.json), Codex CLI "
                 "(~/.codex/config.toml), Cursor (.cursor/mcp.json), VS Code (.vscode/mcp.json).")
    sp.add_argument("--root", action="append", metavar="DIR",
                    help="a folder the server may read (repeatable; default: the working directory)")
    sp.add_argument("--allow-write", action="store_true",
                    help="offer apply_adjustments, which edits config files inside a run (after a diff)")
    sp.add_argument("--http", metavar="HOST:PORT", help="serve Streamable HTTP instead of stdio")
    sp.add_argument("--allow-remote", action="store_true", help="allow --http on a non-loopback address")
    sp.add_argument("--print-config", choices=("claude", "codex", "cursor", "vscode"), metavar="CLIENT",
                    help="print the registration snippet for claude, codex, cursor or vscode, and exit")
    sp.set_defaults(func=_cmd_mcp)
    sp = command("eval", "score models on runs with planted faults before trusting one",
                 "Run `triage report` with each model over a suite of runs with known, planted faults (the sample "
                 "runs, or --suite DIR of your own runs with expected.json) and score the diagnosis: recall and "
                 "precision of the cited finding ids, changes that pass the checks and reach their target, repair "
                 "turns, fallbacks, requests, tokens and time.")
    sp.add_argument("--models", help="comma-separated model names (default: the configured model)")
    sp.add_argument("--suite", metavar="DIR", help="a folder of runs, each with expected.json listing its finding ids")
    sp.add_argument("--runs", type=int, metavar="N", help="only the first N runs of the suite")
    sp.add_argument("--json", action="store_true", help="print the scores and every per-run result as JSON")
    sp.add_argument("--html", metavar="FILE", help="also write an HTML page with one row per model")
    _endpoint_flags(sp)
    sp.set_defaults(func=_cmd_eval)
    return p


def _usage_line(source: dict, err: Console) -> None:  # type: ignore[type-arg]
    if source.get("requests"):
        est = " (estimated)" if source.get("usage_estimated") else ""
        err.print(_literal(f"{source.get('endpoint')} · {source.get('model')} · {source['requests']} requests · "
                          f"{source.get('prompt_tokens', 0)} prompt + {source.get('completion_tokens', 0)} completion "
                          f"tokens{est}", "dim"))


def _fail_code(report, fail_on: str | None) -> int:  # type: ignore[no-untyped-def]
    if fail_on and any(f.at_least(fail_on) for f in report.findings):
        return 1
    return 0


def main(argv: Sequence[str] | None = None, stdout: Console | None = None, stderr: Console | None = None) -> int:
    parser = _parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        # the subcommand's own usage, not the top-level one: that is where the flag was meant to go
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        (sub.choices.get(args.command) or parser).error(f"unrecognized arguments: {' '.join(unknown)}")
    if getattr(args, "func", None) is None:
        _parser().print_help()
        return 2
    import os

    # the CLI's own process: Arrow's allocations go through malloc, which gives freed memory back (its default
    # pools keep it: reading a 1M-row table peaked ~90 MB higher); set before pyarrow is first imported
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    from rich.console import Console

    width = getattr(args, "width", None)
    out = stdout or Console(soft_wrap=False, width=width)
    err = stderr or Console(stderr=True, soft_wrap=True, width=width)
    try:
        code: int = args.func(args, out, err)
        return code
    except TriageError as exc:
        err.print(_literal(f"triage: {exc}"))
        return exc.exit_code
    except KeyboardInterrupt:
        err.print("triage: interrupted", markup=False)
        return 130
    except BrokenPipeError:  # `triage inspect --json | head`: the reader left, nothing more to say
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        return 0
    except Exception as exc:  # the last line of defence: a bug of ours is one line and a file, not a traceback
        return _internal_error(exc, err)


INTERNAL_ERROR = 70  # EX_SOFTWARE


def _internal_error(exc: BaseException, err: Console) -> int:
    import os
    import tempfile
    import traceback
    from pathlib import Path

    from triage_agent.llm.settings import state_dir
    from triage_agent.state import unique_path

    details = "".join(traceback.format_exception(exc))
    where: Path | str
    try:
        where = unique_path(state_dir(os.environ) / "crashes", "internal-error", ".txt")
    except OSError:
        fd, tmp = tempfile.mkstemp(prefix="triage-internal-error-", suffix=".txt")
        os.close(fd)
        where = Path(tmp)
    try:
        where.write_text(details, encoding="utf-8")
    except OSError:
        where = "(could not be written)"
    if os.environ.get("TRIAGE_DEBUG") == "1":
        err.print(_literal(details))
    err.print(_literal(f"triage: internal error: {type(exc).__name__}: {str(exc)[:200]}; details in {where}"))
    return INTERNAL_ERROR


def _literal(s: object, style: str = "") -> Any:
    """Outside text (paths, errors, model output) for a console: shown as is, never markup or escapes."""
    from triage_agent.render.text import literal

    return literal(s, style)


def _neutralise(s: str) -> str:
    from triage_agent.render.text import neutralise

    return neutralise(s)


def _spinner(err: Console, what: str) -> Any:
    """A spinner on stderr while waiting (on a terminal only; piped output stays clean)."""
    import contextlib

    return err.status(what, spinner="dots") if err.is_terminal else contextlib.nullcontext()


def _duration(text: str) -> float:
    """`90`, `90s`, `15m`, `1h` -> seconds."""
    units = {"s": 1, "m": 60, "h": 3600}
    t = text.strip().lower()
    try:
        value = float(t[:-1]) * units[t[-1]] if t and t[-1] in units else float(t)
    except ValueError:
        value = -1.0
    if not 0 < value <= 7 * 86400:
        raise argparse.ArgumentTypeError("a duration is a number of seconds, or like 90s, 15m, 1h (at most 7 days)")
    return value


def _width(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 40 <= n <= 1000:
        raise argparse.ArgumentTypeError("a width is a whole number of columns from 40 to 1000")
    return n


def _write_json(out: Console, doc: Any) -> None:
    """The one JSON writer: every command's --json (and --dry-run) output goes through here."""
    import json

    out.file.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")


def _cmd_inspect(args: argparse.Namespace, out: Console, err: Console) -> int:
    from triage_agent.commands.inspect import inspect
    from triage_agent.commands.sweep import SweepResult
    from triage_agent.render import jsondoc, terminal

    if args.jobs is not None and args.jobs < 1:
        raise TriageError("--jobs takes a number of processes >= 1")
    report = inspect(args.run, _progress(err), run=args.pick, jobs=args.jobs, executor=args.executor,
                     ray_address=args.ray_address, keep_reports=args.json,
                     one_run_only="--html shows one run: pick one with --run NAME, or put runs side by side with "
                                  "`triage compare A B --html FILE`" if args.html else None)
    if isinstance(report, SweepResult):
        from triage_agent.render import sweep

        if args.json:
            _write_json(out, report.document())
        else:
            sweep.render(report, out)
        return 1 if report.fails(args.fail_on) else 0
    _write_html(report, args.html, err)
    if args.json:
        _write_json(out, jsondoc.document(report))
    else:
        terminal.render(report, out)
    return _fail_code(report, args.fail_on)


def _picked(location: str, pick: str | None) -> str:
    """RUN, or with --run NAME the named run inside the folder RUN."""
    if pick is None:
        return location
    from pathlib import Path

    from triage_agent.runs import remote
    from triage_agent.runs.sweep import split_runs

    if remote.is_remote(location):
        return location.rstrip("/") + "/" + pick.strip("/")
    return str(split_runs(Path(location)).require(pick, location).path)


ON_FINDING_SECONDS = 60  # an --on-finding command that runs longer is stopped


def _cmd_watch(args: argparse.Namespace, out: Console, err: Console) -> int:
    import json
    import subprocess
    from pathlib import Path

    from triage_agent.commands.watch import WatchEvent, watch
    from triage_agent.findings.model import SEVERITY_RANK
    from triage_agent.render.terminal import SEVERITY_STYLE
    from triage_agent.runs.remote import is_remote

    if not is_remote(args.run) and not Path(args.run).is_dir():
        raise TriageError(f"{args.run}: no such folder")
    if not args.json:
        err.print(_literal(f"watching {args.run} (every {args.interval:g} s; run.stalled after "
                           f"{args.stall_after / 60:g} min without a step); Ctrl-C stops"))

    def on_event(ev: WatchEvent) -> bool:
        doc = ev.document()
        line = json.dumps(doc, ensure_ascii=False, default=str)
        if args.json:
            out.file.write(line + "\n")
            out.file.flush()
        else:
            from rich.text import Text

            out.print(Text.assemble(doc["at"][11:19] + "  ", (f"{ev.severity:<6}", SEVERITY_STYLE[ev.severity]), "  ",
                                    _literal(ev.id, "bold"), _literal(f"  from step {ev.step}" if ev.step is not None
                                                                     else ""), "  ", _literal(ev.title)))
        if args.on_finding:
            try:
                proc = subprocess.run(args.on_finding, shell=True, input=line + "\n", text=True,  # noqa: S602
                                      capture_output=True, timeout=ON_FINDING_SECONDS, check=False)
                if proc.returncode != 0:
                    err.print(_literal(f"triage: --on-finding exited {proc.returncode}: {proc.stderr.strip()[:200]}"))
            except subprocess.TimeoutExpired:
                err.print(_literal(f"triage: --on-finding ran over {ON_FINDING_SECONDS} s and was stopped"))
        return bool(args.exit_on) and SEVERITY_RANK[ev.severity] <= SEVERITY_RANK[args.exit_on]

    return watch(args.run, on_event, interval=args.interval, stall_after=args.stall_after)


def _cmd_compare(args: argparse.Namespace, out: Console, err: Console) -> int:
    from pathlib import Path

    from triage_agent.commands.compare import compare
    from triage_agent.render import compare as view
    from triage_agent.render.jsondoc import _clean

    result = compare(args.runs)
    if args.html:
        try:
            Path(args.html).write_text(view.html(result), encoding="utf-8")
        except OSError as exc:
            raise TriageError(f"{args.html}: cannot write the HTML page ({exc.strerror})") from None
        err.print(_literal(f"wrote {args.html}"))
    if args.json:
        from triage_agent import redact

        _write_json(out, redact.obj(_clean(result.document())))
    else:
        view.render(result, out)
    return 0


def _cmd_chat(args: argparse.Namespace, out: Console, err: Console) -> int:
    import os

    from triage_agent.commands.chat import start
    from triage_agent.llm.settings import resolve
    from triage_agent.render.chat import repl

    settings = resolve({"model": args.model, "base_url": args.base_url, "profile": args.profile})
    session, status = start(args.run, settings, dict(os.environ), args.resume)
    return repl(session, out, status)


def _write_html(report, path: str | None, err: Console) -> None:  # type: ignore[no-untyped-def]
    if not path:
        return
    from pathlib import Path

    from triage_agent.render import html

    try:
        Path(path).write_text(html.render(report), encoding="utf-8")
    except OSError as exc:
        raise TriageError(f"{path}: cannot write the HTML report ({exc.strerror})") from None
    err.print(_literal(f"wrote {path}"))


def _progress(err: Console):  # type: ignore[no-untyped-def]
    """A rich progress bar on stderr when it is a terminal; nothing otherwise."""
    if not err.is_terminal:
        return None
    from rich.progress import Progress

    bar = Progress(console=err, transient=True)
    task = bar.add_task("reading run", total=None)
    bar.start()

    def update(name: str, i: int, total: int) -> None:
        bar.update(task, completed=i + 1, total=total, description=f"reading {name[-40:]}")
        if i + 1 >= total:
            bar.stop()

    return update


def _cmd_doctor(args: argparse.Namespace, out: Console, err: Console) -> int:
    import os

    from triage_agent.commands.doctor import doctor
    from triage_agent.llm.settings import resolve
    from triage_agent.render.terminal import doctor_view

    res = doctor(resolve({"model": args.model, "base_url": args.base_url, "profile": args.profile}), dict(os.environ))
    if args.json:
        _write_json(out, {"settings": res.settings, "can_report": res.can_report,
                          "checks": [vars(c) for c in res.checks], "capabilities": res.capabilities})
    else:
        doctor_view(res, out)
    return 0 if res.can_report else 3  # endpoint trouble, as for every command


def _cmd_apply(args: argparse.Namespace, out: Console, err: Console) -> int:
    from pathlib import Path

    from triage_agent.commands.apply import plan, write

    res = plan(args.source, args.run, include_unmet=args.include_unmet, force=args.force)
    for file, key, reason in res.refused:
        err.print(_literal(f"refused: {file} {key}: {reason}"))
    if not res.edits:
        err.print("nothing to apply", highlight=False)
        return 0
    if args.write or args.in_place:
        write(res, Path(args.write) if args.write else None, args.in_place)
        for path in res.written:
            err.print(_literal(f"wrote {path}"))
        return 0
    for e in res.edits:
        out.file.write(_neutralise(e.diff()))
    return 0


def _cmd_eval(args: argparse.Namespace, out: Console, err: Console) -> int:
    import os
    from pathlib import Path

    from triage_agent.commands.eval import evaluate
    from triage_agent.llm.settings import resolve
    from triage_agent.render import evaluation

    settings = resolve({"model": args.model, "base_url": args.base_url, "profile": args.profile})
    models = [m.strip() for m in (args.models or settings.model or "").split(",") if m.strip()]
    if not models:
        raise TriageError("name the models to score: --models a,b (or set TRIAGE_MODEL)")
    if args.runs is not None and args.runs < 1:
        raise TriageError("--runs takes a number of runs >= 1")
    result = evaluate(models, settings, dict(os.environ), Path(args.suite) if args.suite else None, args.runs,
                      save=not args.no_save, progress=_progress(err))
    if args.html:
        try:
            Path(args.html).write_text(evaluation.html(result), encoding="utf-8")
        except OSError as exc:
            raise TriageError(f"{args.html}: cannot write the HTML page ({exc.strerror})") from None
    if args.json:
        _write_json(out, result.document())
    else:
        evaluation.render(result, out)
    return 0


def _cmd_mcp(args: argparse.Namespace, out: Console, err: Console) -> int:
    from pathlib import Path

    roots = [Path(r).expanduser() for r in (args.root or ["."])]
    for r in roots:
        if not r.is_dir():
            raise TriageError(f"{r}: no such folder (--root)")
    if args.print_config:
        from triage_agent.commands.mcp import client_config

        where, snippet = client_config(args.print_config, [r.resolve() for r in roots])
        err.print(_literal(f"# put this in {where}"))
        out.file.write(snippet)
        return 0
    import importlib.util

    if importlib.util.find_spec("mcp") is None:
        raise TriageError("triage mcp needs the MCP SDK: pip install 'triage-agent[mcp]'")
    from triage_agent.commands import mcp
    if args.http:
        return mcp.serve_http(roots, args.allow_write, args.http, args.allow_remote, None,
                              lambda line: err.print(_literal(line)))
    return mcp.serve_stdio(roots, args.allow_write)


def _cmd_report(args: argparse.Namespace, out: Console, err: Console) -> int:
    import os

    from triage_agent.commands.report import DryRun, report
    from triage_agent.llm.settings import resolve
    from triage_agent.render import jsondoc, terminal

    settings = resolve({"model": args.model, "base_url": args.base_url, "profile": args.profile})
    with _spinner(err, "waiting for the model"):
        result = report(_picked(args.run, args.pick), settings, offline=args.offline, dry_run=args.dry_run, save=not args.no_save,
                        env=dict(os.environ))
    if isinstance(result, DryRun):
        _write_json(out, result.document())
        return 0
    _write_html(result, args.html, err)
    if args.json:
        _write_json(out, jsondoc.document(result))
    else:
        terminal.render(result, out)
    for note in result.notes if args.json else []:
        err.print(_literal(f"note: {note}"))
    _usage_line(result.source, err)
    return _fail_code(result, args.fail_on)


def _cmd_ask(args: argparse.Namespace, out: Console, err: Console) -> int:
    import os

    from triage_agent.commands.ask import ask
    from triage_agent.commands.report import DryRun
    from triage_agent.llm.settings import resolve

    settings = resolve({"model": args.model, "base_url": args.base_url, "profile": args.profile})
    env = dict(os.environ)

    question = args.question if args.question is not None else (sys.stdin.read() if not sys.stdin.isatty() else "")

    streamed: list[str] = []

    spinner = _spinner(err, "waiting for the model")

    def on_text(chunk: str) -> None:
        spinner.__exit__(None, None, None)  # the answer has started: the spinner goes
        streamed.append(chunk)
        out.file.write(_neutralise(chunk))
        out.file.flush()

    def on_tool(ev) -> None:  # type: ignore[no-untyped-def]
        err.print(_literal(f"→ {ev.name}({ev.arguments[:80]}) {ev.seconds * 1000:.0f} ms", "dim"))

    with spinner:
        result = ask(args.run, question, settings, on_text=on_text, on_tool=on_tool, dry_run=args.dry_run,
                     save=not args.no_save, env=env, vs=args.vs)
    if isinstance(result, DryRun):
        _write_json(out, result.document())
        return 0
    for note in result.notes:
        err.print(_literal(f"note: {note}"))
    if not streamed:  # the endpoint could not stream: print the whole answer now
        out.file.write(_neutralise(result.answer))
    out.file.write("\n")
    _usage_line(result.source, err)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
