"""What every command of the command line shares: the `Command` registration, common flags, the one JSON
writer, and console helpers. Nothing heavy is imported here, so `triage --help` stays fast."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from triage_agent.errors import BadInput
from triage_agent.findings.model import RAISED

if TYPE_CHECKING:
    from rich.console import Console

Handler = Callable[[argparse.Namespace, "Console", "Console"], int]


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, help texts and example, how it adds its arguments, and its handler (parse ->
    call the command's function -> render its result -> exit code). `order` places it in `triage --help`."""

    name: str
    summary: str
    description: str
    example: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Handler
    order: int = 100
    # its consoles are made when it first prints (rich is ~40 ms of imports): `triage mcp` answers an IDE's
    # `initialize` before anything heavy is imported
    consoles_on_use: bool = False


class OnUse:
    """A console made on its first use: every attribute read goes to the console `make` returns."""

    def __init__(self, make: Callable[[], Console]) -> None:
        self._make = make
        self._real: Console | None = None

    def __getattr__(self, name: str) -> Any:
        if self._real is None:
            self._real = self._make()
        return getattr(self._real, name)


RUN_HELP = "the run folder (or a folder of several runs; or a remote URL: s3://, gs://, hf://)"


def report_flags(sp: argparse.ArgumentParser) -> None:
    """What inspect and report share: the run, JSON on stdout, a CI gate, the HTML page."""
    sp.add_argument("run", help=RUN_HELP)
    sp.add_argument("--run", dest="pick", metavar="NAME", help="in a folder of several runs, the one to read")
    sp.add_argument("--json", action="store_true", help="print the JSON report document on stdout")
    sp.add_argument("--fail-on", choices=RAISED,
                    help="exit 1 when a finding this severe or worse exists (info: any finding at all)")
    sp.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report with plots")


def endpoint_flags(sp: argparse.ArgumentParser, sends: bool = True) -> None:
    sp.add_argument("--model", help="model name (else $TRIAGE_MODEL, the profile, or the endpoint's first model)")
    sp.add_argument("--base-url", help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1")
    sp.add_argument("--profile", help="a profile of ~/.config/triage/config.toml")
    sp.add_argument("--timeout", type=duration, metavar="SECONDS",
                    help="the limit of one model request, e.g. 300 or 5m (else $TRIAGE_TIMEOUT, the profile, 120 s)")
    if sends:
        sp.add_argument("--dry-run", action="store_true", help="print exactly what would be sent, and send nothing")
        sp.add_argument("--no-save", action="store_true", help="do not save a transcript in the state dir")


def settings_from(args: argparse.Namespace) -> Any:
    """The endpoint settings: these flags over the environment over the profile."""
    from triage_agent.llm.settings import resolve

    return resolve({"model": args.model, "base_url": args.base_url, "profile": args.profile,
                    "timeout": getattr(args, "timeout", None)})


def write_json(out: Console, doc: Any) -> None:
    """The one JSON writer: every command's --json (and --dry-run) output goes through here, masked and with
    non-finite numbers made null, whatever the command."""
    import json

    from triage_agent.safe import redact
    from triage_agent.safe.json_out import clean

    out.file.write(json.dumps(redact.obj(clean(doc)), indent=2, ensure_ascii=False) + "\n")


class Shown(Protocol):
    """What every command's result is to the command line: its JSON document, its own view for the terminal, and
    the exit code it calls for. Each result type declares the three, so a command whose result has no view fails
    mypy, not at run time; a view is imported inside `view`, so showing one result imports no other command's
    modules (the doctor's result type sits beside the OpenAI SDK, ~0.9 s of imports)."""

    def document(self) -> Any: ...

    def view(self, console: Console) -> None: ...

    def exit_code(self, fail_on: str | None) -> int:
        """0, or why not: 1 for findings at or past --fail-on, 3 for endpoint trouble (as `TriageError`s)."""
        ...


def emit(out: Console, as_json: bool, result: Shown, fail_on: str | None = None) -> int:
    """The one output path for a command's result: its JSON document through `write_json`, or its own view; then
    the exit code the result calls for."""
    if as_json:
        write_json(out, result.document())
    else:
        result.view(out)
    return result.exit_code(fail_on)


def literal(s: object, style: str = "") -> Any:
    """Outside text (paths, errors, model output) for a console: shown as is, never markup or escapes."""
    from triage_agent.render.text import literal as _literal

    return _literal(s, style)


def neutralise(s: str) -> str:
    from triage_agent.render.text import neutralise as _neutralise

    return _neutralise(s)


def spinner(err: Console, what: str) -> Any:
    """A spinner on stderr while waiting (on a terminal only; piped output stays clean)."""
    import contextlib

    return err.status(what, spinner="dots") if err.is_terminal else contextlib.nullcontext()


def progress(err: Console) -> Callable[[str, int, int], None] | None:
    """A rich progress bar on stderr when it is a terminal; nothing otherwise."""
    if not err.is_terminal:
        return None
    import time

    from rich.progress import Progress

    # redrawn here, at most 10 times a second, not by rich's refresh thread: a sweep's workers are forked from
    # this process only while it runs no other thread (commands/sweep.py)
    bar = Progress(console=err, transient=True, auto_refresh=False)
    task = bar.add_task("reading run", total=None)
    bar.start()
    drawn = [0.0]

    def update(name: str, i: int, total: int) -> None:
        now = time.monotonic()
        bar.update(task, completed=i + 1, total=total or None, description=f"reading {name[-40:]}")
        if now - drawn[0] >= 0.1:
            drawn[0] = now
            bar.refresh()
        if total and i + 1 >= total:
            bar.stop()

    return update


def duration(text: str) -> float:
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


def width(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 40 <= n <= 1000:
        raise argparse.ArgumentTypeError("a width is a whole number of columns from 40 to 1000")
    return n


def usage_line(source: dict[str, Any], err: Console) -> None:
    if source.get("requests"):
        est = " (estimated)" if source.get("usage_estimated") else ""
        err.print(literal(f"{source.get('endpoint')} · {source.get('model')} · {source['requests']} requests · "
                          f"{source.get('prompt_tokens', 0)} prompt + {source.get('completion_tokens', 0)} completion "
                          f"tokens{est}", "dim"))


def write_page(path: str | None, page: Callable[[], str], err: Console, what: str = "HTML report") -> None:
    """Write an HTML page to `path` (when given), or a one-line error."""
    if not path:
        return
    from pathlib import Path

    try:
        Path(path).write_text(page(), encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"{path}: cannot write the {what} ({exc.strerror})") from None
    err.print(literal(f"wrote {path}"))


def write_html(report: Any, path: str | None, err: Console) -> None:
    if not path:
        return
    from triage_agent.render import html

    write_page(path, lambda: html.render(report), err)

