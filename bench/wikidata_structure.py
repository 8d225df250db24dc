"""The learned query structure (`structure` translator) on Wikidata benchmarks, at query level (no endpoint).

  python -m bench.wikidata_structure                                  all four sets, every question
  python -m bench.wikidata_structure --sets lcquad2-dev --n 200      200 evenly spaced questions
  python -m bench.wikidata_structure --before 100                    also `explore` (the default) on 100 per set

Sets: LC-QuAD 2.0 dev (1,067) and WikiWebQuestions dev (454) with the shipped model (fitted on the train sets only:
dev sets are never read by the fit); QALD-9-plus train (371) and QALD-7 train (100), each scored with a model fitted
without either QALD set (`--qald-model`, made by `python -m kbqa.training.structure_fit --exclude-sets
qald7-train,qald9plus-train`): no model or bank has seen a scored question — stricter than 5-fold, which would train
on four fifths of the set.

Per question: the translator's DeSQ compiled by `Engine.compile(..., execute=False)` (what `kbqa eval --backend
structure --no-execute` does) and compared with the gold query by eval/query_metrics.py: triple-pattern F1, exact
structural match, property F1, entity F1; skeleton accuracy = the chosen skeleton equals eval/skeleton.py's skeleton
of the gold query; an unparseable or missing prediction scores 0 everywhere. Seconds per question: translate + compile.
`--before N`: the default translator (`explore`) on the first N scored questions of each set, in the same run, over
`--before-store` — a copy of the store whose case bank was built without the four measured sets (`kbqa cases build
--limit 5000 --exclude-set lcquad2-dev --exclude-set wwq-dev --exclude-set qald7-train --exclude-set qald9plus-train`);
the scored questions are excluded by id and text as well (`Translator.exclude`, as `kbqa eval` does). `before` is
explore as it was, falling back to the nearest case only; `explore` (with `--before`) is today's default, whose
fallback on a Wikidata store that lacks the facts is the learned structure first (its model for a QALD set the
no-QALD one), on the same questions.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench.outputs import write_run_folder
from eval.loaders import load_benchmark
from eval.query_metrics import score_query
from eval.skeleton import SkeletonError, skeleton

ROOT = Path(__file__).resolve().parents[1]
SETS = ("lcquad2-dev", "wwq-dev", "qald9plus-train", "qald7-train")
QALD = {"qald9plus-train", "qald7-train"}


def pick(records: list[Any], n: int) -> list[Any]:
    return records if not n or n >= len(records) else [records[i * len(records) // n] for i in range(n)]


def gold_skeleton(sparql: str) -> str | None:
    try:
        return skeleton(sparql).text
    except SkeletonError:
        return None


def score(engine: Any, text: str | None, gold: str) -> dict[str, Any]:
    if not text:
        return {"f1": 0.0, "exact": False, "prop_f1": 0.0, "ent_f1": 0.0, "sparql": None}
    res = engine.compile(text, execute=False)
    sc = score_query(res.sparql, gold)
    return {"f1": sc.triples.f1, "exact": sc.exact_match, "prop_f1": sc.properties.f1, "ent_f1": sc.entities.f1,
            "sparql": res.sparql}


def run_structure(engine: Any, translator: Any, rec: Any) -> dict[str, Any]:
    from kb_dumps.stage_errors import KBQAError

    t0 = time.perf_counter()
    try:
        tr = translator.translate(rec.question, qid=rec.id)
        text, info = tr.text, tr.details["structure"]
    except KBQAError as e:
        text, info = None, {"error": str(e)}
    out = score(engine, text, rec.sparql)
    out["seconds"] = time.perf_counter() - t0
    out["skeleton_ok"] = info.get("skeleton") == gold_skeleton(rec.sparql)
    out["skeleton"] = info.get("skeleton")
    out["confidence"] = info.get("confidence")
    return out


def unusable(rec: Any) -> dict[str, Any]:
    """A record the loader cannot use (no question text, a gold query that does not parse): scored wrong."""
    return {"f1": 0.0, "exact": False, "prop_f1": 0.0, "ent_f1": 0.0, "sparql": None, "seconds": 0.0,
            "skeleton_ok": False, "skeleton": None, "confidence": None, "unusable": rec.reason}


def run_before(engine: Any, translator: Any, rec: Any) -> dict[str, Any]:
    from kb_dumps.stage_errors import KBQAError

    t0 = time.perf_counter()
    try:
        text = translator.translate(rec.question, qid=rec.id).text
    except KBQAError:
        text = None
    out = score(engine, text, rec.sparql)
    out["seconds"] = time.perf_counter() - t0
    out["skeleton_ok"] = bool(out["sparql"]) and gold_skeleton(out["sparql"]) == gold_skeleton(rec.sparql)
    return out


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows) or 1
    return {"n": len(rows), "triples_f1": round(sum(r["f1"] for r in rows) / n, 3),
            "exact": round(sum(bool(r["exact"]) for r in rows) / n, 3),
            "property_f1": round(sum(r["prop_f1"] for r in rows) / n, 3),
            "entity_f1": round(sum(r["ent_f1"] for r in rows) / n, 3),
            "skeleton_acc": round(sum(bool(r["skeleton_ok"]) for r in rows) / n, 3),
            "p50_s": round(statistics.median([r["seconds"] for r in rows if "unusable" not in r] or [0.0]), 4),
            "unusable_counted_wrong": sum("unusable" in r for r in rows)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sets", default=",".join(SETS), help=f"comma-separated, of {', '.join(SETS)}")
    p.add_argument("--n", type=int, default=0, help="questions per set, evenly spaced (0: all)")
    p.add_argument("--store", type=Path, default=ROOT / ".kbqa" / "stores" / "wikidata-mini")
    p.add_argument("--model", type=Path, default=None, help="structure model for the dev sets (default: shipped)")
    p.add_argument("--qald-model", type=Path, default=Path("/tmp/kbqa-bench-structure/model-no-qald.json.gz"),
                   help="structure model fitted without QALD-7 / QALD-9-plus (fitted here when missing)")
    p.add_argument("--before", type=int, default=0, help="also run the default translator on N questions per set")
    p.add_argument("--before-store", type=Path, default=None,
                   help="store for --before (default: --store): a copy whose case bank leaves the measured sets out")
    p.add_argument("--out", type=Path, default=None, help="folder for rows.jsonl and summary.json")
    args = p.parse_args()
    from kbqa.pipeline import Engine
    from kbqa.training.structure_fit import fit_all, write
    from kbqa.translators.structure.answer import MODEL_PATH
    from kbqa.translators.structure.translator import StructureTranslator, load_model

    sets = [s for s in args.sets.split(",") if s]
    if any(s in QALD for s in sets) and not args.qald_model.is_file():
        print(f"fitting the no-QALD model -> {args.qald_model}", file=sys.stderr, flush=True)
        write(fit_all({"qald7-train", "qald9plus-train"}, args.store, 2.0), args.qald_model)
    rows: dict[str, list[dict[str, Any]]] = {}
    before: dict[str, list[dict[str, Any]]] = {}
    after: dict[str, list[dict[str, Any]]] = {}
    with Engine(store=args.store) as engine:
        for name in sets:
            records = [r for r in load_benchmark(name, check_syntax=False) if r.sparql]
            scored = pick(records, args.n)
            model = load_model(args.qald_model if name in QALD else (args.model or MODEL_PATH))
            assert name not in (model.meta.get("sets") or []), f"{name} is in the model's training sets"
            tr = StructureTranslator(args.store, memory=engine._memory, model=model)
            t0 = time.perf_counter()
            rows[name] = [{"set": name, "id": r.id, "question": r.question,
                           **(run_structure(engine, tr, r) if r.usable else unusable(r))} for r in scored]
            print(f"{name}: {len(scored)} questions in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
            if args.before:
                with Engine(store=args.before_store or args.store) as other:
                    x = other.translator
                    x.exclude({r.id for r in scored}, {q for r in scored for q in r.questions.values()})
                    applies = x.structure_fallback.applies
                    x.structure_fallback.applies = False  # explore as it was: the case fallback only
                    before[name] = [run_before(other, x, r) if r.usable else unusable(r)
                                    for r in scored[:args.before]]
                    x.structure_fallback.applies = applies
                    x.structure_fallback.use_model(model)
                    after[name] = [run_before(other, x, r) if r.usable else unusable(r)
                                   for r in scored[:args.before]]
                print(f"{name}: before and explore, {len(before[name])} questions", file=sys.stderr, flush=True)
    table: dict[str, Any] = {}
    cols = ("n", "triples_f1", "exact", "property_f1", "entity_f1", "skeleton_acc", "p50_s")
    print("query level (no execution), `structure` translator" + (" vs the default translator" if before else ""))
    print(f"{'set':<17}{'system':<11}" + "".join(f"{c:>13}" for c in cols))
    for name, rs in rows.items():
        table[name] = {"structure": summarise(rs)}
        lines = [("structure", table[name]["structure"])]
        if name in before:
            table[name]["before"] = summarise(before[name])
            table[name]["explore"] = summarise(after[name])
            table[name]["structure_same_questions"] = summarise(rs[:args.before])
            lines += [("before", table[name]["before"]), ("explore", table[name]["explore"]),
                      ("struct@same", table[name]["structure_same_questions"])]
        for system, s in lines:
            print(f"{name:<17}{system:<11}" + "".join(f"{s[c]:>13}" for c in cols))
    if args.out:
        write_run_folder(args.out, (r for rs in rows.values() for r in rs), table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
