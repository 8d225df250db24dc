"""`kbqa compile`: front-end text (DeSQ) → checked SPARQL, its answers with labels, and the step report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kb_dumps.errors import KBQAError
from kbqa.commands.common import (
    add_endpoint_flags,
    add_format_flag,
    add_store_flag,
    print_json,
    store_target,
    subparser,
)

EXAMPLE = """kbqa compile question.desq --frontend desq --store .kbqa/stores/wikidata-mini
  kbqa compile - --no-execute --format json < question.desq      generate only, no store"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparser(subparsers, "compile", "compile front-end text (DeSQ) to SPARQL and run it", EXAMPLE)
    p.add_argument("file", help="the front-end text file, or - for stdin")
    p.add_argument("--frontend", default="desq", choices=["desq", "qcompiler", "pyrag"], help="the input language (default: desq)")
    add_store_flag(p)
    add_endpoint_flags(p)
    p.add_argument("--no-execute", action="store_true",
                   help="generate only: ground (guessed URIs when no --store is given) and parse-check, never run")
    p.add_argument("--timeout", type=float, default=None, metavar="S", help="time budget per query in seconds")
    p.add_argument("--repair-rounds", type=int, default=2, metavar="N",
                   help="qcompiler/pyrag: times a leaf's failed translation goes back to the model (default 2)")
    p.add_argument("--explain", action="store_true",
                   help="also print the leaves / sub-questions with their DeSQ, and the Plan")
    add_format_flag(p)
    return p


def print_explain(result) -> None:  # noqa: ANN001 - a pipeline.Result
    """The front-end's parts (ACs, QCompiler leaves, PyRAG lines) and the Plan, before the query."""
    import json

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


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise KBQAError(f"no such file: {path}", stage="parse", file=path) from None
    except (OSError, UnicodeDecodeError) as e:
        raise KBQAError(f"cannot read {path} as UTF-8 text: {e}", stage="parse", file=path) from None


def run(args: argparse.Namespace) -> int:
    from kbqa.config import get_settings
    from kbqa.pipeline import Engine

    text = _read(args.file)
    settings = get_settings()
    # --no-execute without --store: no store at all (guessed URIs, unchecked); with --store: grounded, not run.
    store, endpoint = (None, None) if args.no_execute and args.store is None else store_target(args)
    timeout = args.timeout if args.timeout is not None else settings.query_timeout_s
    with Engine(store, timeout_s=timeout, row_cap=settings.row_cap, repair_rounds=args.repair_rounds,
                endpoint=endpoint, endpoint_dialect=args.endpoint_dialect) as engine:
        if args.frontend != "desq":  # leaves / sub-questions are translated to DeSQ
            from kbqa.translators.model import make_translator
            from kbqa.translators.settings import get_model_settings

            engine.translator = make_translator(get_model_settings(), store,
                                                store=engine.assembler.store if store or endpoint else None)
        result = engine.compile(text, frontend=args.frontend, execute=not args.no_execute)
        if args.format == "json":
            print_json(result.to_dict())
        else:
            if args.explain:
                print_explain(result)
            _print_text(result, engine)
    for err in result.errors:
        where = f"{args.file}:{err.line}" if err.line and args.file != "-" else (f"line {err.line}" if err.line else "")
        loc = ", ".join(x for x in (where, err.ac or "") if x)
        print(f"error: [{err.stage}] {loc + ': ' if loc else ''}{err.message}", file=sys.stderr)
    return result.exit_code


def _print_text(result, engine) -> None:  # noqa: ANN001 - a pipeline.Result and its Engine
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
                        ident = engine.profile.compact(v.value)
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
