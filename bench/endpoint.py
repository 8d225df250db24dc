"""Remote endpoints: the pipeline on a real SPARQL server vs the local store, label-memory build rates, vector memory.

  .venv/bin/python -m bench.endpoint --store .kbqa/stores/wikidata-mini [--rounds 3] [--sq 60]

1. Pipeline: `oxigraph serve-read-only` on loopback over the store's own data; the same questions through
   `Engine` with the local store (LocalStore) and with a remote store directory (the same label memory,
   grounding index and case bank; queries to the server through EndpointStore). Questions: the
   wikidata-mini DeSQ fixtures (tests/fixtures/desq_real, `compile`) x rounds, and the first N
   SimpleQuestions-Wikidata valid questions through the `cases` translator (`ask`, when the store has a
   case bank). Rounds alternate which engine goes first. The answers must be the same: mismatches are
   printed and counted.
2. Label memory: `kbqa ingest` of the dump vs `kbqa ingest --endpoint` from the server (two page
   sizes), label-memory rows written per second, and whether the rows equal the dump's.
3. Vectors: the store's entity vectors re-inserted into one hnsw index; bytes per vector on disk and
   resident memory (measured in a fresh process), search latency. (The sharded layout measured here until
   2026-12 is retired: grounding/README.md "Vector stores".)
Not a test: prints figures (JSON with --out).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from kb_dumps.endpoint_ingest import ingest_endpoint
from kb_dumps.ingest import ingest
from kb_dumps.label_memory import LabelMemory
from kb_dumps.layout import StoreLayout
from kb_dumps.oxigraph_server import OxigraphServer
from kb_dumps.samples import get_sample
from kbqa.result import Result

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "desq_real"


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def remote_copy(local: Path, dest: Path, url: str) -> Path:
    """A remote store directory sharing `local`'s label memory, index and case bank (symlinks)."""
    layout = StoreLayout.of(local)
    dest.mkdir(parents=True)
    for name in ("labels.sqlite", "index", "cases"):
        if (layout.current / name).exists():
            (dest / name).symlink_to(layout.current / name)
    manifest = {**layout.manifest(), "endpoint": {"url": url, "dialect": "oxigraph"}, "sources": [], "triples": 0}
    (dest / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return dest


def answers(r: Result) -> dict | None:
    return r.answers.to_result_dict() if r.answers else None


def same(a: Result, b: Result) -> bool:
    return (a.status, a.sparql, answers(a)) == (b.status, b.sparql, answers(b))


def exec_seconds(results: list) -> float:
    return sum(s.seconds for r in results for s in r.steps if s.stage == "execute")


# ---- 1. the pipeline ---------------------------------------------------------------------------------
def pipeline(store: Path, remote: Path, rounds: int, sq: int) -> dict:
    from kbqa.pipeline import Engine

    texts = [(FIXTURES / s["file"]).read_text(encoding="utf-8")
             for s in json.loads((FIXTURES / "fixtures.json").read_text(encoding="utf-8"))["fixtures"]
             if s["store"] == "wikidata-mini"]
    engines = {"local": Engine(store, timeout_s=30), "endpoint": Engine(remote, timeout_s=30)}
    out: dict = {}
    for eng in engines.values():
        eng.compile(texts[0])  # warm-up: model, index, query worker / first connection
    times: dict[str, list[float]] = {k: [] for k in engines}
    execs: dict[str, float] = {k: 0.0 for k in engines}
    results: dict[str, list] = {}
    for r in range(rounds):
        order = list(engines) if r % 2 == 0 else list(reversed(engines))
        for name in order:
            t0 = time.perf_counter()
            res = [engines[name].compile(t) for t in texts]
            times[name].append(time.perf_counter() - t0)
            execs[name] += exec_seconds(res)
            results.setdefault(name, res)
    mism = [i for i, (a, b) in enumerate(zip(results["local"], results["endpoint"], strict=True)) if not same(a, b)]
    n = len(texts) * rounds
    out["desq_fixtures"] = {
        "questions": len(texts), "rounds": rounds, "ok": sum(r.status == "ok" for r in results["local"]),
        "mismatches": len(mism),
        **{f"{k}_qps": n / sum(v) for k, v in times.items()},
        **{f"{k}_execute_s_per_q": execs[k] / n for k in engines},
    }
    for i in mism[:5]:
        print(f"  MISMATCH fixture {i}: {results['local'][i].status} vs {results['endpoint'][i].status}")
    if sq and (StoreLayout.of(store).current / "cases").is_dir():
        out["sq_cases"] = ask_bench(engines, store, remote, sq)
    for eng in engines.values():
        eng.close()
    return out


def ask_bench(engines: dict, store: Path, remote: Path, n: int) -> dict:
    from eval.loaders import load, resolve_benchmark
    from kbqa.settings import get_translator_settings

    path, fmt, name = resolve_benchmark("simplequestions-valid")
    records = [r for r in load(path, fmt, dataset=name) if r.usable][:n]
    results, times, execs = {}, {}, {}
    for key, eng in engines.items():
        eng.settings = get_translator_settings(translator="cases")
        # scored questions are never their own case (as kbqa eval does)
        eng.translator.exclude({r.id for r in records}, {r.question for r in records})
        eng.ask(records[0].question)  # warm-up
        t0 = time.perf_counter()
        results[key] = [eng.ask(r.question, qid=r.id) for r in records]
        times[key] = time.perf_counter() - t0
        execs[key] = exec_seconds(results[key])
    mism = [r.id for r, a, b in zip(records, results["local"], results["endpoint"], strict=True) if not same(a, b)]
    for qid in mism[:5]:
        print(f"  MISMATCH {qid}")
    return {"questions": len(records), "answered": sum(r.status == "ok" for r in results["local"]),
            "mismatches": len(mism), **{f"{k}_qps": len(records) / v for k, v in times.items()},
            **{f"{k}_execute_s_per_q": execs[k] / len(records) for k in times}}


# ---- 2. label memory -----------------------------------------------------------------------------------
def rows_of(store: Path) -> dict[str, tuple]:
    mem = LabelMemory(StoreLayout.of(store).labels, readonly=True)
    out = {r.id: (r.kind, r.label, tuple(sorted(r.aliases)), r.description, r.popularity) for r in mem.iter_rows()}
    mem.close()
    return out


def label_memory(url: str, work: Path, page_sizes: list[int]) -> dict:
    sample = get_sample("wikidata-mini")
    t0 = time.perf_counter()
    rep = ingest(sample.paths(), work / "dump", profile=sample.profile, progress=False)
    dump_s = time.perf_counter() - t0
    out: dict = {"dump": {"rows": rep.label_rows, "seconds": dump_s, "rows_per_s": rep.label_rows / dump_s,
                          "triples": rep.triples_added}}
    dump = rows_of(work / "dump")
    for size in page_sizes:
        r = ingest_endpoint(url, work / f"endpoint-{size}", profile="wikidata", page_size=size, progress=False)
        got = rows_of(work / f"endpoint-{size}")
        out[f"endpoint_page_{size}"] = {
            "rows": r.label_rows, "seconds": r.seconds, "rows_per_s": r.label_rows / r.seconds,
            "result_rows_per_s": r.rows_per_s, "pages": r.pages, "phases": r.phases,
            "rows_differing_from_dump": sum(1 for k, v in got.items() if dump.get(k) != v),
            "dump_rows_without_text": sum(1 for k in dump if k not in got)}
    return out


# ---- 3. vectors -----------------------------------------------------------------------------------------
MEASURE = """
import json, sys, time, resource
def rss():
    return int(open('/proc/self/statm').read().split()[1]) * 4096
from grounding.vector_index import VectorIndex
import hnswlib, numpy
before = rss(); t0 = time.perf_counter()
vi = VectorIndex.load(__import__('pathlib').Path({folder!r}))
print(json.dumps({{"rss_bytes": rss() - before, "load_s": time.perf_counter() - t0}}))
"""


def measure_load(folder: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", MEASURE.format(root=str(ROOT), folder=str(folder))],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def vectors(store: Path, work: Path) -> dict:
    from grounding.vector_index import ALIAS_BASE, VectorIndex

    folder = StoreLayout.of(store).index_dir
    vi = VectorIndex.load(folder)
    idx = vi.indexes["entity"]
    labels = np.asarray(idx.get_ids_list(), dtype=np.int64)
    vecs = np.asarray(idx.get_items(labels, return_type="numpy"), dtype=np.float32)
    rows = labels.copy()
    alias = labels >= ALIAS_BASE
    rows[alias] = vi.alias_rowids[labels[alias] - ALIAS_BASE]  # -1: an alias of a removed row
    keep = rows >= 0
    labels, vecs, rows = labels[keep], vecs[keep], rows[keep]
    is_alias = labels >= ALIAS_BASE
    one = work / "one"
    t0 = time.perf_counter()
    single = VectorIndex(dim=vi.dim)
    single.add("entity", rows, vecs, is_alias)
    single.save(one)
    build_s = time.perf_counter() - t0
    one_disk = sum(p.stat().st_size for p in one.iterdir())
    queries = vecs[np.random.default_rng(0).choice(len(vecs), min(50, len(vecs)), replace=False)]
    t = []
    for q in queries:
        t0 = time.perf_counter()
        single.search(q, 30)
        t.append(time.perf_counter() - t0)
    one_mem = measure_load(one)
    return {"entity_vectors": int(len(rows)), "rows": int(len(np.unique(rows))), "one_index_disk_bytes": one_disk,
            "one_index_rss_bytes": one_mem["rss_bytes"], "one_index_load_s": one_mem["load_s"],
            "disk_bytes_per_vector": one_disk / len(rows), "rss_bytes_per_vector": one_mem["rss_bytes"] / len(rows),
            "build_s": build_s, "search_p50_s": statistics.median(t)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", type=Path, default=ROOT / ".kbqa" / "stores" / "wikidata-mini")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sq", type=int, default=60, help="SimpleQuestions valid questions through `ask` (0: none)")
    ap.add_argument("--page-sizes", default="10000,50000")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    store = args.store
    if not (StoreLayout.of(store).index_dir / "meta.json").is_file():
        print("the store has no grounding index (kbqa index): DeSQ fixtures that guess no URI will fail at ground")
    report: dict = {"load_average_start": load_average(), "cpus": os.cpu_count()}
    print(f"load average at start: {report['load_average_start']} ({os.cpu_count()} cores)")
    work = Path(tempfile.mkdtemp(prefix="kbqa-bench-endpoint-"))
    try:
        with OxigraphServer(store) as srv:
            report["server"] = srv.url
            remote = remote_copy(store, work / "remote", srv.url)
            report["pipeline"] = pipeline(store, remote, args.rounds, args.sq)
            print(json.dumps(report["pipeline"], indent=1))
            report["label_memory"] = label_memory(srv.url, work, [int(x) for x in args.page_sizes.split(",")])
            print(json.dumps(report["label_memory"], indent=1))
        report["vectors"] = vectors(store, work)
        print(json.dumps(report["vectors"], indent=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report["load_average_end"] = load_average()
    print(f"load average at end: {report['load_average_end']}")
    if args.out:
        args.out.write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
