"""`triage completion SHELL`: a shell completion script made from the parser itself (every command, its options
and their choices), so it never falls behind a new command or flag."""

from __future__ import annotations

import argparse
import shlex
from dataclasses import dataclass

SHELLS = ("bash", "zsh", "fish")


@dataclass(frozen=True)
class Script:
    shell: str
    text: str


def _subcommands(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    sub = next((a for a in p._actions if isinstance(a, argparse._SubParsersAction)), None)
    return dict(sub.choices) if sub is not None else {}


def _options(p: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in p._actions if a.option_strings]


def _bash(p: argparse.ArgumentParser) -> str:
    subs = _subcommands(p)
    cases = []
    for name, sp in subs.items():
        opts = " ".join(o for a in _options(sp) for o in a.option_strings)
        choices = "".join(f"      {shlex.quote(o)}) COMPREPLY=($(compgen -W {shlex.quote(' '.join(map(str, a.choices)))}"
                          f" -- \"$cur\")); return;;\n"
                          for a in _options(sp) if a.choices for o in a.option_strings)
        cases.append(f"    {shlex.quote(name)})\n      opts={shlex.quote(opts)}\n      case \"$prev\" in\n{choices}"
                     "      esac;;\n")
    return ("# triage completion (bash): eval \"$(triage completion bash)\"\n_triage() {\n"
            "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} cmd=${COMP_WORDS[1]} opts=\n"
            "  if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
            f"    COMPREPLY=($(compgen -W {shlex.quote(' '.join([*subs, '--help', '--version']))} -- \"$cur\")); return\n"
            "  fi\n  case \"$cmd\" in\n" + "".join(cases) + "  esac\n"
            "  if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W \"$opts --help\" -- \"$cur\"))\n"
            "  else COMPREPLY=($(compgen -f -- \"$cur\")); fi\n}\ncomplete -o filenames -F _triage triage\n")


def _fish(p: argparse.ArgumentParser) -> str:
    lines = ["# triage completion (fish): triage completion fish | source"]
    subs = _subcommands(p)
    for name, sp in subs.items():
        lines.append(f"complete -c triage -f -n __fish_use_subcommand -a {shlex.quote(name)} "
                     f"-d {shlex.quote((sp.description or '').split('.')[0][:60])}")
        for a in _options(sp):
            longs = [o[2:] for o in a.option_strings if o.startswith("--")]
            if not longs:
                continue
            choice = f" -x -a {shlex.quote(' '.join(map(str, a.choices)))}" if a.choices else ""
            lines.append(f"complete -c triage -n '__fish_seen_subcommand_from {name}' -l {longs[0]}{choice} "
                         f"-d {shlex.quote((a.help or '')[:60])}")
    return "\n".join(lines) + "\n"


def completion(shell: str, parser: argparse.ArgumentParser) -> Script:
    """The script for `shell` (zsh loads the bash one through bashcompinit)."""
    if shell == "fish":
        return Script(shell, _fish(parser))
    text = _bash(parser)
    if shell == "zsh":
        text = "# triage completion (zsh): eval \"$(triage completion zsh)\"\nautoload -U +X bashcompinit && " \
               "bashcompinit\n" + text
    return Script(shell, text)
