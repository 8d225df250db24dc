"""The one printer of a `Result` for `kbqa compile` and `kbqa ask` (local or `--server`): JSON, or text."""

from __future__ import annotations

import dataclasses
import json
import sys

from kb_dumps.profiles import KBProfile
from kb_dumps.stage_errors import Stage
from kbqa.commands.common import print_json
from kbqa.result import Result


def print_result(result: Result, *, fmt: str, profile: KBProfile, explain: bool = False, verbose: bool = False,
                 source: str | None = None) -> int:
    """Print `result` (answers' ids compacted by `profile`) and its errors on stderr; the exit code.

    `explain` adds the front-end's parts and the Plan, `verbose` the translator's text; `source` names
    the file the text came from, for `file:line` in error lines."""
    if fmt == "json":
        print_json(result.to_dict())
    else:
        if verbose and result.text:
            print(result.text)
        if explain:
            print_explain(result)
        print_text(result, profile)
    errors = result.errors
    if result.failed_stage == Stage.INTERNAL:  # our bug: one line with the report hint, not the knock-on errors
        errors = [e for e in errors if e.stage == Stage.INTERNAL][:1] or errors[:1]
    for err in errors:
        # an error about the text names its file, with or without a line (a parser that gave up has none)
        if source and source != "-" and not err.file and (err.line or err.stage in (Stage.PARSE, Stage.VALIDATE)):
            err = dataclasses.replace(err, file=source)
        print(f"error: {err}", file=sys.stderr)
    return result.exit_code


def print_explain(result: Result) -> None:
    """The translator's ranked candidates (when it ranked any), the front-end's parts (ACs, QCompiler
    leaves, PyRAG lines) and the Plan, before the query."""
    details = (result.translation or {}).get("details") or {}
    candidates = details.get("candidates") or []
    if candidates:
        ranker = details.get("ranker") or {}
        print(f"== candidates (best first; ranker: {ranker.get('kind', '?')}, {ranker.get('file', '?')})")
        for i, c in enumerate(candidates, start=1):
            rows = c.get("rows")
            print(f"{i}. score {c.get('score', 0):.3f} [{c.get('family', '')}, {rows} rows] {c.get('verbalised', '')}")
            # the features that moved this candidate's score most, with how much (signed)
            parts = c.get("contributions") or c.get("features") or {}
            top = sorted(parts.items(), key=lambda kv: -abs(kv[1]))[:5]
            print("    " + ", ".join(f"{k} {v:+.3g}" for k, v in top))
    print("== parts")
    for c in result.constraints:
        ident = c.get("id") or c.get("leaf") or ""
        print(f"{ident}: {c.get('text', '')}")
        body = (c.get("fragment") or c.get("desq") or "").strip()
        for line in body.splitlines():
            print(f"    {line}")
    if result.plan:
        print("== plan")
        print(json.dumps(result.plan, ensure_ascii=False))
    print("== query and answers")


def print_text(result: Result, profile: KBProfile) -> None:
    """The query, the answer table, the diagnosis and the step report."""
    if result.sparql:
        print(result.sparql)
        print()
    ans = result.answers
    if ans is not None:
        if ans.kind == "ask":
            print(f"answer: {'yes' if ans.boolean else 'no'}")
        else:
            print(" | ".join(ans.vars))
            for row in ans.rows:
                cells = []
                for v in row:
                    if v is None:
                        cells.append("")
                    elif v.type == "uri":
                        ident = profile.compact(v.value)
                        cells.append(f"{ident} ({v.label})" if v.label else ident)
                    else:
                        cells.append(v.display)
                print(" | ".join(cells))
            more = " (row cap reached)" if ans.truncated else ""
            print(f"({len(ans.rows)} rows{more})")
        print()
    if result.diagnosis is not None:
        print(f"diagnosis: {result.diagnosis.message}")
    print("steps:")
    for s in result.steps:
        mark = "ok  " if s.ok else "FAIL"
        print(f"  {mark} {s.stage:<9} {s.seconds * 1000:8.1f} ms  {s.detail}")
    print(f"status: {result.status}" + (f" (stage {result.failed_stage})" if result.failed_stage else ""))
