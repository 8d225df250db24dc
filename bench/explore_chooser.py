"""`explore` alone against `explore` with a model as chooser (kbqa/translators/explore/rank/chooser.py), in one run.

  python -m bench.explore_chooser --work /tmp/exb/work                       SimpleQuestions valid, BESTIARY, 2 Spider KGs
  python -m bench.explore_chooser --sets bestiary --chooser openai --model-url http://127.0.0.1:8080/v1

Each set runs twice through the whole engine (bench/explore.py's `run_set`): the ranker's pick, then the model's
pick among the ranker's top k. In the second run every top-k candidate is also executed on its own and scored
against the gold answers, which gives the chooser's ceiling (a right answer among the k), the ranker's own
rank-1 share, and how often the model moved away from the ranker's pick, and with what result. Sets, stores and
the SimpleQuestions bank (scored questions excluded) are those of bench/explore.py.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.explore import ROOT, SPIDER_KGS, ensure_store, gold_answers, run_set, summary
from bench.outputs import write_run_folder
from eval.answer_metrics import score_question
from eval.loaders import load_benchmark

DEFAULT_MODEL = ROOT / ".kbqa" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"


def recording_explore(store_dir: Path, chooser: Any, **kw: Any) -> Any:
    """An explore translator that keeps, per question, its top-k graphs and what the chooser did."""
    from kbqa.translators.explore import ExploreTranslator

    class Recording(ExploreTranslator):
        def search(self, question: str) -> Any:
            a, ranked, info = super().search(question)
            self.topk[question] = ranked[:chooser.k]
            return a, ranked, info

        def translate(self, question: str, *args: Any, **kwargs: Any) -> Any:
            res = super().translate(question, *args, **kwargs)
            self.picks[question] = res.details.get("chooser")
            return res

    tr = Recording(store_dir, **kw)
    tr.topk, tr.picks = {}, {}
    tr.chooser = chooser
    return tr


def candidate_f1s(tr: Any, records: list, *, run_gold: bool, kb: str) -> dict[str, list[float]]:
    """Answer F1 of each recorded top-k candidate, run on its own (question -> F1 per rank)."""
    from kbqa.translators.explore.lower.text import write

    out = {}
    for rec in records:
        gold = gold_answers(rec, tr.store, kb, run_gold)
        f1s = []
        for g in tr.topk.get(rec.question, []):
            try:
                pred = tr.store.query(write(g, tr.schema, desq=False), timeout_s=5.0).to_dict()
            except Exception:  # noqa: BLE001 - a candidate the store refuses scores 0
                pred = None
            f1s.append(score_question(gold, pred, kb=kb).qald.f1)
        out[rec.question] = f1s
    return out


def compare(name: str, records: list, store_dir: Path, chooser: Any, *, run_gold: bool, kb: str,
            **kw: Any) -> dict[str, Any]:
    """Both runs on one set, and the chooser's figures."""
    from kbqa.translators.explore import ExploreTranslator

    plain = ExploreTranslator(store_dir, **kw)
    alone = run_set(name, records, store_dir, plain, run_gold=run_gold, kb=kb)
    plain.close()
    tr = recording_explore(store_dir, chooser, **kw)
    chosen = run_set(name, records, store_dir, tr, run_gold=run_gold, kb=kb)
    f1s = candidate_f1s(tr, records, run_gold=run_gold, kb=kb)
    picks = [tr.picks.get(r.question) for r in records]
    asked = [p for p in picks if p and p.get("fallback") != "one candidate: nothing to choose"]
    n = len(records) or 1
    ok = [max(f, default=0.0) >= 0.999 for f in f1s.values()]
    moved = [(p, f1s[r.question]) for r, p in zip(records, picks, strict=True) if p and p["used"] != 1]
    stats = {
        "n": len(records), "k": chooser.k,
        "topk_has_right": round(sum(ok) / n, 3),  # the chooser's ceiling
        "rank1_right": round(sum(bool(f) and f[0] >= 0.999 for f in f1s.values()) / n, 3),
        "model_asked": len(asked),
        "model_kept_rank1": sum(p["used"] == 1 for p in asked if p["fallback"] is None),
        "model_moved": len(moved),
        "moved_better": sum(f[p["used"] - 1] > f[0] for p, f in moved),
        "moved_worse": sum(f[p["used"] - 1] < f[0] for p, f in moved),
        "fallbacks": sum(p["fallback"] is not None for p in asked),
        "chooser_s_mean": round(statistics.mean([p["seconds"] for p in asked]), 3) if asked else 0.0,
    }
    tr.chooser = None  # the caller closes the chooser, once for every set
    tr.close()
    return {"explore": alone, "explore+chooser": chosen, "chooser": stats}


def sets(args: argparse.Namespace, work: Path) -> dict[str, tuple[list, Path, dict[str, Any]]]:
    """name -> (records, store, run options) for the sets asked for."""
    out: dict[str, tuple[list, Path, dict[str, Any]]] = {}
    names = args.sets.split(",")
    if "sq" in names:
        from kbqa.translators.casebank import CaseBank
        from kbqa.translators.casebank_build import DEFAULT_SETS, build_case_bank

        store = ensure_store(args.wd_store, sample="wikidata-mini")
        records = [r for r in load_benchmark("simplequestions-valid", check_syntax=False) if r.usable][:args.n_sq]
        folder = work / "bank-sq"  # as bench/explore.py: no SimpleQuestions-valid question in the bank
        if not CaseBank.exists(folder):
            build_case_bank(store, [s for s in DEFAULT_SETS["wikidata"] if s != "simplequestions-valid"],
                            exclude_sets=["simplequestions-valid"], folder=folder,
                            exclude_questions=[r.question for r in records], progress=True)
        bank = CaseBank.load(folder)
        assert "simplequestions-valid" not in bank.datasets()
        out["sq"] = (records, store, {"run_gold": True, "kb": "wikidata", "bank": bank})
    if "bestiary" in names:
        store = ensure_store(args.bestiary_store, sample="bestiary")
        records = [r for r in load_benchmark("bestiary", check_syntax=False) if r.usable][:args.n]
        out["bestiary"] = (records, store, {"run_gold": False, "kb": "generic"})
    for db in args.spider.split(",") if "spider" in names else []:
        store = ensure_store(work / "stores" / db, dump=SPIDER_KGS / f"{db}.ttl.gz")
        records = [r for r in load_benchmark(f"spider4sparql-{db}", check_syntax=False) if r.usable][:args.n]
        out[f"spider:{db}"] = (records, store, {"run_gold": False, "kb": "generic"})
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sets", default="sq,bestiary,spider", help="comma-separated: sq, bestiary, spider")
    p.add_argument("--spider", default="concert_singer,pets_1", help="Spider4SPARQL KGs (comma-separated)")
    p.add_argument("--n-sq", type=int, default=200, help="SimpleQuestions valid: the first N usable (default 200)")
    p.add_argument("--n", type=int, default=None, help="at most N questions of the other sets (default: all)")
    p.add_argument("--chooser", default="llama-cpp", help="model backend of the chooser (llama-cpp, openai, hf)")
    p.add_argument("--model", default=str(DEFAULT_MODEL), help="GGUF / registered name / server model name")
    p.add_argument("--model-url", default=None, help="OpenAI-compatible server (…/v1) for --chooser openai")
    p.add_argument("--k", type=int, default=5, help="candidates shown to the model (2-9)")
    p.add_argument("--threads", type=int, default=1,
                   help="llama-cpp threads (default 1: on two shared cores a second thread slows it down)")
    p.add_argument("--wd-store", type=Path, default=ROOT / ".kbqa" / "stores" / "wikidata-mini")
    p.add_argument("--bestiary-store", type=Path, default=ROOT / ".kbqa" / "stores" / "bestiary")
    p.add_argument("--work", type=Path, default=None, help="scratch folder for the bank and Spider stores (kept)")
    p.add_argument("--out", type=Path, default=None, help="folder for rows.jsonl and summary.json")
    args = p.parse_args()
    from kbqa.settings import get_translator_settings
    from kbqa.translators.explore.rank.chooser import make_chooser

    work = args.work or Path(tempfile.mkdtemp(prefix="kbqa-bench-chooser-"))
    work.mkdir(parents=True, exist_ok=True)
    chooser = make_chooser(get_translator_settings(explore_chooser=args.chooser, model=args.model,
                                                   endpoint=args.model_url, explore_chooser_k=args.k))
    if args.threads and hasattr(chooser.backend, "n_threads"):  # llama-cpp: threads of the model
        chooser.backend.n_threads = args.threads
    results: dict[str, dict[str, Any]] = {}
    try:
        for name, (records, store, opts) in sets(args, work).items():
            t0 = time.perf_counter()
            kw = {k: v for k, v in opts.items() if k not in ("run_gold", "kb")}
            results[name] = compare(name, records, store, chooser, run_gold=opts["run_gold"], kb=opts["kb"], **kw)
            print(f"{name}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    finally:
        chooser.close()
    table: dict[str, Any] = {}
    for name, by in results.items():
        for system in ("explore", "explore+chooser"):
            s = summary(by[system])
            s["mean_s"] = round(statistics.mean([r["seconds"] for r in by[system]] or [0.0]), 3)
            table[f"{name}/{system}"] = s
            print(f"{name:22} {system:16} " + json.dumps(s))
        table[f"{name}/chooser"] = by["chooser"]
        print(f"{name:22} {'chooser':16} " + json.dumps(by["chooser"]))
    if args.out:
        write_run_folder(args.out, ({"system": system, **r} for by in results.values()
                                    for system in ("explore", "explore+chooser") for r in by[system]), table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
