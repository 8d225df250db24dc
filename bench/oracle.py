"""The oracle measurement of grounding + assembly (issue 5): decompose(gold) with every URI removed.

    .venv/bin/python bench/oracle.py --wikidata-store .kbqa/stores/wikidata-mini --bestiary-store .kbqa/stores/bestiary \\
        [--limit N] [--out DIR]

For each gold query: decompose it into DeSQ, drop every URI (kind, label, description stay),
ground and assemble through the Engine, and compare with the gold. Query level with no execution
on LC-QuAD 2.0 dev, WikiWebQuestions dev, QALD-7 and QALD-9-plus train (wikidata-mini holds the
labels but not the facts of most of their queries); answer level where the store holds the
facts: SimpleQuestions-Wikidata valid on wikidata-mini, BESTIARY on bestiary. Both stores need
a grounding index (`kbqa index --store …`). Runs are `kbqa eval --oracle` runs, resumable.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

QUERY_LEVEL = ["lcquad2-dev", "wwq-dev", "qald7-train", "qald9plus-train"]
ANSWER_LEVEL = [("simplequestions-valid", "wikidata"), ("bestiary", "bestiary")]


def run(name: str, store: Path, out: Path, limit: int | None, execute: bool) -> dict:
    argv = [sys.executable, "-m", "kbqa.cli", "eval", name, "--oracle", "--store", str(store), "--out",
            str(out / name), "--format", "json"]
    if limit:
        argv += ["--limit", str(limit)]
    if not execute:
        argv.append("--no-execute")
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{name}: kbqa eval failed ({proc.returncode}): {proc.stderr.strip()[-800:]}")
    summary = json.loads(proc.stdout)
    summary["_seconds"] = time.perf_counter() - t0
    return summary


_NO_LABEL = re.compile(r"^\[[^\]]+\] \w+ \| [QP]\d+ \|", re.M)


def labelled_subset(results: Path) -> dict:
    """Query-level figures on the questions whose every gold item has a label in the store's memory.

    decompose() labels an item with its bare id ("Q16149111") when the label memory has no label for it;
    grounding cannot find such an item from its label, so those questions measure the store's coverage,
    not grounding. Printed apart so the two are not confused."""
    rows = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [r for r in rows if r.get("usable") and r.get("desq")]
    keep = [r for r in rows if not _NO_LABEL.search(r["desq"])]
    q = [r.get("query") or {} for r in keep]

    def mean(key: str) -> float:
        vals = [bool(x.get(key)) if key == "exact_match" else (x.get(key) or {}).get("f1", 0.0) for x in q]
        return sum(vals) / len(vals) if vals else 0.0

    return {"n": len(keep), "of": len(rows), "exact_match": mean("exact_match"), "triples_f1": mean("triples"),
            "entities_f1": mean("entities"), "properties_f1": mean("properties")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wikidata-store", type=Path, required=True)
    ap.add_argument("--bestiary-store", type=Path, required=True)
    ap.add_argument("--limit", type=int, default=None, help="first N questions of each set (default: all)")
    ap.add_argument("--out", type=Path, default=Path(".kbqa/bench/oracle"))
    ap.add_argument("--sets", nargs="+", default=None, metavar="NAME",
                    help=f"only these sets (default: all of {', '.join(QUERY_LEVEL + [n for n, _ in ANSWER_LEVEL])})")
    args = ap.parse_args()
    wanted = set(args.sets or QUERY_LEVEL + [n for n, _ in ANSWER_LEVEL])
    print("query level (no execution): exact structural match, triple-pattern F1, entity / property URI F1")
    print(f"{'dataset':<18}{'n':>6}{'exact':>8}{'triples F1':>12}{'entity F1':>11}{'property F1':>13}{'s/q':>8}")
    for name in [n for n in QUERY_LEVEL if n in wanted]:
        s = run(name, args.wikidata_store, args.out, args.limit, execute=False)
        q = s["query"] or {}
        print(f"{name:<18}{q.get('n', 0):>6}{q.get('exact_match', 0):>8.3f}{q.get('triples_f1', 0):>12.3f}"
              f"{q.get('entities_f1', 0):>11.3f}{q.get('properties_f1', 0):>13.3f}"
              f"{s['_seconds'] / max(q.get('n', 1), 1):>8.3f}")
        sub = labelled_subset(args.out / name / "results.jsonl")
        print(f"{'  every item labelled':<18}{sub['n']:>6}{sub['exact_match']:>8.3f}{sub['triples_f1']:>12.3f}"
              f"{sub['entities_f1']:>11.3f}{sub['properties_f1']:>13.3f}   ({sub['n']} of {sub['of']} questions)")
    print("answer level (gold query run on the same store): macro F1, QALD-style and strict")
    print(f"{'dataset':<24}{'n':>6}{'QALD F1':>9}{'strict F1':>11}{'exact':>8}{'grounding':>11}")
    for name, which in [(n, w) for n, w in ANSWER_LEVEL if n in wanted]:
        store = args.wikidata_store if which == "wikidata" else args.bestiary_store
        s = run(name, store, args.out, args.limit, execute=True)
        a, q, g = s["answer"] or {}, s["query"] or {}, (s.get("grounding") or {}).get("overall") or {}
        print(f"{name:<24}{a.get('n', 0):>6}{a.get('qald', {}).get('f1', 0):>9.3f}"
              f"{a.get('strict', {}).get('f1', 0):>11.3f}{q.get('exact_match', 0):>8.3f}"
              f"{g.get('accuracy', 0) if isinstance(g, dict) else 0:>11.3f}")


if __name__ == "__main__":
    main()
