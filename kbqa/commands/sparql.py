"""`kbqa sparql`: run a SPARQL query on a store and print a table (or json/csv/tsv)."""

from __future__ import annotations

import argparse
import csv
import sys

from kb_dumps.layout import StoreLayout
from kb_dumps.profiles import KBProfile, get_profile
from kb_dumps.sparql_text import with_prefixes
from kb_dumps.stage_errors import EXIT_NO_ANSWER, KBQAError
from kb_dumps.store_types import DEFAULT_ROW_CAP, QueryResult, Term
from kbqa.commands.common import (
    add_endpoint_flags,
    add_format_flag,
    add_store_flag,
    open_query_store,
    print_json,
    row_cap,
    seconds,
    store_target,
    subparser,
)


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparser(sub, "sparql", "run a read-only SPARQL query on a store",
                  'kbqa sparql "SELECT ?o WHERE { wd:Q42 wdt:P19 ?o }" --format json\n'
                  '  kbqa sparql "SELECT ?o WHERE { wd:Q42 wdt:P19 ?o }" --endpoint https://query.wikidata.org/sparql')
    p.add_argument("query", help="the SPARQL query, or @FILE to read it from a file; standard prefixes of the "
                                 "store's KB profile are added when missing")
    add_store_flag(p)
    add_endpoint_flags(p)
    p.add_argument("--timeout", type=seconds, default=10.0,
                   help="seconds before the query is stopped (default 10; more than 0, at most a day)")
    p.add_argument("--limit", type=row_cap, default=DEFAULT_ROW_CAP, help=f"row cap (default {DEFAULT_ROW_CAP})")
    add_format_flag(p, ("text", "json", "csv", "tsv"))
    return p


def read_query_file(path: str) -> str:
    """The query in FILE, for `@FILE`: a directory, a binary or a non-UTF-8 file is one clear line."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except IsADirectoryError:
        raise KBQAError("the query file is a directory; give a file with the query", file=path) from None
    except OSError as e:
        raise KBQAError(f"cannot read the query file: {e.strerror}", file=path) from None
    except UnicodeDecodeError as e:
        raise KBQAError(f"the query file is not UTF-8 text (byte {e.start}); is it binary?", file=path) from None
    if "\x00" in text:
        raise KBQAError("the query file contains NUL characters; is it binary?", file=path)
    return text


def cell(term: Term | None, profile: KBProfile) -> str:
    if term is None:
        return ""
    if term["type"] == "uri":
        return profile.compact(term["value"])
    if term["type"] == "bnode":
        return "_:" + term["value"]
    v = term["value"]
    if "xml:lang" in term:
        return f"{v}@{term['xml:lang']}"
    return v


def print_table(res: QueryResult, profile: KBProfile, fmt: str) -> None:
    if res.kind == "ask":
        print("true" if res.boolean else "false")
        return
    rows = [[cell(t, profile) for t in row] for row in res.rows]
    if fmt in ("csv", "tsv"):
        w = csv.writer(sys.stdout, delimiter="," if fmt == "csv" else "\t", lineterminator="\n")
        w.writerow(res.vars)
        w.writerows(rows)
        if res.truncated:  # the table has no room for the notice: stderr, as for text
            print(f"{len(rows)} row(s): cut at the row cap of {len(rows)}; raise it with --limit", file=sys.stderr)
        return
    widths = [max([len(v) + 1] + [min(len(r[i]), 60) for r in rows]) for i, v in enumerate(res.vars)]
    print("  ".join(("?" + v).ljust(w) for v, w in zip(res.vars, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join((c if len(c) <= 60 else c[:57] + "...").ljust(w) for c, w in zip(r, widths, strict=True)))
    note = f"{len(rows)} row(s) in {res.elapsed_s * 1000:.0f} ms"
    if res.truncated:
        note += f" (cut at the row cap of {len(rows)}; raise it with --limit)"
    print(note, file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from kb_dumps.profiles import DBPEDIA_PREFIXES, FreebaseProfile, WikidataProfile

    query = args.query
    if query.startswith("@"):
        query = read_query_file(query[1:])
        if not query.strip():
            raise KBQAError("the query file is empty; write a SPARQL query in it", file=args.query[1:])
    elif not query.strip():
        raise KBQAError('the query is empty; give a SPARQL query, e.g. "SELECT * WHERE { ?s ?p ?o } LIMIT 5", '
                        "or @FILE", stage="usage")
    store_dir, endpoint = store_target(args)
    if store_dir is not None:
        profile = get_profile(StoreLayout.of(store_dir).profile_name)
        prefixes = profile.prefixes
    else:  # an endpoint alone: whichever known KB's prefixes the query uses (they do not clash)
        profile = get_profile("wikidata" if args.endpoint_dialect == "wdqs" else "generic")
        prefixes = {**DBPEDIA_PREFIXES, **FreebaseProfile.prefixes, **WikidataProfile.prefixes}
    query = with_prefixes(query, prefixes)
    with open_query_store(store_dir, endpoint, args, args.timeout, args.limit) as store:
        res = store.query(query)
    if args.format == "json":
        print_json(res.to_dict())
    else:
        print_table(res, profile, args.format)
    return EXIT_NO_ANSWER if res.empty else 0
