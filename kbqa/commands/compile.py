"""`kbqa compile`: front-end text (DeSQ) → checked SPARQL, its answers with labels, and the step report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kb_dumps.stage_errors import KBQAError
from kbqa.commands.common import (
    add_endpoint_flags,
    add_format_flag,
    add_store_flag,
    repair_rounds,
    seconds,
    store_target,
    subparser,
)
from kbqa.frontends import FRONTENDS

EXAMPLE = """kbqa compile question.desq --frontend desq --store .kbqa/stores/wikidata-mini
  kbqa compile - --no-execute --format json < question.desq      generate only, no store"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparser(subparsers, "compile", "compile front-end text (DeSQ) to SPARQL and run it", EXAMPLE)
    p.add_argument("file", help="the front-end text file, or - for stdin")
    p.add_argument("--frontend", default="desq", choices=FRONTENDS.names(),
                   help="the input language (default: desq): " + "; ".join(f"{n}: {d}" for n, d in FRONTENDS.table()))
    add_store_flag(p)
    add_endpoint_flags(p)
    p.add_argument("--no-execute", action="store_true",
                   help="generate only: ground (guessed URIs when no --store is given) and parse-check, never run")
    p.add_argument("--timeout", type=seconds, default=None, metavar="S", help="time budget per query in seconds")
    p.add_argument("--repair-rounds", type=repair_rounds, default=None, metavar="N",
                   help="qcompiler/pyrag: times a leaf's failed translation goes back to the model (default: setting "
                        "KBQA_REPAIR_ROUNDS, else 2)")
    p.add_argument("--explain", action="store_true",
                   help="also print the leaves / sub-questions with their DeSQ, and the Plan")
    add_format_flag(p)
    return p


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
    from kbqa.commands.result_output import print_result
    from kbqa.pipeline import Engine

    text = _read(args.file)
    # --no-execute without --store: no store at all (guessed URIs, unchecked); with --store: grounded, not run.
    store, endpoint = (None, None) if args.no_execute and args.store is None else store_target(args)
    # QCompiler leaves and PyRAG sub-questions are translated by the engine's translator (KBQA_TRANSLATOR)
    with Engine.from_settings(store, sparql_endpoint=endpoint, endpoint_dialect=args.endpoint_dialect,
                              query_timeout_s=args.timeout, repair_rounds=args.repair_rounds) as engine:
        result = engine.compile(text, frontend=args.frontend, execute=not args.no_execute)
        return print_result(result, fmt=args.format, profile=engine.profile, explain=args.explain, source=args.file)
