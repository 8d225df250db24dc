"""Does a change to `explore` keep its behaviour? Per question, what the engine did with explore's translation —
the DeSQ text, the SPARQL it ran, a hash of the answers, answer F1, the failed stage and the top candidates'
verbalisations and scores — written as JSONL, and two such files compared question by question.

  python -m bench.explore_snapshot write OUT.jsonl --n 60 [--sets spider,bestiary,sq] [--budget 6] [--work DIR]
      [--no-structure-fallback]
  python -m bench.explore_snapshot compare BEFORE.jsonl AFTER.jsonl

Another version of the code (a commit) runs this script from its own tree, e.g.
  git archive COMMIT | tar -x -C /tmp/old && cp bench/explore_snapshot.py /tmp/old/bench/
  cd /tmp/old && PYTHONPATH=/tmp/old python -m bench.explore_snapshot write old.jsonl --work /tmp/stores
(`bench.explore`'s helpers, the translator and the engine are then that commit's). The search stops at a time
budget, so a loaded machine can cut one run's search short and not the other's: `--budget` raises it (the default
6 s is three times the shipped one), `truncated` marks each question the budget cut, and `--ids` re-runs only
the questions a comparison lists (JSON list of [set, id]) with a larger budget.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any


def run(name: str, records: list, store_dir: Path, translator: Any, kb: str, run_gold: bool) -> list[dict]:
    import bench.explore as be
    from eval.answer_metrics import score_question
    from kbqa.pipeline import Engine

    out = []
    with Engine(store=store_dir) as engine:
        engine.translator = translator
        for rec in records:
            t0 = time.perf_counter()
            res = engine.ask(rec.question, qid=rec.id)
            seconds = time.perf_counter() - t0
            pred = res.answers.to_result_dict() if res.answers is not None else None
            ans = score_question(be.gold_answers(rec, engine.store, kb, run_gold), pred, kb=kb)
            tr = getattr(res, "translation", None) or {}
            details = tr.get("details") or {}
            out.append({"set": name, "id": rec.id, "f1": round(ans.qald.f1, 6),
                        "stage": None if res.ok else str(res.failed_stage), "text": tr.get("text"),
                        "sparql": getattr(res, "sparql", None),
                        "answers": hashlib.sha1(json.dumps(pred, sort_keys=True).encode()).hexdigest() if pred else None,
                        "cands": [(c.get("verbalised"), c.get("score")) for c in details.get("candidates", [])],
                        "truncated": (details.get("search") or {}).get("truncated"), "sec": round(seconds, 2)})
    return out


def write(args: argparse.Namespace) -> None:
    import bench.explore as be
    from eval.loaders import SPIDER4SPARQL_DBS, load_benchmark

    ids = {tuple(k) for k in json.loads(Path(args.ids).read_text())} if args.ids else None
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)

    def records(benchmark: str, name: str) -> list:
        recs = [r for r in load_benchmark(benchmark, check_syntax=False) if r.usable][:args.n]
        return [r for r in recs if ids is None or (name, r.id) in ids]

    rows: list[dict] = []
    sets = args.sets.split(",")
    plan = []
    if "spider" in sets:
        plan += [(f"spider:{db}", f"spider4sparql-{db}", db, {"dump": be.SPIDER_KGS / f"{db}.ttl.gz"}, "generic",
                  False) for db in SPIDER4SPARQL_DBS]
    if "bestiary" in sets:
        plan.append(("bestiary", "bestiary", "bestiary", {"sample": "bestiary"}, "generic", False))
    if "sq" in sets:
        plan.append(("sq", "simplequestions-valid", "wikidata-mini", {"sample": "wikidata-mini"}, "wikidata", True))
    for name, benchmark, store_name, source, kb, run_gold in plan:
        recs = records(benchmark, name)
        if not recs:
            continue
        store = be.ensure_store(work / "stores" / store_name, **source)
        translator = be.explore(store, "trees", budget_s=args.budget)
        if args.no_structure_fallback:  # explore before the learned structure was its first fallback
            translator.structure_fallback.applies = False
        rows += run(name, recs, store, translator, kb, run_gold)
        print(f"{name}: {len(rows)} questions so far", file=sys.stderr, flush=True)
    with open(args.out, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    n = len(rows) or 1
    print(json.dumps({"n": len(rows), "accuracy": round(sum(r["f1"] >= 0.999 for r in rows) / n, 4),
                      "answer_f1": round(sum(r["f1"] for r in rows) / n, 4)}))


def compare(args: argparse.Namespace) -> None:
    a = {(r["set"], r["id"]): r for r in map(json.loads, open(args.before, encoding="utf-8"))}
    b = {(r["set"], r["id"]): r for r in map(json.loads, open(args.after, encoding="utf-8"))}
    keys = [k for k in a if k in b]

    def acc(d: dict, ks: list) -> float:
        return round(sum(d[k]["f1"] >= 0.999 for k in ks) / max(len(ks), 1), 4)

    out: dict[str, Any] = {"questions": len(keys)}
    for field in ("answers", "sparql", "f1", "stage", "text", "cands"):
        out[f"differ_{field}"] = sum(a[k].get(field) != b[k].get(field) for k in keys)
    out["accuracy"] = [acc(a, keys), acc(b, keys)]
    out["truncated"] = [sum(bool(d[k].get("truncated")) for k in keys) for d in (a, b)]
    print(json.dumps(out))
    for s in sorted({k[0].split(":")[0] for k in keys}):
        ks = [k for k in keys if k[0].split(":")[0] == s]
        print(f"  {s:9} n={len(ks):3} accuracy {acc(a, ks):.4f} -> {acc(b, ks):.4f}")
    differ = [list(k) for k in keys if any(a[k].get(f) != b[k].get(f) for f in ("answers", "sparql", "f1", "cands"))]
    for k in differ:
        ra, rb = a[tuple(k)], b[tuple(k)]
        print(f"  differs: {k} f1 {ra['f1']} -> {rb['f1']} truncated {ra.get('truncated')} -> {rb.get('truncated')}")
    if args.ids_out:
        Path(args.ids_out).write_text(json.dumps(differ) + "\n", encoding="utf-8")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write", help="run the questions and write one JSON line each")
    w.add_argument("out")
    w.add_argument("--sets", default="spider,bestiary,sq", help="comma-separated: spider (6 dev KGs), bestiary, sq")
    w.add_argument("--n", type=int, default=60, help="at most N questions per set (per KG for Spider)")
    w.add_argument("--budget", type=float, default=6.0, help="explore's search budget in seconds")
    w.add_argument("--work", default=".kbqa/explore_snapshot", help="folder for the stores (kept)")
    w.add_argument("--ids", default=None, help="only these questions: a JSON list of [set, id]")
    w.add_argument("--no-structure-fallback", action="store_true",
                   help="switch off explore's learned-structure fallback (Wikidata stores): the before of that change")
    c = sub.add_parser("compare", help="compare two files question by question")
    c.add_argument("before")
    c.add_argument("after")
    c.add_argument("--ids-out", default=None, help="write the differing questions here (for write --ids)")
    args = p.parse_args()
    {"write": write, "compare": compare}[args.cmd](args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
