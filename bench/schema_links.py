"""How many of the predicates a gold query uses `explore`'s schema linking finds in the question, on the Spider4SPARQL
train KGs (never a dev KG), with and without the matcher for schema names written in short (*emp fname* / "first
name", *crs code* / "course code", *dob* / "date of birth"; explore/link/name_match.py), and without two modifiers
of one noun read apart ("first and last names": explore/link/words.py `coordinated_grams`), in the same run.

  python -m bench.schema_links --train-kgs ../shared/data/spider4sparql/train_kgs --work WORK

Figures over the non-trivial train questions: recall of the gold query's attribute predicates (its `:class#pred`
names, join keys `ref-*` left out) among `link_schema`'s predicate links, the share of questions with every one
linked, and predicate links per question (the price: more links, more candidates). The stores under --work are
those `kbqa train --ranker` builds (ingested on first use).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path
from unittest import mock

from kbqa.training.train_kgs import ensure_store, list_kgs, read_questions
from kbqa.translators.explore import ExploreTranslator
from kbqa.translators.explore.link import words

GOLD_PRED = re.compile(r":(\w+)\\?#([\w-]+)")


def gold_predicates(sparql: str) -> set[str]:
    return {f"{c}#{p}" for c, p in GOLD_PRED.findall(sparql) if not p.startswith("ref-")}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--train-kgs", type=Path, required=True, help="a train-KG folder")
    p.add_argument("--work", type=Path, default=Path(".kbqa") / "train-kgs", help="the train KGs' stores")
    p.add_argument("--kgs", type=int, default=None, help="the first N KGs only")
    args = p.parse_args()
    kgs = list_kgs(args.train_kgs)[:args.kgs]
    counts: Counter[str] = Counter()
    for kg, questions in read_questions(args.train_kgs, kgs).items():
        tr = ExploreTranslator(ensure_store(args.train_kgs, kg, args.work), fallback="never")
        try:
            for q in questions:
                gold = gold_predicates(q.sparql)
                counts["questions"] += 1
                counts["gold"] += len(gold)
                for mode in ("with", "without", "uncoordinated"):
                    if mode == "with":
                        links = words.link_schema(q.question, tr.schema, lang=tr.ctx.language)
                    elif mode == "uncoordinated":  # "first and last names" read as written only
                        with mock.patch.object(words, "coordinated_grams", lambda *_a: []):
                            links = words.link_schema(q.question, tr.schema, lang=tr.ctx.language)
                    else:  # the ablation: the short-name matcher answers "no match" everywhere
                        with mock.patch.object(words, "abbrev_score", lambda *_a: 0.0), \
                                mock.patch.object(words, "abbreviates", lambda *_a: False):
                            links = words.link_schema(q.question, tr.schema, lang=tr.ctx.language)
                    got = {lk.iri.rsplit("/", 1)[-1] for lk in links if lk.kind == "predicate"}
                    counts[f"{mode}_hit"] += len(gold & got)
                    counts[f"{mode}_all"] += gold <= got
                    counts[f"{mode}_links"] += len(got)
        finally:
            tr.close()
    n = max(counts["questions"], 1)
    summary = {"questions": counts["questions"], "kgs": len(kgs), "gold_predicates": counts["gold"]}
    for mode in ("without", "uncoordinated", "with"):
        name = {"without": "without_short_names", "uncoordinated": "without_coordinated_modifiers",
                "with": "with_both"}[mode]
        summary[name] = {
            "recall": round(counts[f"{mode}_hit"] / max(counts["gold"], 1), 4),
            "all_linked": round(counts[f"{mode}_all"] / n, 4),
            "links_per_question": round(counts[f"{mode}_links"] / n, 2)}
    json.dump(summary, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
