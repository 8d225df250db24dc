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


def add_endpoint_flags(p: argparse.ArgumentParser, flags: tuple[str, ...] = ("--endpoint", "--sparql-endpoint")) -> None:
    """`--endpoint URL`: queries go to a remote SPARQL endpoint instead of the store's pyoxigraph data.
    (A model server's URL is `--model-url`, never `--endpoint`.)"""
    p.add_argument(*flags, dest="sparql_endpoint", default=None, metavar="URL",
                   help="SPARQL endpoint to run queries on (QLever, Virtuoso, Blazegraph, Oxigraph server, WDQS); "
                        "labels and the grounding index still come from --store when given, which a remote store "
                        "made by `kbqa ingest --endpoint URL --store DIR` does by itself")
    p.add_argument("--endpoint-dialect", default=None, choices=["generic", "oxigraph", "wdqs", "qlever", "virtuoso"],
                   help="engine of the endpoint (default: wdqs for query.wikidata.org, else generic); only wdqs "
                        "runs SERVICE wikibase:label")


def store_target(args: argparse.Namespace) -> tuple[Path | None, str | None]:
    """(store directory, endpoint URL) from --store / --endpoint. An endpoint alone uses no store
    directory; neither gives the default store (built on first use)."""
    endpoint = getattr(args, "sparql_endpoint", None)
    if endpoint and args.store is None:
        return None, endpoint
    return resolve_store(args.store), endpoint


def open_query_store(store_dir: Path | None, endpoint: str | None, args: argparse.Namespace, timeout_s: float,
                     row_cap: int) -> Any:
    """The store queries run on: the endpoint given, the one a remote store directory records, or local."""
    from kb_dumps.store import open_store

    return open_store(store_dir, endpoint=endpoint, timeout_s=timeout_s, row_cap=row_cap,
                      dialect=getattr(args, "endpoint_dialect", None))


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


def add_backend_flag(p: argparse.ArgumentParser, help_: str) -> None:
    """`--backend NAME`: a translator or a model backend, from their registries (listed in --help)."""
    from kbqa.translators import translator_names, translator_table

    table = "; ".join(f"{name}: {what}" for name, what in translator_table())
    p.add_argument("--backend", choices=translator_names(), default=None, metavar="NAME",
                   help=f"{help_}. {table}")
