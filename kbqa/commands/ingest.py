"""`kbqa ingest`: load dumps (or a bundled sample) into a store and write its label memory."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kb_dumps.ingest import ingest
from kb_dumps.readers import FORMATS
from kb_dumps.samples import SAMPLES, get_sample
from kb_dumps.stage_errors import KBQAError
from kbqa.commands.common import add_format_flag, integer, print_json, seconds, store_dir, subparser
from kbqa.settings import get_settings


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparser(sub, "ingest", "load RDF / Wikidata JSON / Freebase dumps into a store and build its label memory",
                  "kbqa ingest latest-all.json.gz --store kb/ --lang en,de\n"
                  "  kbqa ingest --sample wikidata-mini\n"
                  "  kbqa ingest more.nt.gz --store kb/ --append\n"
                  "  kbqa ingest --endpoint http://localhost:7001/sparql --profile wikidata --store kb/  "
                  "(labels only; rerun to resume)")
    p.add_argument("sources", nargs="*", type=Path, metavar="SOURCE",
                   help="dump files: .nt .nq .ttl .rdf/.owl/.xml (RDF/XML), .json (Wikidata, one entity per line), "
                        "Freebase RDF; each may be .gz or .bz2")
    p.add_argument("--sample", choices=sorted(SAMPLES), help="build a bundled sample KB instead of SOURCEs")
    p.add_argument("--store", type=store_dir, default=None, metavar="DIR",
                   help="store directory (default: .kbqa/stores/<sample> for --sample)")
    p.add_argument("--profile", help="KB profile: wikidata, freebase, generic, or a JSON override file "
                                     "(default: detected from the IRIs)")
    p.add_argument("--source-format", choices=sorted(FORMATS), help="format of every SOURCE (default: from the name)")
    p.add_argument("--append", action="store_true", help="add SOURCEs to an existing store")
    p.add_argument("--replace", action="store_true", help="rebuild the store from SOURCEs only")
    p.add_argument("--skip-bad-lines", action="store_true",
                   help="line-based formats: count and report malformed lines instead of stopping")
    p.add_argument("--lang", default="en", help="label languages, preferred first (default: en)")
    p.add_argument("--wait", action="store_true", help="wait for another writer instead of failing")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    e = p.add_argument_group("from a SPARQL endpoint (the label memory only; queries then go to the endpoint)")
    e.add_argument("--endpoint", "--sparql-endpoint", dest="sparql_endpoint", metavar="URL",
                   help="page labels, aliases, descriptions, kinds and popularity out of this endpoint into "
                        "--store DIR; an interrupted run resumes when run again")
    e.add_argument("--endpoint-dialect", default=None, choices=["generic", "oxigraph", "wdqs", "qlever", "virtuoso"],
                   help="engine of the endpoint (default: wdqs for query.wikidata.org, else generic)")
    e.add_argument("--page-size", type=integer(1, 10_000_000, "a page size"), default=50_000, metavar="N",
                   help="rows per query (default 50000; fewer, larger pages cost an engine that sorts less)")
    e.add_argument("--all-ids", action="store_true",
                   help="also write ids that have no label, alias or description (as a dump ingestion does)")
    e.add_argument("--max-pages", type=integer(1, None, "a number of pages"), default=None, metavar="N",
                   help="stop after N pages, resumable (to spread a long ingestion over several runs)")
    e.add_argument("--restart", action="store_true", help="discard an interrupted endpoint ingestion and start over")
    e.add_argument("--endpoint-timeout", type=seconds, default=300.0, metavar="S",
                   help="seconds per query (default 300)")
    add_format_flag(p)
    return p


def run(args: argparse.Namespace) -> int:
    if args.sparql_endpoint:
        return _run_endpoint(args)
    if args.sample:
        if args.sources:
            raise KBQAError("give SOURCE files or --sample, not both", stage="usage")
        sample = get_sample(args.sample)
        sources, profile = sample.paths(), args.profile or sample.profile
        store = args.store or get_settings().store.stores_dir / sample.name
    else:
        if not args.sources:
            raise KBQAError("nothing to ingest: give SOURCE files or --sample NAME", stage="usage")
        if args.store is None:
            raise KBQAError("--store DIR is required with SOURCE files", stage="usage")
        sources, profile, store = args.sources, args.profile, args.store
    formats = {str(s): args.source_format for s in sources} if args.source_format else None
    report = ingest(sources, store, profile=profile, append=args.append, replace=args.replace,
                    skip_bad_lines=args.skip_bad_lines, languages=tuple(x.strip() for x in args.lang.split(",") if x.strip()),
                    formats=formats, progress=False if args.no_progress else None, wait=args.wait)
    if args.format == "json":
        print_json(report.to_dict())
        return 0
    for s in report.sources:
        line = f"{s.name}: {s.status}, {s.triples:,} triples"
        if s.status == "loaded" and s.seconds:
            line += f" in {s.seconds:.1f} s ({s.triples / max(s.seconds, 1e-9):,.0f} triples/s)"
        if s.skipped:
            line += f", {s.skipped} malformed lines skipped"
        print(line)
        for lineno, reason in s.skipped_examples[:5]:
            print(f"  skipped {s.path}:{lineno}: {reason}", file=sys.stderr)
    if report.changed:
        present = f" ({report.triples_present:,} read were already present)" if report.triples_present else ""
        print(f"store {report.store} ({report.profile}): {report.triples_added:,} triples added{present}, "
              f"{report.label_rows:,} label-memory rows")
    else:
        print(f"store {report.store}: already up to date (same content), nothing changed")
    return 0


def _run_endpoint(args: argparse.Namespace) -> int:
    from kb_dumps.endpoint_ingest import ingest_endpoint

    if args.sources or args.sample:
        raise KBQAError("give SOURCE files, --sample or --endpoint, not several", stage="usage")
    if args.store is None:
        raise KBQAError("--store DIR is required with --endpoint (it keeps the label memory and index)", stage="usage")
    report = ingest_endpoint(args.sparql_endpoint, args.store, profile=args.profile,
                             languages=tuple(x.strip() for x in args.lang.split(",") if x.strip()),
                             dialect=args.endpoint_dialect, page_size=args.page_size, all_ids=args.all_ids,
                             replace=args.replace, restart=args.restart, max_pages=args.max_pages,
                             timeout_s=args.endpoint_timeout, progress=False if args.no_progress else None,
                             wait=args.wait)
    if args.format == "json":
        print_json(report.to_dict())
        return 0
    how = "resumed, " if report.resumed else ""
    print(f"{report.endpoint}: {how}{report.pages:,} pages, {report.rows_read:,} rows in {report.seconds:.1f} s "
          f"({report.rows_per_s:,.0f} rows/s)")
    if report.complete:
        print(f"store {report.store} ({report.profile}, remote): {report.label_rows:,} label-memory rows; "
              f"next: kbqa index --store {report.store}")
    else:
        print(f"stopped after {report.pages} pages ({report.label_rows:,} rows so far); run the same command again "
              "to resume")
    return 0
