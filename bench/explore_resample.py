"""Search some train questions again with this code and splice them into an earlier candidates file: how a change
of `explore`'s search is measured on the questions it can change, without searching all 5,352 again.

  python -m bench.explore_resample --train-kgs ../shared/data/spider4sparql/train_kgs --work W \\
      --ids S.json --out after.jsonl --base cand.jsonl --spliced KA.jsonl
  PYTHONPATH=/tmp/before python -m bench.explore_resample ... --out before.jsonl --spliced KB.jsonl  # a worktree

`--ids`: a JSON list of train question ids. The search is resumable (questions already in --out are skipped); with
--base, --spliced is --base with those questions' rows replaced, ready for `python -m bench.explore_train
--candidates`. Run it once from this tree and once from a `git worktree` of the commit before (PYTHONPATH), at the
same time, so the two files differ in the searched rows alone. Prints how many of them have a right candidate.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kbqa.training.ranker_data import collect, read_candidates, splice_candidates


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--train-kgs", type=Path, required=True, help="a train-KG folder")
    p.add_argument("--work", type=Path, default=Path(".kbqa") / "train-kgs", help="the train KGs' stores")
    p.add_argument("--ids", type=Path, required=True, help="a JSON list of the train question ids to search")
    p.add_argument("--out", type=Path, required=True, help="the searched questions' candidates (JSONL)")
    p.add_argument("--base", type=Path, default=None, help="an earlier candidates file to splice them into")
    p.add_argument("--spliced", type=Path, default=None, help="where the spliced file goes (with --base)")
    args = p.parse_args()
    if (args.base is None) != (args.spliced is None):
        p.error("--base and --spliced go together")
    try:
        ids = set(json.loads(args.ids.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError) as e:
        p.error(f"{args.ids}: not a JSON list of question ids ({e})")
    collect(args.train_kgs, args.work, args.out, ids=ids)
    rows = [r for r in read_candidates(args.out) if r["id"] in ids]
    right = sum(any(c["f1"] >= 0.999 for c in r["candidates"]) for r in rows)
    summary = {"searched": len(rows), "asked": len(ids), "with_a_right_candidate": right,
               "mean_candidates": round(sum(len(r["candidates"]) for r in rows) / max(len(rows), 1), 1)}
    if args.base is not None:
        summary["replaced_in_base"] = splice_candidates(args.base, args.out, args.spliced)
    json.dump(summary, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
