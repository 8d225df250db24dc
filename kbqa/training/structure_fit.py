"""Fit the `structure` translator's models on the Wikidata train sets and write them as one gzipped JSON file.

  python -m kbqa.training.structure_fit                                  the shipped model (every train set)
  python -m kbqa.training.structure_fit --exclude-sets qald7-train,qald9plus-train --out /tmp/m.json.gz
  python -m kbqa.training.structure_fit --kfold 1,2,4                    choose C by 3-fold on the train questions

What is fitted (all on train data; dev sets are never read; the parts in structure_parts_fit.py, the re-ranker in
structure_rerank_fit.py, put together here):
1. the skeleton chooser (kbqa/training/structure_skeleton_fit.py);
2. the bank: every train question with its entity names masked (gold entities' labels from the store's label
   memory), its skeleton and slot values: the nearest-question votes of the property scorer read it;
3. the property scorer: gradient-boosted trees (LightGBM, written as JSON: structure/trees.py) over (question,
   property, skeleton slot) candidates of PROPERTY_SAMPLE train questions, their features computed with the question
   itself left out of the bank (its neighbours exclude it, its own count is taken out of the slot prior and of the
   word-property associations), labelled by the gold property;
4. the skeleton re-ranker (`fit_reranker`): logistic regression over the chooser's top skeletons of train questions,
   stacked: each fold's questions (3 folds by question, a sample of each) are filled by a chooser, bank and property
   scorer fitted on the other folds (`--reranker-only` fits it alone; `--part-cache` keeps the fold choosers, the
   slow part, for the next run on the same questions; `--base M --reranker R` puts it into model M as it is).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path
from typing import Any

from grounding.embedder import get_embedder
from kbqa.training.structure_data import TRAIN_SETS, load_examples
from kbqa.training.structure_parts_fit import DEFAULT_STORE, bank_rows, fit_all_parts, mention_extras, write
from kbqa.training.structure_rerank_fit import fit_reranker
from kbqa.training.structure_skeleton_fit import kfold_accuracy
from kbqa.translators.structure.answer import MODEL_PATH


def fit_all(exclude_sets: set[str], store_dir: Path, c: float, exclude_ids: set[str] | None = None,
            exclude_questions: set[str] | None = None, log: Any = None,
            skeleton_model: dict[str, Any] | None = None, reranker: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every model of the structure translator, as the JSON-ready dict `StructureModel` reads. `reranker`: the
    skeleton re-ranker's weights (`fit_reranker`, fitted on data that holds none of the excluded sets), else it is
    fitted here on these examples."""
    t0 = time.perf_counter()
    embedder = get_embedder(None)
    examples = load_examples(exclude_sets, exclude_ids, exclude_questions)
    say = log or (lambda m: print(m, file=sys.stderr, flush=True))
    say(f"{len(examples)} train examples ({time.perf_counter() - t0:.0f} s)")
    if reranker is not None and not set(reranker.get("excluded_sets", [])) >= exclude_sets:
        raise ValueError(f"the re-ranker was fitted with {set(exclude_sets) - set(reranker['excluded_sets'])}")
    model = fit_all_parts(examples, store_dir, c, embedder, say, skeleton_model)
    model["skeleton_reranker"] = reranker or fit_reranker(examples, store_dir, c, say)
    return {**model, "sets": sorted(set(TRAIN_SETS) - exclude_sets), "excluded_sets": sorted(exclude_sets),
            "n_examples": len(examples), "c": c}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=MODEL_PATH)
    p.add_argument("--store", type=Path, default=DEFAULT_STORE, help="store whose label memory names the entities")
    p.add_argument("--exclude-sets", default="", help=f"comma-separated, of {', '.join(TRAIN_SETS)}")
    p.add_argument("--c", type=float, default=2.0, help="inverse regularisation of the skeleton chooser")
    p.add_argument("--reuse-skeleton", type=Path, default=None,
                   help="take the skeleton chooser from this model file (fitted with the same exclusions) instead of "
                        "fitting it again")
    p.add_argument("--reranker", type=Path, default=None,
                   help="take the skeleton re-ranker from this JSON file (`--reranker-only` writes one)")
    p.add_argument("--reranker-only", action="store_true", help="fit the skeleton re-ranker alone, write it to --out")
    p.add_argument("--base", type=Path, default=None,
                   help="with --reranker: take every other part (chooser, bank, scorers) from this model file (fitted "
                        "with the same exclusions) and only put the re-ranker in")
    p.add_argument("--part-cache", type=Path, default=None,
                   help="with --reranker-only: keep (or reuse) the fold choosers (each fitted on the other folds) here")
    p.add_argument("--rows-cache", type=Path, default=None,
                   help="with --reranker-only: keep (or reuse) the re-ranker's out-of-fold fills here")
    p.add_argument("--kfold", default="", help="comma-separated C values: print 3-fold skeleton accuracy, fit nothing")
    p.add_argument("--kfold-score-on", default="lcquad2-train", help="train sets whose held-out folds are scored")
    args = p.parse_args()
    exclude = {s for s in args.exclude_sets.split(",") if s}
    if args.kfold:
        examples = load_examples(exclude)
        extras = mention_extras(examples, args.store, bank_rows(examples, args.store)[1])
        for c in [float(x) for x in args.kfold.split(",")]:
            acc = kfold_accuracy(examples, c, extras=extras, score_on=set(args.kfold_score_on.split(",")))
            print(f"C={c}: 3-fold skeleton accuracy {acc:.4f} on {args.kfold_score_on}", flush=True)
        return 0
    if args.reranker_only:
        rr = fit_reranker(load_examples(exclude), args.store, args.c, part_cache=args.part_cache,
                          rows_cache=args.rows_cache)
        args.out.write_text(json.dumps(rr, indent=1) + "\n", encoding="utf-8")
        return 0
    reuse = None
    if args.reuse_skeleton or args.base:
        source = args.base or args.reuse_skeleton
        with gzip.open(source, "rt", encoding="utf-8") as f:
            old = json.load(f)
        if sorted(old.get("excluded_sets") or []) != sorted(exclude):
            p.error(f"{source} was fitted without {old.get('excluded_sets')}, not {sorted(exclude)}")
        reuse = old["skeleton"]
    reranker = json.loads(args.reranker.read_text(encoding="utf-8")) if args.reranker else None
    if args.base:
        if reranker is None:
            p.error("--base needs --reranker (the part it does not take from the base model)")
        if not set(reranker.get("excluded_sets", [])) >= exclude:
            p.error(f"the re-ranker was fitted with {exclude - set(reranker.get('excluded_sets', []))}")
        model = {**old, "skeleton_reranker": reranker, "parts_from": str(args.base),
                 "parts_command": old.get("command")}
    else:
        model = fit_all(exclude, args.store, args.c, skeleton_model=reuse, reranker=reranker)
    model["command"] = " ".join(["python -m kbqa.training.structure_fit", *sys.argv[1:]])
    if args.reuse_skeleton:
        model["skeleton_from"] = str(args.reuse_skeleton)
    write(model, args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size // 1024} KiB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
