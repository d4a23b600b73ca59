"""`triage apply REPORT_JSON_OR_RUN`: accepted adjustments as edits of the run's config files."""

from __future__ import annotations

import difflib
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from triage_agent import safejson
from triage_agent.edits import EditError, edit_text
from triage_agent.errors import TriageError
from triage_agent.findings import suggest
from triage_agent.findings.facts import number, resolve
from triage_agent.report import offline_report
from triage_agent.runs.load import load_run


@dataclass
class FileEdit:
    file: str  # relative to the run folder
    original: str
    edited: str
    changes: list[tuple[str, Any, Any]] = field(default_factory=list)  # key, from, to

    def diff(self) -> str:
        return "".join(difflib.unified_diff(self.original.splitlines(keepends=True), self.edited.splitlines(keepends=True),
                                            f"a/{self.file}", f"b/{self.file}"))


@dataclass
class ApplyResult:
    run: Path
    edits: list[FileEdit]
    refused: list[tuple[str, str, str]]  # file, key, reason
    written: list[str] = field(default_factory=list)


def _from_report(path: Path, run_override: str | None) -> tuple[Path, list[dict[str, Any]]]:
    try:
        doc = safejson.load_file(path, 64 << 20)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TriageError(f"{path}: not a readable report JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("schema") != "triage.report/v1":
        raise TriageError(f"{path}: not a triage report (schema triage.report/v1)")
    run = Path(run_override or doc.get("run", {}).get("path", ""))
    if not run_override and not run.is_absolute() and not run.exists():
        run = path.parent / run
    return run, list(doc.get("adjustments", []))


def plan(source: str | Path, run_override: str | None = None) -> ApplyResult:
    src = Path(source)
    if src.is_file():
        run_path, proposals = _from_report(src, run_override)
        facts = resolve(load_run(run_path))
    else:
        offline = offline_report(load_run(src))
        facts = offline.facts
        proposals = [{"file": a.file, "key": a.key, "to": a.to} for a in offline.adjustments]
    run = facts.run
    texts: dict[str, tuple[str, str]] = {}
    refused: list[tuple[str, str, str]] = []
    changes: dict[str, list[tuple[str, Any, Any]]] = {}
    for p in proposals:
        file, key, to = str(p.get("file", "")), str(p.get("key", "")), p.get("to")
        cv, reason = suggest.check(facts, file, key, to)
        if cv is None:
            refused.append((file, key, reason or "refused"))
            continue
        if file not in texts:
            text = (run.root / file).read_text(encoding="utf-8")
            texts[file] = (text, text)
        original, current = texts[file]
        new = number(to)
        assert new is not None  # suggest.check accepted it as a finite number
        value: float | int = int(new) if isinstance(cv.value, int) and new.is_integer() else new
        try:
            texts[file] = (original, edit_text(current, Path(file).suffix.lower(), cv.key, value))
        except EditError as exc:
            refused.append((file, key, str(exc)))
            continue
        changes.setdefault(file, []).append((cv.key, cv.value, value))
    edits = [FileEdit(f, o, e, changes.get(f, [])) for f, (o, e) in texts.items() if o != e]
    return ApplyResult(run.root, edits, refused)


def write(result: ApplyResult, out_dir: Path | None = None, in_place: bool = False) -> ApplyResult:
    """Edited copies under `out_dir`, or the originals after saving `<file>.bak` backups."""
    try:
        for e in result.edits:
            _write_one(result, e, out_dir, in_place)
    except OSError as exc:
        raise TriageError(f"{exc.filename or 'output'}: cannot write ({exc.strerror})") from None
    return result


def _write_one(result: ApplyResult, e: FileEdit, out_dir: Path | None, in_place: bool) -> None:
    if in_place:
        target = result.run / e.file
        backup = target.with_name(target.name + ".bak")
        n = 1
        while backup.exists():
            backup = target.with_name(f"{target.name}.bak{n}")
            n += 1
        shutil.copy2(target, backup)
    else:
        assert out_dir is not None
        target = out_dir / e.file
        target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(e.edited, encoding="utf-8")
    result.written.append(str(target))
