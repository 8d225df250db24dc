"""Flags and helpers shared by the `kbqa` verbs (DESIGN "Command line and Python API")."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kb_dumps.json_types import JsonValue
from kb_dumps.settings_types import MAX_SECONDS
from kbqa.settings import get_settings

if TYPE_CHECKING:
    from kb_dumps.store_types import Store
    from kbqa.settings import ServerSettings, SettingValue

# ---- argparse types: every numeric or path flag is checked where it is parsed ------------------------------
# A bad value is argparse's usage error (exit 2, one line naming the flag), never a failure deep inside a verb.
# The settings of the same values (KBQA_* variables) have the same bounds: kb_dumps/settings_types.py.


def _number_in(text: str, high: float) -> float | None:
    """`text` as a finite number more than 0 and at most `high`; None when it is not one."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and 0 < value <= high else None


def seconds(text: str) -> float:
    """A time budget: finite, more than 0, at most a day."""
    value = _number_in(text, MAX_SECONDS)
    if value is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a time budget: give seconds, more than 0 and at most "
                                         f"{MAX_SECONDS:g} (a day)")
    return value


def integer(low: int, high: int | None = None, what: str = "a count") -> Callable[[str], int]:
    """An argparse type: a whole number in [low, high] (no upper bound when high is None)."""
    span = f"from {low} to {high}" if high is not None else f"{low} or more"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}: give a whole number {span}")
        return value

    parse.__name__ = "integer"
    return parse


def positive_float(high: float, what: str) -> Callable[[str], float]:
    """An argparse type: a finite number more than 0 and at most `high`."""

    def parse(text: str) -> float:
        value = _number_in(text, high)
        if value is None:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}: give a number more than 0 and at most {high:g}")
        return value

    parse.__name__ = "number"
    return parse


def finite_float(text: str) -> float:
    """An argparse type: any finite number (a score threshold; nan would compare false with everything)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


port = integer(1, 65_535, "a TCP port")
row_cap = integer(0, None, "a row cap (it cannot be negative)")
repair_rounds = integer(0, 100, "a number of repair rounds")
workers = integer(1, 1024, "a number of workers")


def question_text(text: str) -> str:
    """A question: not empty or blank (as the server's and MCP's `check_question`)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("the question is empty; write a question in words, e.g. "
                                         "'where was sasha vujačić born'")
    return text


def http_url(text: str) -> str:
    """An http(s) URL with a host (and, when given, a port from 1 to 65535)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(text)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname) and (parts.port is None or parts.port > 0)
    except ValueError:  # a bad IPv6 literal or a port that is not a number in range
        ok = False
    if not ok:
        raise argparse.ArgumentTypeError(f"{text!r} is not an http(s) URL with a host, e.g. http://127.0.0.1:8000")
    return text


def store_dir(text: str) -> Path:
    """A store directory: not empty (that would be the current folder) and not a file."""
    if not text.strip():
        raise argparse.ArgumentTypeError("the store path is empty; give a directory (an empty path would write "
                                         "into the current folder)")
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a file, not a store directory")
    return path


def add_store_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", type=store_dir, default=None, metavar="DIR",
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
                     row_cap: int) -> Store:
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
    settings = get_settings().store
    store = settings.default_store()
    from kb_dumps.layout import StoreLayout

    if not StoreLayout.of(store).exists():
        from kb_dumps.ingest import ingest
        from kb_dumps.samples import get_sample

        sample = get_sample(settings.default_sample)
        print(f"building the bundled {sample.name} store in {store} (first use) …", file=sys.stderr)
        ingest(sample.paths(), store, profile=sample.profile)
    return store


def print_json(obj: JsonValue) -> None:
    """One JSON line on stdout (a stray Path or date in `obj` is written as its text)."""
    print(json.dumps(obj, ensure_ascii=False, indent=None, default=str))


def subparser(sub: argparse._SubParsersAction, name: str, help_: str, example: str) -> argparse.ArgumentParser:
    return sub.add_parser(name, help=help_, description=help_, epilog=f"example:\n  {example}",
                          formatter_class=argparse.RawDescriptionHelpFormatter)


def add_translator_flags(p: argparse.ArgumentParser, what: str) -> None:
    """`--translator NAME` (explore, cases, model, replay: the registry) and `--backend NAME`, the model translator's
    provider (llama-cpp, openai, hf); `--backend` alone implies `--translator model`. The old `--backend explore`
    is still accepted, with a deprecation note (`translator_choice`)."""
    from kbqa.backends import BACKENDS
    from kbqa.translators import TRANSLATORS

    table = "; ".join(f"{name}: {desc}" for name, desc in TRANSLATORS.table())
    p.add_argument("--translator", choices=TRANSLATORS.names(), default=None, metavar="NAME",
                   help=f"translator of {what} (default: setting KBQA_TRANSLATOR, else explore). {table}")
    old = tuple(n for n in TRANSLATORS.names() if n != "model")  # the deprecated `--backend explore` spelling
    providers = "; ".join(f"{name}: {desc}" for name, desc in BACKENDS.table())
    p.add_argument("--backend", choices=(*BACKENDS.names(), *old), default=None, metavar="NAME",
                   help=f"the model translator's provider (implies --translator model; setting KBQA_BACKEND). "
                        f"{providers}")
    p.add_argument("--model", default=None,
                   help="model: a name from `kbqa models list` (llama-cpp), a GGUF path, a checkpoint folder (hf), "
                        "or the server's model name (openai)")
    p.add_argument("--model-url", default=None, metavar="URL",
                   help="OpenAI-compatible model server URL (…/v1) of --backend openai")
    p.add_argument("--replay", type=Path, default=None, metavar="FILE", help="replay JSONL (id, output) of "
                   "--translator replay")


def translator_choice(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """(translator, backend) from --translator / --backend (None = not given): `--backend PROVIDER` alone implies
    the model translator; `--backend explore|cases|replay` is the deprecated spelling of `--translator`."""
    from kbqa.settings import split_translator_backend

    return split_translator_backend(getattr(args, "translator", None), getattr(args, "backend", None))


def add_chooser_flag(p: argparse.ArgumentParser) -> None:
    """`--explore-chooser NAME`: a model backend that picks among the explore translator's top candidates."""
    from kbqa.backends import BACKENDS

    p.add_argument("--explore-chooser", default=None, metavar="NAME", choices=("none", *BACKENDS.names()),
                   help="with the explore translator: a model that picks one of the ranker's top 5 candidates "
                        f"(shown to it verbalised, answered with one number); one of none (default: the ranker's "
                        f"pick), {', '.join(BACKENDS.names())}; the model is --model or KBQA_MODEL (llama-cpp: a GGUF or a name "
                        "from `kbqa models list`; openai: the server's model at --model-url / KBQA_ENDPOINT). Setting "
                        "KBQA_EXPLORE_CHOOSER; KBQA_EXPLORE_CHOOSER_K shows 2-9 candidates")


def add_server_translator_flags(p: argparse.ArgumentParser, what: str) -> None:
    """The translator and time-budget flags of the long-running faces (`kbqa serve`, `kbqa mcp`)."""
    add_translator_flags(p, what)


def server_settings(args: argparse.Namespace, **given: SettingValue) -> ServerSettings:
    """`ServerSettings` for `kbqa serve` / `kbqa mcp`: the store (checked), the KBQA_SERVER_* limits, and the
    flags given on the command line on top (None = not given). A bad KBQA_* value is a usage error naming it."""
    from kb_dumps.layout import StoreLayout
    from kb_dumps.stage_errors import KBQAError
    from kbqa.settings import ServerSettings

    store = resolve_store(args.store) if args.store is not None or not args.sparql_endpoint else None
    if store is not None and not StoreLayout.of(store).exists():
        raise KBQAError(f"no store at {store}; build one with `kbqa ingest SOURCE --store {store}`", stage="store")
    cfg = get_settings().store
    translator, backend = translator_choice(args)
    given = {"query_timeout_s": args.timeout, "model_timeout_s": args.model_timeout, "host": args.host,
             "port": args.port, "translator": translator, "backend": backend, **given}
    return ServerSettings(store=store, model=args.model, model_url=args.model_url, replay_path=args.replay,
                          sparql_endpoint=args.sparql_endpoint, endpoint_dialect=args.endpoint_dialect,
                          **{"query_timeout_s": cfg.query_timeout_s, "row_cap": cfg.row_cap,
                             **{k: v for k, v in given.items() if v is not None}})
