"""`kbqa decompose`: gold SPARQL → DeSQ text (or JSON), and `--coverage DATASET` per-shape tables."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kb_dumps.stage_errors import EXIT_OK, EXIT_USAGE, KBQAError
from kbqa.commands.common import add_format_flag, add_store_flag, integer, print_json

EXAMPLE = """examples:
  kbqa decompose "SELECT ?x WHERE { ?x wdt:P19 wd:Q1297 }"
  kbqa decompose @gold.rq --format json --store kb/
  kbqa decompose --coverage lcquad2-dev              per-shape coverage table (decomposed AND round-tripping)
  kbqa decompose --coverage all --sample 300          every bundled dataset, a deterministic sample of each"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "decompose", help="gold SPARQL → DeSQ (atomic constraints, fragments, grounding)",
        description="Decompose a gold SPARQL query into DeSQ text: one atomic constraint per pattern, filter or "
                    "modifier, placeholders named from labels, grounding lines with the gold URIs. With "
                    "--coverage, decompose every gold query of a bundled dataset and check the round trip.",
        epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("query", nargs="?", help="the gold SPARQL query, or @FILE to read it from a file")
    p.add_argument("--profile", default=None,
                   help="KB profile: wikidata, freebase, generic or a JSON file (default: the store's, "
                        "else wikidata; with --coverage, the dataset's)")
    p.add_argument("--coverage", metavar="DATASET", default=None,
                   help="print the per-shape coverage table of a bundled dataset (or 'all')")
    p.add_argument("--sample", type=integer(1, None, "a sample size"), default=None,
                   help="with --coverage: a deterministic sample of N queries per dataset (default: all)")
    p.add_argument("--failures", type=integer(0, None, "a number of queries"), default=0,
                   help="with --coverage: also list N queries not covered")
    add_store_flag(p)
    add_format_flag(p)
    return p


def _usage(message: str) -> KBQAError:
    err = KBQAError(message, stage="usage")
    err.exit_code = EXIT_USAGE
    return err


def _labels(store: Path | None):  # noqa: ANN202 - LabelMemory | None, imported lazily
    """The label memory of `--store`, else of the default store when it exists (never built here)."""
    from kb_dumps.label_memory import LabelMemory
    from kb_dumps.layout import StoreLayout
    from kbqa.settings import get_settings

    path = store if store is not None else get_settings().store.default_store()
    layout = StoreLayout.of(path)
    if not layout.labels.exists():
        if store is not None:
            raise _usage(f"no label memory in {store}; run `kbqa ingest … --store {store}` first")
        return None, None
    return LabelMemory(layout.labels, readonly=True), layout


def _read_query(text: str) -> str:
    if text.startswith("@"):
        try:
            return Path(text[1:]).read_text(encoding="utf-8")
        except OSError as e:
            raise KBQAError(f"cannot read the query file: {e.strerror}", file=text[1:]) from None
    return text


def run(args: argparse.Namespace) -> int:
    if args.coverage:
        return _run_coverage(args)
    if not args.query:
        raise _usage("give a SPARQL query (or @FILE), or --coverage DATASET")
    from kbqa.frontends.decompose import decompose

    labels, layout = _labels(args.store)
    store_profile = layout.profile_name if layout is not None and args.store is not None else None
    profile = args.profile or store_profile or "wikidata"
    try:
        result = decompose(_read_query(args.query), profile, labels)
    except ValueError as e:  # an unknown profile name
        raise _usage(str(e)) from None
    finally:
        if labels is not None:
            labels.close()
    if args.format == "json":
        from kbqa.frontends.desq import parse_desq
        from kbqa.frontends.desq_writer import to_desq_json

        out = result.to_dict()
        # Through the parsed text, so the JSON form keeps the AC sentences.
        out["desq"] = to_desq_json(parse_desq(result.desq_text)) if result.ok and result.desq_text else None
        print_json(out)
    elif result.ok:
        print(result.desq_text, end="")
        for note in result.notes:
            print(f"note: {note}", file=sys.stderr)
    if not result.ok:
        raise KBQAError(f"cannot decompose: {result.error}", stage="decompose")
    return EXIT_OK


def _run_coverage(args: argparse.Namespace) -> int:
    from kbqa.frontends.decompose_coverage import COVERAGE_DATASETS, coverage

    names = list(COVERAGE_DATASETS) if args.coverage == "all" else [args.coverage]
    if args.sample is not None and args.sample < 1:
        raise _usage(f"--sample must be at least 1 (got {args.sample})")
    labels = _labels(args.store)[0] if args.store is not None else None
    try:
        for name in names:
            try:
                report = coverage(name, args.profile, sample=args.sample, labels=labels)
            except KBQAError as e:
                if e.info.stage == "usage":  # an unknown dataset name is a usage error
                    e.exit_code = EXIT_USAGE
                raise
            if args.format == "json":
                print_json(report.to_dict())
                continue
            print(report.table())
            for f in report.failures[:args.failures]:
                print(f"  not covered: {f['id']} [{f['shape']}] {f['reason']}")
            print()
    finally:
        if labels is not None:
            labels.close()
    return EXIT_OK
