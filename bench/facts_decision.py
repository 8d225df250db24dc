"""explore's fact-lack decision on a Wikidata store: the hand rule against the fitted decision, same run, same code.

  python -m bench.facts_decision --store /tmp/struct/store-before --n 150 --n-sq 700 [--model M] [--out DIR]

Per question, explore (the default translator) translates twice in one process — once deciding with the hand rule
(fallback/structure.py without decision.json), once with the fitted decision (fallback/decision.json, fitted by
`python -m kbqa.training.facts_decision` on train questions) — so a difference is the decision's alone.
- LC-QuAD 2.0 dev and WikiWebQuestions dev (`--n` evenly spaced questions each): query level, no execution, as
  `bench.wikidata_structure` scores them (triple F1, exact, property and entity F1);
- SimpleQuestions valid (its first `--n-sq`): answer accuracy (QALD F1 = 1) on the store, which holds those facts:
  the decision must not take questions the store can answer.
The scored questions are left out of the store's case bank (as `kbqa eval` leaves them out). `--store`: a copy of
wikidata-mini with a case bank built without the measured sets (BENCHMARKS.md "structure" says how). `--model`: the
structure model explore's fallback uses (default: the shipped one).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench.outputs import write_run_folder
from bench.wikidata_structure import pick, score
from eval.loaders import load_benchmark

QUERY_SETS = ("lcquad2-dev", "wwq-dev")
VARIANTS = ("hand", "fitted")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", type=Path, required=True, help="a wikidata-mini copy whose bank leaves the sets out")
    p.add_argument("--n", type=int, default=150, help="LC-QuAD / WWQ dev questions, evenly spaced")
    p.add_argument("--n-sq", type=int, default=700, help="SimpleQuestions valid: its first N")
    p.add_argument("--model", type=Path, default=None, help="structure model for the fallback (default: shipped)")
    p.add_argument("--out", type=Path, default=None, help="folder for rows.jsonl and summary.json")
    args = p.parse_args(argv)
    import bench.explore as be
    from eval.answer_metrics import score_question
    from kb_dumps.stage_errors import KBQAError
    from kbqa.pipeline import Engine
    from kbqa.translators.explore import ExploreTranslator
    from kbqa.translators.explore.fallback.decision import FactsDecision
    from kbqa.translators.structure.translator import load_model

    fitted = FactsDecision.load()
    if fitted is None:
        raise SystemExit("error: no fitted decision (kbqa/translators/explore/fallback/decision.json): fit it first")
    plan = [(name, pick([r for r in load_benchmark(name, check_syntax=False) if r.sparql], args.n)) for name in QUERY_SETS]
    plan.append(("simplequestions-valid", [r for r in load_benchmark("simplequestions-valid", check_syntax=False)
                                           if r.usable][:args.n_sq]))
    rows: list[dict[str, Any]] = []
    with Engine(store=args.store) as engine:
        tr = ExploreTranslator(args.store, store=engine.store, memory=engine._memory)
        engine.translator = tr
        tr.exclude({r.id for _, rs in plan for r in rs}, {q for _, rs in plan for r in rs for q in r.questions.values()})
        if args.model:
            tr.structure_fallback.use_model(load_model(args.model))
        for name, records in plan:
            t0 = time.perf_counter()
            for rec in records:
                row: dict[str, Any] = {"set": name, "id": rec.id}
                for variant in VARIANTS:
                    tr.structure_fallback.decision = fitted if variant == "fitted" else None
                    s0 = time.perf_counter()
                    if name in QUERY_SETS:
                        try:
                            res = tr.translate(rec.question, qid=rec.id) if rec.usable else None
                        except KBQAError:
                            res = None
                        out = score(engine, res.text if res else None, rec.sparql)
                        kind = ((res.details.get("fallback") or {}).get("kind") if res else None)
                    else:
                        ans = engine.ask(rec.question, qid=rec.id)
                        pred = ans.answers.to_result_dict() if ans.answers is not None else None
                        f1 = score_question(be.gold_answers(rec, engine.store, "wikidata", True), pred).qald.f1
                        out = {"f1": f1, "correct": f1 == 1.0}
                        kind = ((getattr(ans, "translation", None) or {}).get("details") or {}).get("fallback", {}).get("kind")
                    out.pop("sparql", None)
                    row[variant] = {**out, "fallback": kind, "seconds": round(time.perf_counter() - s0, 3)}
                rows.append(row)
            print(f"{name}: {len(records)} questions x 2 in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
        tr.close()
    table: dict[str, Any] = {}
    print(f"{'set':<24}{'variant':<9}{'n':>6}{'score':>9}{'exact':>8}{'structure':>11}{'p50 s':>8}  (score: triple F1 / "
          "SimpleQuestions accuracy)")
    for name, _ in plan:
        rs = [r for r in rows if r["set"] == name]
        for variant in VARIANTS:
            vs = [r[variant] for r in rs]
            n = len(vs) or 1
            main_score = sum(v["correct"] if "correct" in v else v["f1"] for v in vs) / n
            s = {"n": len(vs), "score": round(main_score, 4),
                 "exact": round(sum(bool(v.get("exact")) for v in vs) / n, 4),
                 "structure_share": round(sum(v["fallback"] == "structure" for v in vs) / n, 4),
                 "p50_s": round(statistics.median([v["seconds"] for v in vs] or [0.0]), 3)}
            table.setdefault(name, {})[variant] = s
            print(f"{name:<24}{variant:<9}{s['n']:>6}{s['score']:>9}{s['exact']:>8}{s['structure_share']:>11}"
                  f"{s['p50_s']:>8}")
        differ = sum((r["hand"]["f1"] != r["fitted"]["f1"]) for r in rs)
        table[name]["differ"] = differ
        print(f"{name:<24}{'':<9}{differ:>6} questions score differently")
    if args.out:
        write_run_folder(args.out, rows, table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
