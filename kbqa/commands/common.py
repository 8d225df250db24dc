"""Flags and helpers shared by the `kbqa` verbs (DESIGN "Command line and Python API")."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from kbqa.config import get_settings


def add_store_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", type=Path, default=None, metavar="DIR",
                   help="store directory (default: the bundled wikidata-mini store under .kbqa/stores/, "
                        "built on first use)")


def add_format_flag(p: argparse.ArgumentParser, choices: tuple[str, ...] = ("text", "json")) -> None:
    p.add_argument("--format", choices=choices, default="text", help="output format (default: text)")


def resolve_store(path: Path | None) -> Path:
    """The store to use: the one given, or the default sample store, built on first use."""
    if path is not None:
        return path
    settings = get_settings()
    store = settings.default_store()
    from kb_dumps.layout import StoreLayout

    if not StoreLayout.of(store).exists():
        from kb_dumps.ingest import ingest
        from kb_dumps.samples import get_sample

        sample = get_sample(settings.default_sample)
        print(f"building the bundled {sample.name} store in {store} (first use) …", file=sys.stderr)
        ingest(sample.paths(), store, profile=sample.profile)
    return store


def print_json(obj: Any) -> None:
    print(json.dumps(obj, ensure_ascii=False, indent=None, default=str))


def subparser(sub: Any, name: str, help_: str, example: str) -> argparse.ArgumentParser:
    return sub.add_parser(name, help=help_, description=help_, epilog=f"example:\n  {example}",
                          formatter_class=argparse.RawDescriptionHelpFormatter)
