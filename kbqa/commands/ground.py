"""`kbqa ground`: ranked KB ids for a label (and description), with scores and the signals behind them."""

from __future__ import annotations

import argparse

from kb_dumps.stage_errors import EXIT_NO_ANSWER, EXIT_OK, KBQAError
from kbqa.commands.common import (
    add_endpoint_flags,
    add_format_flag,
    add_store_flag,
    finite_float,
    integer,
    print_json,
    resolve_store,
)

EXAMPLE = """examples:
  kbqa ground "place of birth" --kind property
  kbqa ground "Paris" --description "city in Texas" --k 5 --format json
  kbqa ground "capital" --kind property --subject wd:Q142      prefer what the KB confirms
  kbqa ground "Einstien" --guess wd:Q42                        check a guessed URI (URI correction)"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "ground", help="ground a label to KB ids",
        description="Hybrid lexical + vector grounding over the store's label memory, with a popularity prior, "
                    "an optional KB-context re-rank, and a threshold below which nothing is returned.",
        epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("label", help="the label to ground, as a user or a model would write it")
    p.add_argument("--description", default=None, help="a short description that disambiguates the label")
    p.add_argument("--kind", choices=["entity", "property", "class"], default=None, help="only ids of this kind")
    p.add_argument("--k", type=integer(1, 1000, "a number of candidates"), default=10,
                   help="number of candidates (default 10)")
    p.add_argument("--threshold", type=finite_float, default=None,
                   help="score below which there is no grounding")
    p.add_argument("--subject", default=None, help="context: the known subject of the fragment (IRI or wd:Q…)")
    p.add_argument("--object", default=None, help="context: the known object of the fragment")
    p.add_argument("--property", default=None, help="context: the known property of the fragment")
    p.add_argument("--role", choices=["subject", "object"], default=None,
                   help="context: where the placeholder sits when it is an entity")
    p.add_argument("--guess", default=None, help="a guessed URI to keep or correct")
    add_store_flag(p)
    add_endpoint_flags(p)
    add_format_flag(p)
    return p


def run(args: argparse.Namespace) -> int:
    from grounding.build import read_meta
    from grounding.ground import Grounder
    from kbqa.settings import get_settings

    settings = get_settings().grounding
    store = resolve_store(args.store)
    if args.k < 1:
        raise KBQAError(f"--k must be at least 1 (got {args.k})", stage="usage")
    threshold = args.threshold if args.threshold is not None else settings.grounding_threshold
    kb = None  # the KB-context re-rank queries --endpoint when given (a remote store's own endpoint otherwise)
    if args.sparql_endpoint:
        from kb_dumps.store import open_store

        kb = open_store(store, endpoint=args.sparql_endpoint, dialect=args.endpoint_dialect)
    # The index decides the embedder; an explicitly set KBQA_EMBEDDING_MODEL that differs is refused.
    explicit = settings.embedding_model if "embedding_model" in settings.model_fields_set else None
    if read_meta(store) is None:  # build_missing builds with the setting
        explicit = settings.embedding_model
    grounder = Grounder(store, threshold=threshold, model=explicit, build_missing=True, store=kb)
    context = {k: getattr(args, k) for k in ("subject", "object", "property", "role") if getattr(args, k)}
    try:
        if args.guess:
            corr = grounder.correct(args.guess, args.label, args.description, args.kind, context or None)
            if args.format == "json":
                print_json(corr.to_dict())
            else:
                print(f"{corr.action}: {corr.uri and grounder.profile.compact(corr.uri)}  ({corr.reason})")
            return EXIT_OK if corr.uri else EXIT_NO_ANSWER
        res = grounder.search(args.label, args.description, args.kind, args.k, context or None)
    finally:
        grounder.close()
    if args.format == "json":
        print_json(res.to_dict())
    else:
        for i, c in enumerate(res.candidates, 1):
            sig = " ".join(f"{k}={v:.2f}" for k, v in c.signals.items())
            desc = f" — {c.description}" if c.description else ""
            print(f"{i:>2}. {c.score:.3f}  {grounder.profile.compact(c.id)}  {c.label}{desc}  [{c.kind}; {sig}]")
        if not res.candidates:
            print(res.reason)
    return EXIT_OK if res.candidates else EXIT_NO_ANSWER
