"""Translator benchmark (the `cases` translator): parse rate, query-level F1, answer F1, seconds per question.

  python -m bench.translators --n 500                     SimpleQuestions-Wikidata valid on wikidata-mini
                                                          and BESTIARY (5-fold) on bestiary
  python -m bench.translators --sets sq --n 200 --train-limit 5000 --out bench/out/translators.json

The case bank never holds a scored question: SimpleQuestions valid is scored against a bank built from
the training sets (valid excluded by set and by question text); BESTIARY, whose only training data is
itself, is scored by 5-fold cross-validation (each fold against a bank of the other four). Banks are
built into a scratch folder, never into the store's own `cases/`. Reads only the bundled benchmarks.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from assembler.writer import write_sparql
from eval.answer_metrics import score_question
from eval.loaders import load_benchmark
from eval.loaders_sparql import prepare_gold_sparql
from eval.query_metrics import score_query
from eval.records import Record
from grounding.build import read_meta
from kb_dumps.layout import StoreLayout
from kb_dumps.profiles import get_profile
from kb_dumps.stage_errors import KBQAError
from kbqa.frontends.desq import parse_desq
from kbqa.result import Result
from kbqa.translators.casebank import CaseBank
from kbqa.translators.casebank_build import DEFAULT_SETS, build_case_bank
from kbqa.translators.cases import CasesTranslator

ROOT = Path(__file__).resolve().parents[1]


def ensure_store(path: Path, sample: str) -> Path:
    if not StoreLayout.of(path).exists():
        from kb_dumps.ingest import ingest
        from kb_dumps.samples import get_sample

        s = get_sample(sample)
        print(f"ingesting the {sample} sample into {path} …", file=sys.stderr)
        ingest(s.paths(), path, profile=s.profile, progress=False)
    return path


def guessed_sparql(text: str, kb: str) -> str | None:
    """The SPARQL the translator's own guessed URIs give (no grounding): what query-level F1 scores."""
    parsed = parse_desq(text)
    if not parsed.ok or parsed.plan is None:
        return None
    mapping = {g.name: g.uri for g in parsed.grounding if g.uri}
    res = write_sparql(parsed.plan, get_profile(kb), mapping)
    return res.sparql if res.ok else None


def score(records: list[Record], translator: CasesTranslator, engine: Any, store: Any, kb: str) -> list[dict]:
    rows = []
    for rec in records:
        row: dict[str, Any] = {"id": rec.id, "question": rec.question}
        t0 = time.perf_counter()
        try:
            tr = translator.translate(rec.question, qid=rec.id)
            row["seconds"] = time.perf_counter() - t0
            text = tr.text
            row["case"] = tr.details.get("case")
        except KBQAError as e:
            row.update(seconds=time.perf_counter() - t0, error=str(e), parsed=False, query_f1=0.0, answer_f1=0.0)
            rows.append(row)
            continue
        row["parsed"] = parse_desq(text).ok
        gold = prepare_gold_sparql(rec.sparql, kb=kb, check_syntax=False).sparql or rec.sparql or ""
        pred = guessed_sparql(text, kb)
        qs = score_query(pred, gold, kb)
        row["query_f1"] = qs.triples.f1 if qs.error is None else 0.0
        row["exact"] = bool(qs.exact_match)
        if engine is not None:
            row.update(answer_scores(rec, engine.compile(text, execute=True), gold, store, kb))
        rows.append(row)
    return rows


def answer_scores(rec: Record, res: Result, gold: str, store: Any, kb: str) -> dict[str, Any]:
    """Answer F1 (QALD and strict) of a compiled result against the gold query, and the stage that failed.
    The gold answers are the gold query run on the same store (SimpleQuestions files give one answer of many);
    the file's answers only when the store cannot run the gold query."""
    pred_answers = res.answers.to_result_dict() if res.answers is not None else None
    try:
        gold_answers = store.query(gold).to_dict()
    except KBQAError:
        gold_answers = rec.gold_result()
    ans = score_question(gold_answers, pred_answers, gold_sparql=gold, pred_sparql=res.sparql, kb=kb)
    return {"answer_f1": ans.qald.f1, "answer_f1_strict": ans.strict.f1, "stage": res.failed_stage}


def summary(name: str, rows: list[dict], bank_size: int | str) -> dict:
    n = len(rows)
    secs = [r["seconds"] for r in rows]
    out = {"benchmark": name, "questions": n, "bank": bank_size,
           "parse_rate": sum(r.get("parsed", False) for r in rows) / n,
           "query_f1": sum(r.get("query_f1", 0.0) for r in rows) / n,
           "exact_match": sum(r.get("exact", False) for r in rows) / n,
           "s_per_question_mean": statistics.mean(secs), "s_per_question_median": statistics.median(secs)}
    if any("answer_f1" in r for r in rows):
        out["answer_f1"] = sum(r.get("answer_f1", 0.0) for r in rows) / n
        out["answer_f1_strict"] = sum(r.get("answer_f1_strict", 0.0) for r in rows) / n
    return out


def bench_sq(args: argparse.Namespace, work: Path) -> tuple[dict, list[dict]]:
    store_dir = ensure_store(args.wd_store, "wikidata-mini")
    records = [r for r in load_benchmark("simplequestions-valid", check_syntax=False) if r.usable][:args.n]
    folder = work / "bank-sq"
    if not CaseBank.exists(folder) or args.rebuild:
        sets = [s for s in DEFAULT_SETS["wikidata"] if s != "simplequestions-valid"]
        t0 = time.perf_counter()
        # the bank's embedder is the store index's (as `kbqa cases build` does), unless --embedder says
        model = args.embedder or (read_meta(store_dir) or {}).get("embedder")
        stats = build_case_bank(store_dir, sets, exclude_sets=["simplequestions-valid"], model=model,
                                exclude_questions=[r.question for r in records], folder=folder,
                                limit_per_set=args.train_limit, progress=True)
        print(f"bank: {stats.cases} cases in {time.perf_counter() - t0:.0f} s (skipped {stats.skipped})",
              file=sys.stderr)
    bank = CaseBank.load(folder)
    assert "simplequestions-valid" not in bank.datasets()
    return _run("simplequestions-valid @ wikidata-mini", records, store_dir, [(records, bank)], args)


def bench_bestiary(args: argparse.Namespace, work: Path) -> tuple[dict, list[dict]]:
    store_dir = ensure_store(args.bestiary_store, "bestiary")
    records = [r for r in load_benchmark("bestiary", check_syntax=False) if r.usable][:args.n]
    folds = []
    for k in range(args.folds):
        test = records[k::args.folds]
        folder = work / f"bank-bestiary-{k}"
        if not CaseBank.exists(folder) or args.rebuild:
            build_case_bank(store_dir, ["bestiary"], exclude_ids=[f"bestiary:{r.id}" for r in test],
                            exclude_questions=[r.question for r in test], folder=folder, progress=False)
        bank = CaseBank.load(folder)
        held = {r.id for r in test}
        assert not any(c.qid in held for c in bank.cases), "a scored question is in the bank"
        folds.append((test, bank))
    return _run(f"bestiary @ bestiary ({args.folds}-fold)", records, store_dir, folds, args)


def _run(name: str, records: list[Record], store_dir: Path, folds: list, args: argparse.Namespace
         ) -> tuple[dict, list[dict]]:
    from kb_dumps.store import LocalStore
    from kbqa.pipeline import Engine

    kb = StoreLayout.of(store_dir).profile_name
    rows: list[dict] = []
    with LocalStore(store_dir) as store:
        engine = None if args.no_answers else Engine(store=store_dir)
        try:
            for test, bank in folds:
                tr = CasesTranslator(store_dir, bank=bank, store=store, kb_check=not args.no_kb_check)
                tr.translate(test[0].question)  # warm-up: model load and worker start are not per question
                rows.extend(score(test, tr, engine, store, kb))
                tr.close()
        finally:
            if engine is not None:
                engine.close()
    return summary(name, rows, " + ".join(str(len(b)) for _, b in folds)), rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sets", default="sq,bestiary", help="which benchmarks: sq, bestiary (comma-separated)")
    p.add_argument("--n", type=int, default=500, help="questions per benchmark (default 500)")
    p.add_argument("--train-limit", type=int, default=None, help="questions per training set in the bank")
    p.add_argument("--folds", type=int, default=5, help="folds for BESTIARY (default 5)")
    p.add_argument("--wd-store", type=Path, default=ROOT / ".kbqa" / "stores" / "wikidata-mini")
    p.add_argument("--bestiary-store", type=Path, default=ROOT / ".kbqa" / "stores" / "bestiary")
    p.add_argument("--work", type=Path, default=None, help="folder for the benchmark banks (default: a temp dir)")
    p.add_argument("--rebuild", action="store_true", help="rebuild banks found in --work")
    p.add_argument("--embedder", default=None, help="case-bank embedder (default: the store index's)")
    p.add_argument("--no-answers", action="store_true", help="skip answer F1 (no assembly / execution)")
    p.add_argument("--no-kb-check", action="store_true", help="ablation: no (entity, property) store check")
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads (default 1: one short question is faster on one thread on a busy CPU)")
    p.add_argument("--out", type=Path, default=None, help="write the summary and per-question rows as JSON")
    args = p.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    work = args.work or Path(tempfile.mkdtemp(prefix="kbqa-bench-translators-"))
    work.mkdir(parents=True, exist_ok=True)
    results = []
    for which in [s.strip() for s in args.sets.split(",") if s.strip()]:
        summ, rows = {"sq": bench_sq, "bestiary": bench_bestiary}[which](args, work)
        results.append({"summary": summ, "rows": rows})
        print(json.dumps(summ, indent=1))
    print("command: python -m bench.translators " + " ".join(sys.argv[1:]))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
