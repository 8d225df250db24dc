"""Predicates linked by a word of like meaning (explore/link/meaning.py) against the predicates the gold query uses,
per cosine threshold, on the Spider4SPARQL train KGs (never a dev KG): how `MIN_COSINE` was chosen.

  python -m bench.meaning_links --train-kgs ../shared/data/spider4sparql/train_kgs --work WORK [--every 2]

Each question is linked once with the threshold at the lowest one listed (and no cap on links a question); a link
counts at threshold t when its cosine is at least t. Figures per threshold: links, links to a predicate of the
question's gold query (`:class#pred` names), their share (precision), and questions that gain a gold predicate no
name link found. The stores under --work are those `kbqa train --ranker` builds (ingested on first use).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bench.schema_links import gold_predicates
from kbqa.training.train_kgs import ensure_store, list_kgs, read_questions
from kbqa.translators.explore import ExploreTranslator
from kbqa.translators.explore.link import meaning

THRESHOLDS = (0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--train-kgs", type=Path, required=True, help="a train-KG folder")
    p.add_argument("--work", type=Path, default=Path(".kbqa") / "train-kgs", help="the train KGs' stores")
    p.add_argument("--every", type=int, default=1, metavar="N", help="every Nth KG only (default: all)")
    args = p.parse_args()
    kgs = list_kgs(args.train_kgs)[::args.every]
    shipped = meaning.MIN_COSINE
    meaning.MIN_COSINE, meaning.MAX_MEANING_LINKS = min(THRESHOLDS), 1_000  # every link, filtered below
    links: list[tuple[float, bool]] = []  # (cosine, to a gold predicate) per link
    gains: list[list[float]] = []  # per question, the cosines of its links to gold predicates
    questions = 0
    for kg, qs in read_questions(args.train_kgs, kgs).items():
        tr = ExploreTranslator(ensure_store(args.train_kgs, kg, args.work), fallback="never")
        try:
            for q in qs:
                questions += 1
                gold = gold_predicates(q.sparql)
                mine = []
                for lk in tr.anchors(q.question).predicates:
                    if lk.meaning:
                        cos = tr.meaning.cosine(lk.text, lk.iri)
                        hit = lk.iri.rsplit("/", 1)[-1] in gold
                        links.append((cos, hit))
                        if hit:
                            mine.append(cos)
                gains.append(mine)
        finally:
            tr.close()
    table = {}
    for t in THRESHOLDS:
        kept = [hit for cos, hit in links if cos >= t]
        table[str(t)] = {"links": len(kept), "gold": sum(kept), "precision": round(sum(kept) / max(len(kept), 1), 3),
                         "questions_gaining_gold": sum(1 for g in gains if any(c >= t for c in g))}
    json.dump({"kgs": len(kgs), "questions": questions, "shipped_threshold": shipped, "by_threshold": table},
              sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
