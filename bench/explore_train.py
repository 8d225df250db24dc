"""`explore` on the Spider4SPARQL train KGs: candidates generated once per code version, then the fitted ranker
scored k-fold by KG, beside the hand-set linear weights and the oracle over the candidates.

  python -m bench.explore_train --train-kgs ../shared/data/spider4sparql/train_kgs --per-kg 20 --out /tmp/et/v2
  python -m bench.explore_train --candidates /tmp/et/v2/candidates.jsonl          (re-score a file, no search)

Figures, on questions whose gold answer is non-empty and non-trivial (not a lone 0 or unbound row):
accuracy (the top candidate's answers equal the gold), answer F1 of the top candidate, the oracle over the first
K candidates in execution order and over all, mean candidates per question, seconds per question (search), the
share of questions per gold structure with a right candidate, and, where a right candidate was there but the
k-fold pick is wrong, in which parts of the structure the pick differs from it (`ranker_misses`).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

from bench.explore import structure
from kbqa.training.ranker_data import collect, read_candidates
from kbqa.training.ranker_fit import DEFAULT_ROUNDS, DEFAULT_SEEDS, first_per_kg, kfold_by_kg, top1
from kbqa.training.ranker_prior import train_examples
from kbqa.training.train_kgs import list_kgs
from kbqa.translators.explore.rank.rankers import DEFAULT_WEIGHTS_PATH, Ranker


def per_structure(rows: list[dict], pairs: dict[str, dict]) -> dict[str, dict[str, float]]:
    tot: Counter[str] = Counter()
    ok: Counter[str] = Counter()
    for r in rows:
        s = structure(pairs.get(r["id"], {}).get("query", ""))
        tot[s] += 1
        ok[s] += any(c["f1"] >= 0.999 for c in r["candidates"])
    return {s: {"n": n, "oracle": round(ok[s] / n, 3)} for s, n in tot.most_common()}


# what a candidate's structure is, in parts: where the fitted pick and a right candidate differ (`ranker_misses`)
STRUCTURE_PARTS = {
    "aggregate": lambda f: tuple(sorted(k for k in ("s_ask", "s_count", "s_count_distinct", "s_avg", "s_min", "s_max",
                                                    "s_sum") if f.get(k))),
    "group": lambda f: f.get("s_group", 0.0),
    "order": lambda f: (f.get("s_order", 0.0), f.get("s_order_desc", 0.0), f.get("s_limit", 0.0)),
    "answer_columns": lambda f: f.get("s_n_answer", 0.0),
    "conditions": lambda f: f.get("s_n_conds", 0.0),
    "negation": lambda f: f.get("s_neg", 0.0),
    "operators": lambda f: tuple(sorted(k for k in f if k.startswith("s_op_") and f[k])),
    "focus_class": lambda f: f.get("s_focus_class", 0.0),
    "joins": lambda f: f.get("joins", 0.0),
    "distinct": lambda f: f.get("s_distinct", 0.0),
}


def ranker_misses(rows: list[dict], picks: list[int]) -> dict[str, object]:
    """Questions with a right candidate whose fitted pick is wrong, and in which parts of the structure the pick
    differs from the first right candidate (a question counts once per part; `same_structure`: in none of them, so
    the pick differs only in which class, predicate or value it uses)."""
    parts: Counter[str] = Counter()
    n = same = 0
    for r, pick in zip(rows, picks, strict=True):
        cands = r["candidates"]
        right = next((c for c in cands if c["f1"] >= 0.999), None)
        if right is None or pick < 0 or cands[pick]["f1"] >= 0.999:
            continue
        n += 1
        differ = [name for name, part in STRUCTURE_PARTS.items()
                  if part(cands[pick]["features"]) != part(right["features"])]
        parts.update(differ)
        same += not differ
    return {"n": n, "same_structure": same, "differs_in": dict(parts.most_common())}


def parse_params(items: list[str]) -> dict[str, str | int | float]:
    """`KEY=VALUE` pairs as LightGBM parameters, each value an int, else a float, else the text."""
    out: dict[str, str | int | float] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--param {item!r}: write KEY=VALUE, e.g. num_leaves=63")
        for cast in (int, float, str):
            try:
                out[key.strip()] = cast(value.strip())
                break
            except ValueError:
                continue
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--train-kgs", type=Path, default=None, help="a train-KG folder (generates candidates)")
    p.add_argument("--per-kg", type=int, default=20, help="questions per KG (default 20)")
    p.add_argument("--kgs", type=int, default=None, help="at most N KGs, a seeded sample (default: all)")
    p.add_argument("--candidates", type=Path, default=None, help="an existing candidates file (no search)")
    p.add_argument("--out", type=Path, default=None, help="folder for candidates.jsonl and summary.json")
    p.add_argument("--work", type=Path, default=Path(".kbqa") / "train-kgs", help="the train KGs' stores")
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS, help=f"boosting rounds (default {DEFAULT_ROUNDS})")
    p.add_argument("--prior", choices=("oof", "off", "both"), default="oof",
                   help="the structure prior as a tree feature: set out of fold by KG (default), left out, or both "
                        "k-folds in one run (`fitted_kfold_no_prior` beside `fitted_kfold`)")
    p.add_argument("--score-first", type=int, default=None, metavar="N",
                   help="fit on every question of the train folds' KGs, score only each held-out KG's first N "
                        "(compares fits on more questions a KG on the same scored questions)")
    p.add_argument("--kg-cap", type=int, default=None, metavar="N",
                   help="in each fit, a KG's questions beyond N weigh together as N (default: every question weighs 1)")
    p.add_argument("--seeds", type=int, default=DEFAULT_SEEDS, metavar="N",
                   help=f"boosters averaged in each fit, differing in LightGBM's seed (default {DEFAULT_SEEDS})")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="a LightGBM training parameter over the shipped ones (repeatable; e.g. num_leaves=63)")
    args = p.parse_args()
    try:
        params = parse_params(args.param)
    except ValueError as e:
        p.error(str(e))
    if args.candidates is None and args.train_kgs is None:
        p.error("give --train-kgs DIR (to generate candidates) or --candidates FILE")
    path = args.candidates
    t0 = time.perf_counter()
    if path is None:
        out = args.out or Path("bench/out/explore_train")
        kgs = list_kgs(args.train_kgs)
        if args.kgs:
            kgs = sorted(random.Random(0).sample(kgs, min(args.kgs, len(kgs))))
        path = collect(args.train_kgs, args.work, out / "candidates.jsonl", kgs=kgs, limit=args.per_kg)
    rows = read_candidates(path)
    gen_s = time.perf_counter() - t0
    pairs_file = (args.train_kgs / "train.json") if args.train_kgs else None
    if pairs_file is None or not pairs_file.is_file():
        pairs_file = (args.train_kgs.parent / "train.json") if args.train_kgs else None
    pairs = {q["id"]: q for q in json.loads(pairs_file.read_text(encoding="utf-8"))} if pairs_file and \
        pairs_file.is_file() else {}
    secs = sorted(r.get("seconds", 0.0) for r in rows) or [0.0]
    summary = {
        "candidates_file": str(path), "questions": len(rows), "kgs": len({r["kg"] for r in rows}), "params": params,
        "search_p50_s": round(statistics.median(secs), 3), "search_p99_s": round(secs[int(0.99 * (len(secs) - 1))], 3),
        "hand_linear": top1(Ranker.load(DEFAULT_WEIGHTS_PATH), rows),
        "fitted_kfold": kfold_by_kg(rows, folds=args.folds, rounds=args.rounds, score_first=args.score_first,
                                    prior_examples=None if args.prior == "off" else train_examples(),
                                    kg_cap=args.kg_cap, seeds=args.seeds, params=params),
        "per_structure": per_structure(rows, pairs) if pairs else {},
        "seconds": round(time.perf_counter() - t0, 1), "generate_seconds": round(gen_s, 1),
    }
    summary["fitted_kfold"].pop("per_fold", None)
    if args.prior == "both":
        summary["fitted_kfold_no_prior"] = kfold_by_kg(rows, folds=args.folds, rounds=args.rounds,
                                                       score_first=args.score_first, kg_cap=args.kg_cap,
                                                       seeds=args.seeds, params=params)
        for key in ("per_fold", "picks"):
            summary["fitted_kfold_no_prior"].pop(key)
    picked = summary["fitted_kfold"].pop("picks")
    kept = first_per_kg(rows, args.score_first)
    summary["ranker_misses"] = ranker_misses([rows[i] for i in kept], [picked[i] for i in kept])
    json.dump(summary, sys.stdout, indent=2)
    print()
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        # each scored question's k-fold pick (its index in the candidates file's list), to read the misses
        (args.out / "picks.json").write_text(json.dumps({rows[i]["id"]: picked[i] for i in kept}) + "\n",
                                             encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
