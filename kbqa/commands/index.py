"""`kbqa index`: build or update the grounding index (vectors + lexicon) of a store's label memory."""

from __future__ import annotations

import argparse
from pathlib import Path

from kb_dumps.stage_errors import EXIT_OK
from kbqa.commands.common import add_format_flag, add_store_flag, integer, print_json, resolve_store

EXAMPLE = """examples:
  kbqa index                                   index the default store (incremental)
  kbqa index --store kb/ --rebuild             re-embed every row from scratch
  kbqa index --store kb/ --embedder minilm     embed with MiniLM itself (slower to build and to start)
  kbqa index --store kb/ --format json         print what was done as JSON
  kbqa index --store kb/ --vector-store compact  int8 vectors on disk (the default from 1M labels)
  kbqa index --store kb/ --vector-store milvus:http://127.0.0.1:19530
                                               vectors in a Milvus server (large KBs; grounding/README.md)"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "index", help="build the grounding index of a store",
        description="Embed the label memory (label: description, and each alias) into a vector index and "
                    "build the lexical index, under <store>/index/. Rows added by `kbqa ingest --append` are "
                    "embedded incrementally. Also rebuilds the schema and value memory (<store>/schema/: classes, "
                    "predicates, quotable literals) that the explore translator reads.",
        epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_store_flag(p)
    p.add_argument("--rebuild", action="store_true", help="drop the index and embed every row again")
    p.add_argument("--embedder", "--model", dest="model", default=None, metavar="NAME",
                   help="minilm-static (the default: distilled from MiniLM, no torch), minilm (all-MiniLM-L6-v2, "
                        "slower, needs the train extra) or a sentence-transformers name or folder (default: "
                        "setting KBQA_EMBEDDING_MODEL); a different embedder rebuilds the index")
    p.add_argument("--batch-size", type=integer(1, 1_000_000, "a batch size"), default=None,
                   help="texts per embedding batch (default: the embedder's; 64 for MiniLM)")
    p.add_argument("--vector-store", type=_vector_store, default=None, metavar="SPEC",
                   help="where the vectors go: hnsw (hnswlib files in the index folder, in memory), compact (int8 "
                        "vectors in lists in the index folder, read per query: bounded memory for 1M+ labels), milvus "
                        "(a Milvus Lite database in the index folder), milvus:PATH.db (one there), "
                        "milvus:http://host:19530 (a Milvus server; the milvus extra); default: as the existing index "
                        "(a change rebuilds), for a new one hnsw below 1M labels and compact from 1M")
    add_format_flag(p)
    return p


def _vector_store(spec: str) -> str:
    """A spec of grounding/vector_stores.py (`hnsw`, `milvus[:TARGET]`); an unknown name is a usage error."""
    from grounding.vector_stores import VECTOR_STORES
    from kb_dumps.stage_errors import KBQAError

    try:
        VECTOR_STORES.get(spec.partition(":")[0])
    except KBQAError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return spec


def run(args: argparse.Namespace) -> int:
    from grounding.build import build_index
    from kbqa.settings import get_settings

    store = resolve_store(args.store)
    stats = build_index(store, model=args.model or get_settings().grounding.embedding_model, rebuild=args.rebuild,
                        batch_size=args.batch_size, vector_store=args.vector_store)
    schema = _build_schema(store)
    if args.format == "json":
        print_json({**stats.to_dict(), "schema": schema})
    elif stats.embedded_rows == 0 and not stats.rebuilt:
        print(f"index of {store} is up to date (generation {stats.generation}, {stats.rows} rows, "
              f"{stats.vectors} vectors)")
    else:
        print(f"indexed {stats.embedded_rows} rows ({stats.embedded_texts} texts) of {store} in {stats.seconds:.1f} s "
              f"({stats.rows_per_s:.0f} rows/s); {stats.vectors} vectors, {stats.names} names; "
              f"generation {stats.generation}; peak memory {stats.peak_rss_mb:.0f} MB")
    if args.format != "json":
        print(f"schema memory: {schema['classes']} classes, {schema['predicates']} predicates, {schema['values']} "
              f"values in {schema['seconds']:.1f} s (the explore translator's)")
    return EXIT_OK


def _build_schema(store: Path) -> dict:
    """The schema and value memory of the store (`grounding/schema.py`), rebuilt with the index."""
    from grounding.schema import build_schema
    from kb_dumps.label_memory import LabelMemory
    from kb_dumps.layout import StoreLayout
    from kb_dumps.profiles import get_profile
    from kb_dumps.store import open_store

    layout = StoreLayout.of(store)
    memory = LabelMemory(layout.labels, readonly=True)
    try:
        with open_store(store) as kb:
            schema = build_schema(kb, get_profile(layout.profile_name), memory)
    finally:
        memory.close()
    schema.save(store)
    return schema.meta
