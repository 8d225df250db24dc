"""Assembler benchmark on the 30 hand-written DeSQ fixtures (tests/fixtures/desq_real).

  python -m bench.assembly --wikidata-mini .kbqa/stores/wikidata-mini --bestiary /tmp/best [--repeat 3]

1. Without execution (Plans/s; target >= 200/s): the fixtures' Plans written with the groundings the
   engine chose, measured three ways in the same run: write only (Plan + mapping -> text, the baseline),
   parse + write (DeSQ text -> Plan -> text), and parse + write + pyoxigraph parse check.
2. With execution: `Engine.compile` per question on the stores (grounding, best-first combinations,
   execution, labels), p50 / p99 seconds per question and the answers checked against the gold query.

Stores without a grounding index (`kbqa index`) fall back to guessed URIs: fixtures that guess none then
fail at `ground`; the summary counts them. Not a test: prints figures (and JSON with --out).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from assembler.assemble import parse_problem
from assembler.writer import write_sparql
from eval.answer_metrics import as_answers
from kb_dumps.ingest import ingest
from kb_dumps.store import LocalStore
from kbqa.frontends.desq import parse_desq
from kbqa.pipeline import Engine

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "desq_real"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    i = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[i]


def rate(fn: Callable[[Any], object], items: list, min_seconds: float = 2.0) -> float:
    """Items per second of `fn` over `items`, repeated until `min_seconds` have passed."""
    n, t0 = 0, time.perf_counter()
    while True:
        for item in items:
            fn(item)
        n += len(items)
        elapsed = time.perf_counter() - t0
        if elapsed >= min_seconds:
            return n / elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wikidata-mini", type=Path, required=True, help="store dir of the wikidata-mini sample")
    ap.add_argument("--bestiary", type=Path, required=True, help="store dir of the bestiary sample")
    ap.add_argument("--qualifier", type=Path, default=Path("/tmp/kbqa-bench-qualifier"),
                    help="where to build the tiny qualifier store (from qualifier.nt) if missing")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per question after a warm-up run")
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = ap.parse_args()

    if not (args.qualifier / "current").exists():
        ingest([FIXTURES / "qualifier.nt"], args.qualifier, profile="wikidata", progress=False)
    stores = {"wikidata-mini": args.wikidata_mini, "bestiary": args.bestiary, "qualifier": args.qualifier}
    spec = json.loads((FIXTURES / "fixtures.json").read_text(encoding="utf-8"))["fixtures"]
    texts = {s["file"]: (FIXTURES / s["file"]).read_text(encoding="utf-8") for s in spec}

    # ---- with execution ------------------------------------------------------------------------
    engines = {k: Engine(v, timeout_s=30) for k, v in stores.items()}
    gold_stores = {k: LocalStore(v, timeout_s=60) for k, v in stores.items()}
    per_question: dict[str, list[float]] = {}
    exec_seconds: list[float] = []
    correct, failed, mappings = 0, {}, {}
    t_warm = time.perf_counter()
    for s in spec:  # warm-up: loads the embedder, starts the workers; also checks the answers
        r = engines[s["store"]].compile(texts[s["file"]])
        gold = as_answers(gold_stores[s["store"]].query(s["gold_sparql"]))
        got = as_answers(r.answers.to_result_dict() if r.answers else None)
        ok = r.status == "ok" and (got.boolean == gold.boolean if gold.kind == "ask" else got.rows == gold.rows)
        correct += ok
        if not ok:
            failed[s["file"]] = f"{r.status}/{r.failed_stage}: " + "; ".join(e.message for e in r.errors)[:200]
        if r.sparql:
            mappings[s["file"]] = {g.name: g.chosen for g in r.grounding if g.chosen}
    warm_s = time.perf_counter() - t_warm
    answered = [s for s in spec if s["file"] not in failed]  # time only what works: a failed ground is fast
    for _ in range(args.repeat):
        for s in answered:
            r = engines[s["store"]].compile(texts[s["file"]])
            per_question.setdefault(s["file"], []).append(r.seconds)
            exec_seconds.append(sum(st.seconds for st in r.steps if st.stage == "execute"))
    all_times = [t for ts in per_question.values() for t in ts]
    wdm_times = [t for s in answered if s["store"] == "wikidata-mini" for t in per_question[s["file"]]]

    # ---- without execution ---------------------------------------------------------------------
    plans = {f: parse_desq(t).plan for f, t in texts.items()}
    profiles = {s["file"]: engines[s["store"]].profile for s in spec}
    ready = [f for f in texts if f in mappings and plans[f] is not None]

    def write_only(f: str) -> None:
        assert write_sparql(plans[f], profiles[f], mappings[f]).ok

    def parse_write(f: str) -> None:
        assert write_sparql(parse_desq(texts[f]).plan, profiles[f], mappings[f]).ok

    def parse_write_check(f: str) -> None:
        res = write_sparql(parse_desq(texts[f]).plan, profiles[f], mappings[f])
        assert parse_problem(res.sparql) is None

    rates = {"write_only": rate(write_only, ready), "parse_write": rate(parse_write, ready),
             "parse_write_check": rate(parse_write_check, ready)}
    for e in engines.values():
        e.close()
    for st in gold_stores.values():
        st.close()

    figures = {
        "questions": len(spec), "correct": correct, "failed": failed, "plans_timed": len(ready),
        "plans_per_s": {k: round(v, 1) for k, v in rates.items()},
        "per_question_s": {"p50": round(percentile(all_times, 50), 4), "p99": round(percentile(all_times, 99), 4),
                           "max": round(max(all_times), 4), "mean": round(statistics.mean(all_times), 4)},
        "wikidata_mini_per_question_s": {"p50": round(percentile(wdm_times, 50), 4),
                                         "p99": round(percentile(wdm_times, 99), 4)},
        "execute_step_s": {"p50": round(percentile(exec_seconds, 50), 4),
                           "p99": round(percentile(exec_seconds, 99), 4)},
        "warm_up_s": round(warm_s, 2), "repeat": args.repeat,
        "slowest": sorted(((round(statistics.median(ts), 3), f) for f, ts in per_question.items()), reverse=True)[:3],
    }
    print(f"fixtures: {correct}/{len(spec)} answers equal the gold answers")
    for f, why in failed.items():
        print(f"  FAIL {f}: {why}")
    print(f"without execution ({len(ready)} Plans): write only {rates['write_only']:.0f} Plans/s (baseline), "
          f"parse+write {rates['parse_write']:.0f} Plans/s, parse+write+parse-check "
          f"{rates['parse_write_check']:.0f} Plans/s  (target >= 200/s)")
    print(f"with execution, per answered question ({len(answered)}, {args.repeat} runs after warm-up): "
          f"p50 {figures['per_question_s']['p50'] * 1000:.1f} ms, p99 {figures['per_question_s']['p99'] * 1000:.1f} ms")
    print(f"  wikidata-mini only: p50 {figures['wikidata_mini_per_question_s']['p50'] * 1000:.1f} ms, "
          f"p99 {figures['wikidata_mini_per_question_s']['p99'] * 1000:.1f} ms; execute step alone: "
          f"p50 {figures['execute_step_s']['p50'] * 1000:.1f} ms, p99 {figures['execute_step_s']['p99'] * 1000:.1f} ms")
    print("  slowest (median s): " + ", ".join(f"{f} {t:.2f}" for t, f in figures["slowest"]))
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
