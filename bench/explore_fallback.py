"""`explore` where the store lacks the facts: its case fallback against `cases`, at query level (no execution).

  python -m bench.explore_fallback                          the three sets, 300 questions each, 5-fold banks
  python -m bench.explore_fallback --sets lcquad2-dev --n 100 --work /tmp/fb --out bench/out/explore_fallback

LC-QuAD 2.0 dev, WikiWebQuestions dev and QALD-9-plus train on wikidata-mini, which holds the labels but not the
facts of most of their queries. Each set is split in 5 folds (question i in fold i mod 5); a question is scored
with a case bank built from the store's default sets (`casebank_build.DEFAULT_SETS`, at most --limit-per-set
questions each, as `make demo` builds it) with its own fold left out by id and by question text, so the other
folds of the same set are in the bank and the scored fold never is. The scored questions are a fixed subset:
--n questions evenly spaced through the set (all with --n 0).

Per question, in the same run and over the same bank: `cases`; `explore`'s search alone (its best candidate);
the fallback alone (the nearest case, every slot re-grounded); and `explore` as shipped (mode "auto": the search,
or the fallback when `ExploreTranslator.fallback_reason` gives a reason — no candidate, a bare class list, a
score below `explore.context.WEAK_SCORE`, or nearest cases whose facts the store lacks). Each output is
compiled with `Engine.compile(..., execute=False)` and compared with the gold query (eval/query_metrics.py):
exact structural match and triple-pattern F1. `--thresholds` prints what other WEAK_SCORE values would give.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from bench.outputs import write_run_folder
from eval.loaders import load_benchmark
from eval.query_metrics import score_query

ROOT = Path(__file__).resolve().parents[1]
SETS = ("lcquad2-dev", "wwq-dev", "qald9plus-train")
FOLDS = 5
SYSTEMS = ("cases", "search", "fallback", "explore")


def cached_decomposer(store_dir: Path, cache: dict[str, Any]) -> Any:
    """decompose() of gold queries, remembered across the fold banks (the slow part of a bank build)."""
    from kb_dumps.label_memory import LabelMemory
    from kb_dumps.layout import StoreLayout
    from kb_dumps.profiles import get_profile
    from kbqa.frontends.decompose import decompose

    layout = StoreLayout.of(store_dir)
    profile, memory = get_profile(layout.profile_name), LabelMemory(layout.labels, readonly=True)

    def run(sparql: str) -> str:
        if sparql not in cache:
            res = decompose(sparql, profile, memory)
            cache[sparql] = res.desq_text if res.ok and res.desq_text else {"error": res.error or "no text"}
        out = cache[sparql]
        if isinstance(out, dict):
            raise ValueError(out["error"])
        return out

    return run


def fold_bank(store_dir: Path, work: Path, name: str, k: int, held_out: list[Any], limit: int, decomposer: Any,
              model: str | None) -> Any:
    from kbqa.translators.casebank import CaseBank
    from kbqa.translators.casebank_build import DEFAULT_SETS, build_case_bank

    folder = work / f"bank-{name}-{k}"
    if not CaseBank.exists(folder):
        sets = list(DEFAULT_SETS["wikidata"]) + ([name] if name not in DEFAULT_SETS["wikidata"] else [])
        build_case_bank(store_dir, sets, exclude_ids=[f"{name}:{r.id}" for r in held_out],
                        exclude_questions=[q for r in held_out for q in r.questions.values()], limit_per_set=limit,
                        folder=folder, progress=False, decomposer=decomposer, model=model)
    return CaseBank.load(folder)


def score(engine: Any, text: str | None, gold: str) -> dict[str, Any]:
    if not text:
        return {"f1": 0.0, "exact": False, "sparql": None}
    res = engine.compile(text, execute=False)
    sc = score_query(res.sparql, gold)
    return {"f1": sc.triples.f1, "exact": sc.exact_match, "sparql": res.sparql}


def run_question(x: Any, engine: Any, rec: Any) -> dict[str, Any]:
    """The four systems on one question; the search runs once and feeds both `search` and `explore`."""
    from kb_dumps.stage_errors import KBQAError
    from kbqa.translators.explore.lower.text import write

    t0 = time.perf_counter()
    anchors, ranked, info = x.search(rec.question)
    search_text = write(ranked[0], x.schema, desq=True) if ranked else None
    t_search = time.perf_counter() - t0
    fb = x.case_fallback.translate(rec.question, "bench", info, qid=rec.id)
    t_fb = time.perf_counter() - t0 - t_search
    try:
        cases_text = x.case_fallback.cases().translate(rec.question, qid=rec.id).text
    except KBQAError:
        cases_text = None
    out = {"id": rec.id, "question": rec.question, "top": ranked[0].score if ranked else None,
           "rule": x.fallback_reason(rec.question, anchors, ranked), "features": x.ranker.features(ranked[0]) if ranked else None,
           "family": ranked[0].family if ranked else None, "seconds_search": t_search, "seconds_fallback": t_fb,
           "fallback_slots": [s for s in (fb.details["fallback"]["slots"] if fb else []) if s["how"] != "kept"]}
    for system, text in (("cases", cases_text), ("search", search_text), ("fallback", fb.text if fb else None)):
        out[system] = score(engine, text, rec.sparql)
    out["fallback_text"] = fb is not None
    out["explore"] = out["fallback"] if out["rule"] and fb else out["search"]
    return out


def bench_set(name: str, args: argparse.Namespace, decomposer: Any, model: str | None) -> list[dict[str, Any]]:
    from kbqa.pipeline import Engine
    from kbqa.translators.explore import ExploreTranslator

    records = [r for r in load_benchmark(name, check_syntax=False) if r.usable and r.sparql]
    fold_of = {r.id: i % FOLDS for i, r in enumerate(records)}
    scored = records if not args.n or args.n >= len(records) else \
        [records[i * len(records) // args.n] for i in range(args.n)]
    rows: list[dict[str, Any]] = []
    with Engine(store=args.store) as engine:
        for k in range(FOLDS):
            test = [r for r in scored if fold_of[r.id] == k]
            held_out = [r for r in records if fold_of[r.id] == k]
            bank = fold_bank(args.store, args.work, name, k, held_out, args.limit_per_set, decomposer, model)
            assert not any(c.dataset == name and fold_of.get(c.qid) == k for c in bank.cases), "scored fold in bank"
            x = ExploreTranslator(args.store, store=engine.store, memory=engine._memory, bank=bank)
            x.exclude({r.id for r in test}, {q for r in test for q in r.questions.values()})  # as `kbqa eval` does
            for rec in test:
                rows.append({"set": name, "fold": k, **run_question(x, engine, rec)})
            x.close()
            print(f"  {name} fold {k}: {len(test)} questions", file=sys.stderr, flush=True)
    return rows


def summarise(rows: list[dict[str, Any]], system: str) -> dict[str, Any]:
    n = len(rows) or 1
    return {"n": len(rows), "triples_f1": round(sum(r[system]["f1"] for r in rows) / n, 3),
            "exact": round(sum(bool(r[system]["exact"]) for r in rows) / n, 3)}


def with_threshold(rows: list[dict[str, Any]], threshold: float | None) -> dict[str, Any]:
    """What `explore` would score with WEAK_SCORE = threshold (the fallback below it; None: only when empty)."""
    picked = [{"pick": r["fallback"] if r["fallback_text"] and (r["rule"] or threshold is not None and
                                                                r["top"] < threshold) else r["search"]} for r in rows]
    return summarise(picked, "pick")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sets", default=",".join(SETS), help=f"comma-separated, of {', '.join(SETS)}")
    p.add_argument("--n", type=int, default=300, help="questions scored per set, evenly spaced (0: all; default 300)")
    p.add_argument("--store", type=Path, default=ROOT / ".kbqa" / "stores" / "wikidata-mini")
    p.add_argument("--limit-per-set", type=int, default=5000, help="bank questions per set (default 5000, as make demo)")
    p.add_argument("--work", type=Path, default=Path("/tmp/kbqa-bench-explore-fallback"),
                   help="scratch folder for the fold banks and the decompose cache (kept, reused)")
    p.add_argument("--out", type=Path, default=None, help="folder for rows.jsonl and summary.json")
    p.add_argument("--thresholds", default="", help="comma-separated WEAK_SCORE values to report as well")
    args = p.parse_args()
    from grounding.build import read_meta

    args.work.mkdir(parents=True, exist_ok=True)
    cache_path = args.work / "decompose.json"
    cache = json.loads(cache_path.read_text(encoding="utf-8")) if cache_path.is_file() else {}
    decomposer = cached_decomposer(args.store, cache)
    model = (read_meta(args.store) or {}).get("embedder")
    rows: dict[str, list[dict[str, Any]]] = {}
    for name in [s for s in args.sets.split(",") if s]:
        t0 = time.perf_counter()
        rows[name] = bench_set(name, args, decomposer, model)
        cache_path.write_text(json.dumps(cache), encoding="utf-8")
        print(f"{name}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    table: dict[str, Any] = {}
    thresholds = [float(t) for t in args.thresholds.split(",") if t.strip()]
    print("query level, 5-fold case banks (no execution): triple-pattern F1 / exact structural match")
    print(f"{'set':<17}{'n':>5}" + "".join(f"{s + ' F1':>14}{'exact':>7}" for s in SYSTEMS))
    for name, rs in rows.items():
        table[name] = {s: summarise(rs, s) for s in SYSTEMS}
        table[name]["no_candidate"] = sum(r["top"] is None for r in rs)
        table[name]["fallback_used"] = sum(bool(r["rule"]) for r in rs)
        table[name]["thresholds"] = {str(t): with_threshold(rs, t) for t in thresholds}
        print(f"{name:<17}{len(rs):>5}" + "".join(f"{table[name][s]['triples_f1']:>14.3f}{table[name][s]['exact']:>7.3f}"
                                             for s in SYSTEMS))
    allrows = [r for rs in rows.values() for r in rs]
    table["all"] = {s: summarise(allrows, s) for s in SYSTEMS}
    print(f"{'all':<17}{len(allrows):>5}" + "".join(f"{table['all'][s]['triples_f1']:>14.3f}"
                                                    f"{table['all'][s]['exact']:>7.3f}" for s in SYSTEMS))
    for name, rs in rows.items():
        print(f"{name}: search found no candidate for {table[name]['no_candidate']} of {len(rs)}, fallback used for "
              f"{table[name]['fallback_used']}; " +
              "; ".join(f"WEAK_SCORE {t}: F1 {v['triples_f1']:.3f} exact {v['exact']:.3f}"
                        for t, v in table[name]["thresholds"].items()))
    if args.out:
        write_run_folder(args.out, allrows, table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
