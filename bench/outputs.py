"""Where a bench's `--out` goes: one place that writes its figures and per-question rows, the same way for every
script (a folder with rows.jsonl + summary.json, or one JSON file with both)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path


def write_run_folder(folder: Path, rows: Iterable[Mapping[str, object]], summary: Mapping[str, object]) -> None:
    """`folder`/rows.jsonl (one row a line) and `folder`/summary.json (the figures)."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "rows.jsonl", "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    (folder / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")


def write_run_file(path: Path, summary: Mapping[str, object], rows: list[Mapping[str, object]]) -> None:
    """One JSON file {"summary": …, "rows": […]}."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1, ensure_ascii=False), encoding="utf-8")


def report_run(module: str, summary: Mapping[str, object], rows: list[Mapping[str, object]], out: Path | None) -> None:
    """Print the figures and the command that made them (BENCHMARKS.md quotes both); with `out`, write them there
    with the rows (`write_run_file`)."""
    print(json.dumps(summary, indent=1))
    print(f"command: python -m {module} " + " ".join(sys.argv[1:]))
    if out:
        write_run_file(out, summary, rows)
