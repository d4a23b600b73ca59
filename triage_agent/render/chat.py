"""The interactive front of `triage chat`: prompt, history, streaming Markdown, slash commands."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown

from triage_agent.errors import TriageError
from triage_agent.render.terminal import checked_changes, findings_table, fmt_value, predicted_text
from triage_agent.render.text import LiteralTable, literal, neutralise

if TYPE_CHECKING:  # the session brings the agent's parts: a view imports no layer above the results it draws
    from triage_agent.agent.loop import ToolEvent
    from triage_agent.commands.chat import ChatSession

PROMPT = "triage> "
# the slash commands `_slash` runs
COMMANDS = {
    "/help": "this list",
    "/findings": "the deterministic findings",
    "/tools": "the tools the model can call",
    "/simulate key=value ...": "what-if for config changes (key as file:key or a dotted key)",
    "/reset": "start the conversation again",
    "/save FILE": "write the conversation to FILE (JSON)",
    "/model NAME": "switch the model",
    "/exit": "leave (Ctrl-D too)",
}


def _history(state: Path) -> None:
    """Line editing and history through readline, where the platform has it."""
    try:
        import readline
    except ImportError:  # pragma: no cover - Windows
        return
    hist = state / "chat_history"
    hist.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        readline.read_history_file(hist)
    import atexit

    atexit.register(lambda: readline.write_history_file(hist))


def _slash(session: ChatSession, line: str, console: Console) -> bool:
    """Run a slash command; False means leave."""
    cmd, _, rest = line.partition(" ")
    if cmd == "/exit":
        return False
    if cmd == "/help":
        for name, what in COMMANDS.items():
            console.print(literal(f"  {name:28} {what}"))
    elif cmd == "/findings":
        console.print(findings_table(session.offline))
    elif cmd == "/tools":
        for schema in session.tool_schemas():
            fn = schema["function"]
            console.print(literal(fn["name"], "bold"))
            console.print(literal("  " + fn["description"]))
    elif cmd == "/simulate":
        try:
            res = session.simulate(rest.split())
        except ValueError as exc:
            console.print(literal(f"simulate: {exc}"))
            return True
        t = LiteralTable(title="what-if on this run")
        for col in ("key", "before", "after", "predicted", "target met"):
            t.add_column(col)
        for r in res["results"]:
            met = {True: "yes", False: "no", None: "not checked"}[r["meets_target"]]
            t.add_row(f"{r['file']}:{r['key']}", fmt_value(r["from"]), fmt_value(r["to"]), predicted_text(r["predicted"]), met)
        for r in res["rejected"]:
            t.add_row(f"{r['file']}:{r['key']}", "", fmt_value(r["to"]), "rejected: " + r["reason"], "-")
        console.print(t)
    elif cmd == "/reset":
        session.reset()
        console.print("conversation reset")
    elif cmd == "/save":
        if not rest.strip():
            console.print("usage: /save FILE")
        else:
            console.print(literal(f"saved {session.save(Path(rest.strip()))}"))
    elif cmd == "/model":
        if not rest.strip():
            console.print(literal(f"model: {session.settings.model}"))
        else:
            session.use_model(rest.strip())
            console.print(literal(f"model: {session.settings.model}"))
    else:
        console.print(literal(f"unknown command {cmd}; /help lists them"))
    return True


def repl(session: ChatSession, console: Console, status: str, read: Callable[[str], str] = input) -> int:
    _history(session.state)
    console.print(literal(f"{status}. /help for commands, Ctrl-C stops an answer, Ctrl-D leaves.", "dim"))
    while True:
        try:
            line = read(PROMPT).strip()
        except EOFError:
            console.print()
            break
        except KeyboardInterrupt:
            console.print("\n(Ctrl-D or /exit to leave)")
            continue
        if not line:
            continue
        if line.startswith("/"):
            if not _slash(session, line, console):
                break
            continue
        if session.client is None:
            console.print("no model configured: slash commands only (/help)")
            continue
        _answer(session, line, console)
    problem = session.save_quietly() or session.unsaved
    console.print(literal(problem or f"conversation saved to {session.path}", "dim"))
    return 0


def _answer(session: ChatSession, line: str, console: Console) -> None:
    """Stream one answer as Markdown; tool calls show as status lines; Ctrl-C stops only this answer."""
    text: list[str] = []

    def on_tool(ev: ToolEvent) -> None:
        console.print(literal(f"→ {ev.name}({ev.arguments[:60]}) {ev.seconds * 1000:.0f} ms", "dim"))

    hold = session.holdback()
    try:
        with _no_echo(), Live(Markdown(""), console=console, refresh_per_second=8, transient=False) as live:
            def on_text(chunk: str) -> None:
                text.append(hold.feed(chunk))
                live.update(Markdown(neutralise("".join(text))))

            answer = session.turn(line, on_text, on_tool)
            live.update(Markdown(neutralise(session.prose(answer))))
        for part in checked_changes(session.check(answer)):
            console.print(part)
    except KeyboardInterrupt:
        console.print("[answer stopped]", style="yellow", markup=False, highlight=False)
    except TriageError as exc:
        console.print(literal(exc, "red"))


@contextlib.contextmanager
def _no_echo() -> Iterator[None]:
    """The terminal does not echo what is typed while an answer streams. Rich pads the answer's lines to the
    terminal's width, so an echoed ^C (Ctrl-C) wrapped to a line of its own and the answer's last redraw landed
    there: the partial answer showed twice. Ctrl-C still sends SIGINT (only the echo is off); restored after."""
    try:
        import termios
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    fd = sys.stdin.fileno() if sys.stdin is not None and sys.stdin.isatty() else None
    try:
        before = termios.tcgetattr(fd) if fd is not None else None
    except termios.error:
        before = None
    if before is None or fd is None:
        yield
        return
    quiet = list(before)
    quiet[3] &= ~(termios.ECHO | termios.ECHOCTL)
    termios.tcsetattr(fd, termios.TCSANOW, quiet)
    try:
        yield
    finally:
        with contextlib.suppress(termios.error):
            termios.tcsetattr(fd, termios.TCSANOW, before)
