#!/usr/bin/env python3
"""Write tests/real_runs/SOURCES.md from the corpus's labels (each label names its repository, paths, commit and
licence), so the table never drifts from the runs it describes.

    python tools/corpus_sources.py
"""

from __future__ import annotations

import json
from pathlib import Path

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "real_runs"

HEAD = """# Real public runs (the labelled corpus)

Each folder holds one run's files as its public repository has them; `labels/<run>.json` says what is wrong with
the run (finding ids with the numbers that show it) or that it is healthy, worked out from the run's own numbers
before triage was run on it. Every repository states a permissive licence (the `licence` column); the files keep
that licence. Files marked "index text" were copied from a search index that strips ANSI escape sequences and
carriage returns, so they are the text of the file rather than its exact bytes; the commit lets anyone fetch the
original. `tests/test_real_corpus.py` scores triage against the labels.

Written by `tools/corpus_sources.py` from the labels; do not edit by hand.

| run | trainer | paradigm | labelled | source (repo, path @ commit) | licence | copy |
|---|---|---|---|---|---|---|
"""


def main() -> None:
    rows = []
    for path in sorted((CORPUS / "labels").glob("*.json")):
        label = json.loads(path.read_text(encoding="utf-8"))
        src = label["source"]
        ids = ", ".join(f"`{p['id']}`" for p in label["problems"]) or "healthy"
        where = f"{src['repo']}: " + ", ".join(f"`{p}`" for p in src["paths"]) + f" @ `{src['commit'][:12]}`"
        copy = "index text" if src.get("exact") is False else "as stored"
        rows.append(f"| `{label['run']}` | {label['trainer']} | {label['paradigm']} | {ids} | {where} | "
                    f"{src['licence']} | {copy} |")
    (CORPUS / "SOURCES.md").write_text(HEAD + "\n".join(rows) + "\n", encoding="utf-8")
    print(f"{len(rows)} runs")


if __name__ == "__main__":
    main()
