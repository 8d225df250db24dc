"""`kbqa cases`: build the store's case bank from training questions, search it, or describe it."""

from __future__ import annotations

import argparse
from pathlib import Path

from kb_dumps.stage_errors import EXIT_NO_ANSWER, EXIT_OK, KBQAError
from kbqa.commands.common import (
    add_format_flag,
    add_store_flag,
    integer,
    print_json,
    resolve_store,
    subparser,
)

EXAMPLE = """kbqa cases build                                  default training sets of the store's KB
  kbqa cases build --sets simplequestions-train,wwq-train --exclude-set wwq-train
  kbqa cases build --exclude-set lcquad2-dev          (leave out the set you will score, or let `kbqa eval` exclude it)
  kbqa cases search "where was X born" --k 5
  kbqa cases info"""


def _lines(path: Path | None) -> list[str]:
    if path is None:
        return []
    try:
        return [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    except OSError as e:
        raise KBQAError(f"cannot read {path}: {e}", stage="usage", file=str(path)) from None


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparser(subparsers, "cases", "build, search or describe the case bank (the cases translator's memory, "
                  "the model translator's few-shot examples)", EXAMPLE)
    sub = p.add_subparsers(dest="cases_verb", metavar="ACTION")
    b = sub.add_parser("build", help="build <store>/current/cases from training questions with gold SPARQL")
    add_store_flag(b)
    b.add_argument("--sets", default=None,
                   help="comma-separated benchmark names (default: the store KB's training sets: Wikidata's, or "
                        "spider4sparql-train for any other KG; `kbqa eval --list`)")
    b.add_argument("--exclude-set", action="append", default=[], metavar="NAME",
                   help="leave a set out (repeatable): the set being evaluated")
    b.add_argument("--exclude-ids", type=Path, default=None, metavar="FILE",
                   help="file of question ids to leave out, one per line (`dataset:id` or `id`)")
    b.add_argument("--exclude-questions", type=Path, default=None, metavar="FILE",
                   help="file of question texts to leave out, one per line")
    b.add_argument("--limit", type=integer(1, None, "a number of questions"), default=None,
                   help="at most N questions per set")
    b.add_argument("--languages", default="en", help="question languages to keep (default: en; e.g. en,ru)")
    b.add_argument("--embedder", default=None, metavar="NAME",
                   help="embedder of the case vectors (default: the one of the store's grounding index, else "
                        "setting KBQA_EMBEDDING_MODEL; see `kbqa index --help`)")
    b.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_format_flag(b)
    s = sub.add_parser("search", help="the nearest cases to a question")
    s.add_argument("question")
    s.add_argument("--k", type=integer(1, 1000, "a number of cases"), default=5,
                   help="number of cases (default 5)")
    add_store_flag(s)
    add_format_flag(s)
    i = sub.add_parser("info", help="what the case bank holds")
    add_store_flag(i)
    add_format_flag(i)
    return p


def run(args: argparse.Namespace) -> int:
    from kbqa.translators.casebank import CaseBank, bank_dir

    if not getattr(args, "cases_verb", None):
        raise KBQAError("give an action: build, search or info (see `kbqa cases --help`)", stage="usage")
    store = resolve_store(args.store)
    if args.cases_verb == "build":
        from grounding.build import read_meta
        from kbqa.settings import get_settings
        from kbqa.translators.casebank_build import build_case_bank

        sets = [x.strip() for x in args.sets.split(",") if x.strip()] if args.sets else None
        # the same embedder as grounding: one model loaded per process, and no torch when that one has none
        model = args.embedder or (read_meta(store) or {}).get("embedder") or get_settings().grounding.embedding_model
        stats = build_case_bank(store, sets, model=model, exclude_sets=args.exclude_set, exclude_ids=_lines(args.exclude_ids),
                                exclude_questions=_lines(args.exclude_questions), limit_per_set=args.limit,
                                progress=False if args.no_progress else None,
                                languages=tuple(x.strip() for x in args.languages.split(",") if x.strip()))
        if args.format == "json":
            print_json(stats.to_dict())
        else:
            skipped = ", ".join(f"{n} {why}" for why, n in sorted(stats.skipped.items(), key=lambda kv: -kv[1]))
            print(f"case bank {stats.folder}: {stats.cases} cases from {', '.join(stats.sets) or 'no set'} "
                  f"in {stats.seconds:.1f} s; {stats.excluded} excluded; entity slots named in the question: "
                  f"{stats.slots_named}/{stats.slots}" + (f"; skipped: {skipped}" if skipped else ""))
        return EXIT_OK if stats.cases else EXIT_NO_ANSWER
    bank = CaseBank.load(bank_dir(store))
    if args.cases_verb == "info":
        info = {"folder": str(bank.folder), "cases": len(bank), "datasets": bank.datasets(), **bank.meta}
        if args.format == "json":
            print_json(info)
        else:
            for k, v in info.items():
                print(f"{k}: {v}")
        return EXIT_OK
    hits = bank.search(args.question, args.k)
    if args.format == "json":
        print_json([{"id": h.case.id, "similarity": round(h.similarity, 4), "question": h.case.question,
                     "masked": h.case.masked, "desq": h.case.desq} for h in hits])
    else:
        for h in hits:
            print(f"{h.similarity:.3f}  {h.case.id}  {h.case.question}")
    return EXIT_OK if hits else EXIT_NO_ANSWER
