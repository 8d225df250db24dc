"""Held-out accuracy of `explore`'s fitted trees on one benchmark's *train* questions: fit on every train-KG question
plus one fold of the set's questions, score the other folds (k folds by position), for one candidates generation.

  python -m bench.explore_set_heldout --kg-candidates cand0.jsonl --kg-candidates cand1.jsonl \\
      --set-candidates cand_sq.jsonl [--folds 2]

Used to check that a change which helps the train KGs does not cost a question style they hardly hold
(SimpleQuestions' one-hop questions), on train data rather than on the dev sets.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from kbqa.training.ranker_data import read_candidates
from kbqa.training.ranker_fit import fit, picks, summarise
from kbqa.training.ranker_prior import train_examples


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kg-candidates", type=Path, action="append", required=True, help="train-KG candidates (repeatable)")
    p.add_argument("--set-candidates", type=Path, required=True, help="the benchmark's train candidates")
    p.add_argument("--folds", type=int, default=2)
    args = p.parse_args()
    kg_rows = [r for f in args.kg_candidates for r in read_candidates(f)]
    rows = read_candidates(args.set_candidates)
    examples = train_examples()
    per_fold = []
    for k in range(args.folds):
        test = [r for i, r in enumerate(rows) if i % args.folds == k]
        train = kg_rows + [r for i, r in enumerate(rows) if i % args.folds != k]
        ranker = fit(train, prior_examples=examples, meta={"fold": k})
        per_fold.append(summarise(test, picks(ranker, test)))
    n = sum(s["n"] for s in per_fold) or 1
    print(json.dumps({"set_candidates": str(args.set_candidates), "folds": args.folds,
                      "accuracy": round(sum(s["accuracy"] * s["n"] for s in per_fold) / n, 4), "per_fold": per_fold},
                     indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
