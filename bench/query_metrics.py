"""Query-level scoring speed: LC-QuAD 2.0 dev gold vs itself with variables renamed, gold parses cached.

Run: `.venv/bin/python -m bench.query_metrics [--benchmark lcquad2-dev] [--limit N]`; prints questions/s.
"""

from __future__ import annotations

import argparse
import re
import sys
import time

from eval.loaders import load_benchmark
from eval.loaders_sparql import mask_opaque
from eval.query_metrics import normalise_query, score_query


def rename_variables(sparql: str) -> str:
    """Every ?name -> ?renamed_name, outside strings and IRIs: a different text, the same query."""
    masked = mask_opaque(sparql)
    out, last = [], 0
    for m in re.finditer(r"[?$]([A-Za-z_]\w*)", masked):
        out.append(sparql[last:m.start()] + "?renamed_" + m.group(1))
        last = m.end()
    return "".join(out) + sparql[last:]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--benchmark", default="lcquad2-dev")
    ap.add_argument("--limit", type=int, default=None)
    args = ap.parse_args()
    records = [r for r in load_benchmark(args.benchmark, limit=args.limit) if r.usable and r.sparql]
    gold = [r.sparql for r in records]
    pred = [rename_variables(q) for q in gold]
    kb = records[0].meta.get("kb", "wikidata") if records else "wikidata"

    normalise_query.cache_clear()
    t0 = time.perf_counter()
    for q in gold:
        normalise_query(q, kb)
    t_gold = time.perf_counter() - t0

    t0 = time.perf_counter()
    scores = [score_query(p, g, kb) for p, g in zip(pred, gold, strict=True)]
    t_score = time.perf_counter() - t0

    n = len(scores)
    exact = sum(s.exact_match for s in scores)
    errors = sum(s.error is not None for s in scores)
    f1 = sum(s.triples.f1 for s in scores) / n if n else 0.0
    print(f"benchmark: {args.benchmark}, {n} usable queries")
    print(f"gold parse+normalise (cold): {n / t_gold:.1f} queries/s ({t_gold:.2f} s)")
    print(f"scoring, gold cached, renamed predictions parsed: {n / t_score:.1f} questions/s ({t_score:.2f} s)")
    print(f"exact match {exact}/{n}, mean triple F1 {f1:.3f}, parse errors {errors}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
