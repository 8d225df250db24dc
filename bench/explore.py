"""The `explore` translator against `cases`: accuracy (answers equal the gold), answer F1, seconds per question,
failed stage, and the oracle over each question's candidates — for each ranker named by --rankers.

  python -m bench.explore                                all three sets (SimpleQuestions valid, BESTIARY, Spider4SPARQL)
  python -m bench.explore --sets spider --out bench/out/explore
  python -m bench.explore --sets sq --n 500 --rankers trees

Rankers: `hand` is the hand-set linear weights (explore/rank/weights.json), `trees` the shipped fitted trees
(explore/rank/ranker.json, fitted on the Spider4SPARQL train KGs and SimpleQuestions train — never on a set scored
here), or a path to a ranker file. Answers are compared QALD-style (eval/answer_metrics.py); "accuracy" is the
share of questions whose answer F1 is 1. SimpleQuestions-Wikidata valid runs on wikidata-mini with the gold query
run on the same store (a SimpleQuestions file names one answer of many); BESTIARY and Spider4SPARQL use the
answers in their files. `cases` needs solved questions over the same KG: on SimpleQuestions its bank is built from
the training sets with every scored question excluded by set and by text (as bench/translators.py does); on
BESTIARY it runs 5-fold (each fold against a bank of the other four); on Spider4SPARQL there is no bank of solved
dev questions, so only `explore` runs. The oracle (`--oracle`, on by default for BESTIARY and Spider) runs the
search once more per question and labels every checked candidate by its answers: the share of questions with a
right candidate among the first 50 the search checked (the hand weights' order), among the shipped trees' first
50 (`ranked_oracle@50`: what the ranker keeps within reach) and among all, and the mean number of candidates.
Beside accuracy,
`gold_tied` counts the questions whose gold query ends `ORDER BY … LIMIT 1` with its first place shared (the file
keeps one of the tied rows, whichever its engine put first) and `perfect_ties_accepted` is accuracy when any tied
row counts as the gold (eval/ties.py); accuracy itself is unchanged.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.outputs import write_run_folder
from eval.answer_metrics import score_question
from eval.loaders import SPIDER4SPARQL_DBS, load_benchmark
from eval.loaders_sparql import prepare_gold_sparql
from eval.ties import tied_on_store
from kb_dumps.json_types import JsonObject
from kb_dumps.layout import StoreLayout

if TYPE_CHECKING:
    from kb_dumps.store_types import Store
    from kbqa.result import Result

ROOT = Path(__file__).resolve().parents[1]
SPIDER_KGS = ROOT / "eval" / "benchmarks" / "spider4sparql" / "kgs"
logging.getLogger("rdflib").setLevel(logging.ERROR)  # the Spider gold queries' `\#` IRIs make rdflib chatty


def ensure_store(path: Path, *, sample: str | None = None, dump: Path | None = None) -> Path:
    if StoreLayout.of(path).exists():
        return path
    from kb_dumps.ingest import ingest

    if sample:
        from kb_dumps.samples import get_sample

        s = get_sample(sample)
        ingest(s.paths(), path, profile=s.profile, progress=False)
    else:
        ingest([dump], path, profile="generic", progress=False)
    return path


def structure(sparql: str) -> str:
    """The kind of a gold query, for the per-structure table (first match wins)."""
    q = " ".join(sparql.lower().split())
    where = q.split("where", 1)[-1]
    if re.search(r"not exists|minus", q):
        return "negation"
    if "{select" in where.replace(" ", "") or "{ select" in where:
        return "nested"
    if "group by" in q and "order by" in q and "limit" in q:
        return "group-by superlative"
    if "group by" in q or "having" in q:
        return "group-by"
    if re.search(r"\b(count|avg|min|max|sum)\s*\(", q):
        return "aggregate"
    if "order by" in q and "limit" in q:
        return "superlative"
    if re.search(r"filter\s*\(\s*\?\w+\s*[<>]", q):
        return "comparison"
    if "filter" in q:
        return "value"
    return "attribute"


def gold_answers(rec: Any, store: Any, kb: str, run_gold: bool) -> Any:
    if run_gold and rec.sparql:
        gold = prepare_gold_sparql(rec.sparql, kb=kb, check_syntax=False).sparql or rec.sparql
        try:
            return store.query(gold).to_dict()
        except Exception:  # noqa: BLE001 - the file's answers when the store cannot run the gold query
            pass
    return rec.gold_result()


def ask_each(records: list, store_dir: Path, translator: Any) -> Iterator[tuple[Any, Result, float, Store]]:
    """Each record asked through one Engine on `store_dir` with `translator`: (record, result, seconds, store).
    One warm-up question first (worker start, embedder load), not counted per question."""
    from kbqa.pipeline import Engine

    with Engine(store=store_dir) as engine:
        engine.translator = translator
        if records:
            engine.ask(records[0].question)
        for rec in records:
            t0 = time.perf_counter()
            res = engine.ask(rec.question, qid=rec.id)
            yield rec, res, time.perf_counter() - t0, engine.store


def predicted(res: Result) -> JsonObject | None:
    """The answers of one result as the result dict the answer metrics read."""
    return res.answers.to_result_dict() if res.answers is not None else None


def f1_ties_accepted(rec: Any, gold: JsonObject | None, answers: JsonObject | None, f1: float, store: Store,
                     kb: str) -> tuple[float, int]:
    """The answers' best F1 against the gold (`f1`) and against each other row a gold `ORDER BY … LIMIT 1` query
    could have kept where its first place is shared (eval/ties.py, run on the same store), and how many rows tie
    (0 when none or the store cannot run it)."""
    query = (prepare_gold_sparql(rec.sparql, kb=kb, check_syntax=False).sparql or rec.sparql) if rec.sparql else None
    tied = tied_on_store(query, gold, store)
    return max([f1] + [score_question(t, answers, kb=kb).qald.f1 for t in tied]), len(tied)


def run_set(name: str, records: list, store_dir: Path, translator: Any, *, run_gold: bool, kb: str) -> list[dict]:
    """Each question's answer F1 against the gold, and (`f1_tied`) its best F1 against any row tied with the gold's
    first place when the gold query ends `ORDER BY … LIMIT 1` (a secondary figure: the primary one is unchanged)."""
    rows = []
    for rec, res, seconds, store in ask_each(records, store_dir, translator):
        gold = gold_answers(rec, store, kb, run_gold)
        answers = predicted(res)
        ans = score_question(gold, answers, kb=kb)
        f1_tied, n_tied = f1_ties_accepted(rec, gold, answers, ans.qald.f1, store, kb)
        rows.append({"set": name, "id": rec.id, "question": rec.question, "f1": ans.qald.f1,
                     "f1_tied": f1_tied, "tied": n_tied,
                     "stage": None if res.ok else str(res.failed_stage), "seconds": seconds,
                     "structure": structure(rec.sparql or "")})
    return rows


def summary(rows: list[dict]) -> dict[str, Any]:
    n = len(rows) or 1
    secs = sorted(r["seconds"] for r in rows) or [0.0]
    return {"n": len(rows), "answer_f1": round(sum(r["f1"] for r in rows) / n, 3),
            "perfect": round(sum(r["f1"] >= 0.999 for r in rows) / n, 3),
            # a gold LIMIT 1 row chosen among tied ones: how many, and accuracy when any tied row counts
            "gold_tied": sum(1 for r in rows if r.get("tied")),
            "perfect_ties_accepted": round(sum(r.get("f1_tied", r["f1"]) >= 0.999 for r in rows) / n, 3),
            "p50_s": round(statistics.median(secs), 3), "p99_s": round(secs[min(len(secs) - 1, int(0.99 * len(secs)))], 3),
            "failed": dict(Counter(r["stage"] for r in rows if r["stage"]))}


def explore(store_dir: Path, ranker: str = "trees", **kw: Any) -> Any:
    from kbqa.translators.explore.rank.rankers import DEFAULT_RANKER_PATH, DEFAULT_WEIGHTS_PATH
    from kbqa.translators.explore.translator import ExploreTranslator, open_ranker

    path = {"hand": DEFAULT_WEIGHTS_PATH, "trees": DEFAULT_RANKER_PATH}.get(ranker, Path(ranker))
    return ExploreTranslator(store_dir, ranker=open_ranker(path), **kw)


def oracle_rows(name: str, records: list, store_dir: Path, *, run_gold: bool, kb: str) -> list[dict]:
    """Every checked candidate of each question labelled by its answers, in the order the search checked them
    (the hand weights' order) and in the shipped ranker's order (`ranked50`: a right one among its first 50)."""
    from kbqa.training.ranker_data import label_candidates
    from kbqa.training.ranker_fit import orders
    from kbqa.training.train_kgs import TrainQuestion
    from kbqa.translators.explore.rank.rankers import DEFAULT_RANKER_PATH
    from kbqa.translators.explore.translator import open_ranker

    shipped = open_ranker(DEFAULT_RANKER_PATH)
    tr = explore(store_dir, "hand", fallback="never")
    out = []
    try:
        for rec in records:
            gold = gold_answers(rec, tr.store, kb, run_gold)  # any shape the answer metrics read
            row = label_candidates(tr, TrainQuestion(rec.id, name, rec.question, rec.sparql or "", gold))
            f1 = [c["f1"] for c in row["candidates"]]
            out.append({"set": name, "id": rec.id, "n": len(f1),
                        "oracle50": any(v >= 0.999 for v in f1[:50]),
                        "ranked50": any(f1[i] >= 0.999 for i in orders(shipped, [row])[0][:50]),
                        "oracle": any(v >= 0.999 for v in f1)})
    finally:
        tr.close()
    return out


def oracle_summary(rows: list[dict]) -> dict[str, Any]:
    n = len(rows) or 1
    return {"n": len(rows), "oracle@50": round(sum(r["oracle50"] for r in rows) / n, 3),
            "ranked_oracle@50": round(sum(r.get("ranked50", False) for r in rows) / n, 3),
            "oracle": round(sum(r["oracle"] for r in rows) / n, 3),
            "mean_candidates": round(sum(r["n"] for r in rows) / n, 1)}


def bench_sq(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    from kbqa.translators.casebank import CaseBank
    from kbqa.translators.casebank_build import DEFAULT_SETS, build_case_bank
    from kbqa.translators.cases import CasesTranslator

    store_dir = ensure_store(args.wd_store, sample="wikidata-mini")
    records = [r for r in load_benchmark("simplequestions-valid", check_syntax=False) if r.usable][:args.n]
    folder = work / "bank-sq"
    if not CaseBank.exists(folder):
        sets = [s for s in DEFAULT_SETS["wikidata"] if s != "simplequestions-valid"]
        build_case_bank(store_dir, sets, exclude_sets=["simplequestions-valid"], folder=folder,
                        exclude_questions=[r.question for r in records], progress=True)
    bank = CaseBank.load(folder)
    assert "simplequestions-valid" not in bank.datasets()
    out = {}
    for ranker in args.rankers:
        out[f"explore[{ranker}]"] = run_set("sq", records, store_dir, explore(store_dir, ranker, bank=bank),
                                            run_gold=True, kb="wikidata")
    if not args.no_cases:
        out["cases"] = run_set("sq", records, store_dir, CasesTranslator(store_dir, bank=bank), run_gold=True,
                               kb="wikidata")
    return out


def bench_bestiary(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    from kbqa.translators.casebank import CaseBank
    from kbqa.translators.casebank_build import build_case_bank
    from kbqa.translators.cases import CasesTranslator

    store_dir = ensure_store(args.bestiary_store, sample="bestiary")
    records = [r for r in load_benchmark("bestiary", check_syntax=False) if r.usable][:args.n]
    out = {f"explore[{ranker}]": run_set("bestiary", records, store_dir, explore(store_dir, ranker), run_gold=False,
                                         kb="generic") for ranker in args.rankers}
    if args.oracle:
        out["oracle"] = oracle_rows("bestiary", records, store_dir, run_gold=False, kb="generic")
    if not args.no_cases:
        rows = []
        for k in range(5):
            test = records[k::5]
            folder = work / f"bank-bestiary-{k}"
            if not CaseBank.exists(folder):
                build_case_bank(store_dir, ["bestiary"], exclude_ids=[f"bestiary:{r.id}" for r in test],
                                exclude_questions=[r.question for r in test], folder=folder, progress=False)
            rows += run_set("bestiary", test, store_dir, CasesTranslator(store_dir, bank=CaseBank.load(folder)),
                            run_gold=False, kb="generic")
        out["cases"] = rows
    return out


def bench_spider(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    stores = {db: ensure_store(work / "stores" / db, dump=SPIDER_KGS / f"{db}.ttl.gz") for db in SPIDER4SPARQL_DBS}
    records = {db: [r for r in load_benchmark(f"spider4sparql-{db}", check_syntax=False) if r.usable][:args.n]
               for db in SPIDER4SPARQL_DBS}
    out: dict[str, list[dict]] = {f"explore[{ranker}]": [] for ranker in args.rankers}
    if args.oracle:
        out["oracle"] = []
    for db in SPIDER4SPARQL_DBS:
        for ranker in args.rankers:
            out[f"explore[{ranker}]"] += run_set(f"spider:{db}", records[db], stores[db], explore(stores[db], ranker),
                                                 run_gold=False, kb="generic")
        if args.oracle:
            out["oracle"] += oracle_rows(f"spider:{db}", records[db], stores[db], run_gold=False, kb="generic")
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sets", default="sq,bestiary,spider", help="comma-separated: sq, bestiary, spider")
    p.add_argument("--n", type=int, default=None, help="at most N questions per set (default: all)")
    p.add_argument("--wd-store", type=Path, default=ROOT / ".kbqa" / "stores" / "wikidata-mini")
    p.add_argument("--bestiary-store", type=Path, default=ROOT / ".kbqa" / "stores" / "bestiary")
    p.add_argument("--work", type=Path, default=None, help="scratch folder for banks and Spider stores (kept)")
    p.add_argument("--no-cases", action="store_true", help="explore only")
    p.add_argument("--rankers", default="hand,trees", type=lambda v: v.split(","),
                   help="comma-separated: hand (linear, hand-set), trees (the shipped fitted one) or ranker files")
    p.add_argument("--no-oracle", dest="oracle", action="store_false",
                   help="skip the oracle pass over the candidates (BESTIARY, Spider)")
    p.add_argument("--out", type=Path, default=None, help="folder for rows.jsonl and summary.json")
    args = p.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="kbqa-bench-explore-"))
    work.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, list[dict]]] = {}
    for name in args.sets.split(","):
        t0 = time.perf_counter()
        results[name] = {"sq": bench_sq, "bestiary": bench_bestiary, "spider": bench_spider}[name](args, work)
        print(f"{name}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    table: dict[str, Any] = {}
    for name, by in results.items():
        for translator, rows in by.items():
            table[f"{name}/{translator}"] = oracle_summary(rows) if translator == "oracle" else summary(rows)
            print(f"{name:9} {translator:15} " + json.dumps(table[f"{name}/{translator}"]))
        if name == "spider":
            for translator, rows in by.items():
                if translator == "oracle":
                    continue
                kinds = sorted({r["structure"] for r in rows})
                per = {k: summary([r for r in rows if r["structure"] == k]) for k in kinds}
                table[f"spider/{translator}/structures"] = per
                for k, s in per.items():
                    print(f"  {translator:13} {k:22} n={s['n']:3} F1={s['answer_f1']:.3f} perfect={s['perfect']:.3f}")
                dbs = sorted({r["set"] for r in rows})
                for db in dbs:
                    s = summary([r for r in rows if r["set"] == db])
                    print(f"  {translator:13} {db:34} n={s['n']:3} F1={s['answer_f1']:.3f} perfect={s['perfect']:.3f}")
    if args.out:
        write_run_folder(args.out, ({"translator": translator, **r} for by in results.values()
                                    for translator, rows in by.items() for r in rows), table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
