"""Grounding benchmark: accuracy on real gold links, and speed at 1M rows against rapidfuzz over all labels.

  python -m bench.grounding accuracy --store .kbqa/stores/wikidata-mini
  python -m bench.grounding accuracy --store .kbqa/stores/wikidata-mini --vector-store hnsw,compact
  python -m bench.grounding speed --rows 1000000 --queries 300 [--vector-store compact|milvus]

Reads ../shared/data (the benchmark inputs); not a test. Prints a summary and writes JSON (--out).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import resource
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

from grounding.build import build_index
from grounding.ground import Grounder
from grounding.text import normalize
from kb_dumps.label_memory import LabelMemory
from kb_dumps.layout import StoreLayout

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
WD = "http://www.wikidata.org/entity/"
ROLE_TOKEN = re.compile(r"\b(?:wdt|p|ps|pq):([A-Za-z_][\w]*)")


# ---- accuracy ------------------------------------------------------------------------------
def property_pairs(path: Path) -> Counter:
    """(property name as written, gold PID) from the aligned name/PID SPARQL of each line."""
    pairs: Counter = Counter()
    for item in json.loads(path.read_text(encoding="utf-8")):
        names = ROLE_TOKEN.findall(item["output"])
        pids = ROLE_TOKEN.findall(item["sparql"])
        if len(names) != len(pids):
            continue  # not aligned token by token; skip rather than guess
        for name, pid in zip(names, pids, strict=True):
            if re.fullmatch(r"P\d+", pid) and not re.fullmatch(r"P\d+", name):
                pairs[(name, pid)] += 1
    return pairs


def entity_pairs(path: Path) -> Counter:
    pairs: Counter = Counter()
    for item in json.loads(path.read_text(encoding="utf-8")):
        for mention, qid in re.findall(r"([^;:\n]+?) with QID (Q\d+)", item["input"]):
            pairs[(mention.strip(), qid)] += 1
    return pairs


def simplequestions_mentions(path: Path, memory: LabelMemory, limit: int) -> list[tuple[str, str]]:
    """(longest question n-gram fuzzily matching the gold subject's label, subject QID)."""
    from rapidfuzz import fuzz

    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        if len(parts) < 4:
            continue
        row = memory.get(WD + parts[0])
        if row is None or not row.label:
            continue
        target = normalize(row.label)
        words = parts[3].split()
        best = None
        for n in range(min(len(words), 12), 0, -1):
            for i in range(len(words) - n + 1):
                gram = " ".join(words[i:i + n]).strip("?.,!'\"")
                if fuzz.ratio(normalize(gram), target) >= 80:
                    best = gram
                    break
            if best:
                break
        if best:
            out.append((best, WD + parts[0]))
        if len(out) >= limit:
            break
    return out


def run_queries(g: Grounder, queries: list[tuple[str, str | None, str]], kind: str | None) -> list[dict]:
    """Per query: gold rank in the top 10 (None when absent) and the best candidate's score and id."""
    out = []
    for label, desc, gold in queries:
        res = g.search(label, desc, kind, k=10)
        ids = [c.id for c in res.candidates]
        best = (res.candidates or res.below_threshold or [None])[0]
        out.append({"label": label, "gold": gold, "rank": ids.index(gold) if gold in ids else None,
                    "best": best.id if best else None, "score": best.score if best else 0.0})
    return out


def summarise(records: list[dict]) -> dict:
    """top-1 / top-10, plus top-1 accuracy per score bucket (how well the score is calibrated)."""
    n = max(len(records), 1)
    buckets: dict[str, list[int]] = {}
    for r in records:
        b = f"{min(int(r['score'] * 10), 9) / 10:.1f}"
        buckets.setdefault(b, [0, 0])
        buckets[b][0] += r["best"] == r["gold"]
        buckets[b][1] += 1
    return {"n": len(records), "top1": round(sum(r["rank"] == 0 for r in records) / n, 4),
            "top10": round(sum(r["rank"] is not None for r in records) / n, 4),
            "top1_by_score": {b: f"{c}/{t}" for b, (c, t) in sorted(buckets.items())}}


def reindexed(store: Path, vector_store: str, work: Path) -> Path:
    """A bare store in `work` with `store`'s label memory and manifest, indexed with `vector_store` (the store
    itself is left as it is). Grounding without KB context needs nothing else."""
    layout = StoreLayout.of(store)
    work.mkdir(parents=True, exist_ok=True)
    shutil.copy2(layout.labels, work / "labels.sqlite")
    if layout.manifest_path.is_file():
        shutil.copy2(layout.manifest_path, work / "manifest.json")
    t0 = time.perf_counter()
    stats = build_index(work, vector_store=vector_store, progress=False)
    print(f"indexed {stats.vectors} vectors into {vector_store} in {time.perf_counter() - t0:.1f} s", flush=True)
    return work


def accuracy(args: argparse.Namespace) -> dict:
    """With `--vector-store A,B`: the store's label memory indexed with each in turn, the same queries on each."""
    specs = [s for s in (args.vector_store or "").split(",") if s]
    if not specs:
        return _accuracy(args, args.store)
    out = {}
    for spec in specs:
        work = Path(tempfile.mkdtemp(prefix="gbench-acc-"))
        try:
            print(f"== {spec}", flush=True)
            out[spec] = _accuracy(argparse.Namespace(**{**vars(args), "vector_store": spec}),
                                  reindexed(args.store, spec, work))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return out if len(specs) > 1 else out[specs[0]]


def _accuracy(args: argparse.Namespace, store: Path) -> dict:
    g = Grounder(store, threshold=args.threshold)
    mem = g.memory
    ali = DATA / "wikiwebquestions" / "wikisp_train_alignments.json"
    props = property_pairs(ali)
    def labelled(iri: str) -> bool:  # rows without any label (ids only seen as objects) cannot be grounded by name
        row = mem.get(iri)
        return bool(row and row.label)

    prop_q = [(name, None, WD + pid) for (name, pid) in props if labelled(WD + pid)]
    desc_q = []
    for pid in sorted({pid for (_, pid) in props}):
        row = mem.get(WD + pid)
        if row and row.description:
            desc_q.append(("", row.description, WD + pid))
    ents = entity_pairs(ali)
    ent_q = [(m, None, WD + q) for (m, q) in ents if labelled(WD + q)]
    ent_unlabelled = sum(1 for (_, q) in ents if mem.get(WD + q) and not labelled(WD + q))
    lex = g.lexical.parts.get("entity")
    unamb = {q[0] for q in ent_q
             if lex is None or len({int(lex.a["names_rowid"][n]) for n in lex.exact(normalize(q[0]))}) <= 1}
    sq = [(m, None, gold) for m, gold in simplequestions_mentions(
        DATA / "simplequestions-wikidata" / "valid.txt", mem, args.sq_limit)]
    out = {"store": str(args.store), "vector_store": args.vector_store or g.meta.get("vector_store", "hnsw"),
           "threshold": args.threshold, "limit": args.limit,
           "coverage": {"property_pairs": len(props), "property_pairs_in_kb": len(prop_q),
                        "entity_hints": len(ents), "entity_hints_in_kb_labelled": len(ent_q),
                        "entity_hints_in_kb_without_label": ent_unlabelled}}
    for name, qs, kind in (("properties_from_names", prop_q, "property"),
                           ("properties_from_description", desc_q, "property"),
                           ("entities_wikisp_hints", ent_q, "entity"),
                           ("entities_simplequestions_valid", sq, "entity")):
        qs = qs[:args.limit] if args.limit else qs
        t0 = time.perf_counter()
        for suffix, kd in (("", kind), ("_kind_off", None)):
            recs = run_queries(g, qs, kd)
            out[name + suffix] = summarise(recs)
            if name == "entities_wikisp_hints":  # the same queries, restricted to unambiguous mentions
                out["entities_wikisp_unambiguous" + suffix] = summarise([r for r in recs if r["label"] in unamb])
        out[name]["seconds"] = round(time.perf_counter() - t0, 1)
    for name in ("properties_from_names", "properties_from_description", "entities_wikisp_hints",
                 "entities_wikisp_unambiguous", "entities_simplequestions_valid"):
        on, off = out[name], out[name + "_kind_off"]
        print(f"{name:34s} n={on['n']:5d}  top1 {on['top1']:.3f}  top10 {on['top10']:.3f}   "
              f"(kind off: {off['top1']:.3f} / {off['top10']:.3f})", flush=True)
    g.close()
    return out


# ---- speed ---------------------------------------------------------------------------------
def real_rows() -> list[tuple[str, str, str, str]]:
    """(id, kind, label, description) of every real Wikidata label in ../shared/data."""
    rows: dict[str, tuple[str, str, str, str]] = {}
    for p in json.loads((DATA / "wikidata" / "properties_with_descriptions.json").read_text(encoding="utf-8")):
        rows[p["id"]] = (p["id"], "property", p["label"], p.get("description") or "")
    for line in (DATA / "wikidata" / "properties_all_labels.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        f = line.split("\t")
        if len(f) > 1 and f[0] not in rows:
            rows[f[0]] = (f[0], "property", f[1], "")
    for name in ("entity_labels_lcquad2.json",):
        for qid, label in json.loads((DATA / "wikidata" / name).read_text(encoding="utf-8")).items():
            if isinstance(label, str) and label:
                rows.setdefault(qid, (qid, "entity", label, ""))
    for label, qid in json.loads((DATA / "wikidata" / "entity_labels_simplequestions_en.json").read_text(
            encoding="utf-8")).items():
        rows.setdefault(qid, (qid, "entity", label, ""))
    return list(rows.values())


def perturb(label: str, rng: random.Random) -> str:
    """A query as a person types it: lower case, sometimes one edit."""
    q = label.lower() if rng.random() < 0.5 else label
    if len(q) > 5 and rng.random() < 0.5:
        i = rng.randrange(1, len(q) - 1)
        q = q[:i] + q[i + 1:] if rng.random() < 0.5 else q[:i] + q[i + 1] + q[i] + q[i + 2:]
    return q


def pct(xs: list[float]) -> dict:
    a = np.asarray(xs) * 1000
    return {"p50_ms": round(float(np.percentile(a, 50)), 3), "p99_ms": round(float(np.percentile(a, 99)), 3)}


def _build_child(store: str, vector_store: str | None, batch_size: int | None) -> dict:
    """`kbqa index`'s own code path, in a fresh process: its peak RSS is the build's alone."""
    stats = build_index(store, vector_store=vector_store, batch_size=batch_size, progress=False)
    return stats.to_dict()


def _vector_recall(g: Grounder, queries: list[tuple[str, str]]) -> dict | None:
    """The compact store's list scan against an exhaustive scan of every list, on the same queries: top-10
    overlap of the vector search, and the hybrid top-10 recall of the gold row with each."""
    if not hasattr(g.vectors, "scan_rows"):
        return None
    overlap, hits = 0.0, [0, 0]
    for q, gold in queries:
        v = g.encode_query(q)
        found = []
        for i, scan in enumerate((g.vectors.scan_rows, 1 << 62)):
            saved, g.vectors.scan_rows = g.vectors.scan_rows, scan
            found.append({h.rowid for h in g.vectors.search(v, 10)})
            hits[i] += gold in [c.id for c in g.search(q, query_vector=v, k=10).candidates]
            g.vectors.scan_rows = saved
        overlap += len(found[0] & found[1]) / max(len(found[1]), 1)
    n = max(len(queries), 1)
    return {"queries": len(queries), "vector_top10_overlap": round(overlap / n, 4),
            "hybrid_top10_recall_lists": round(hits[0] / n, 4), "hybrid_top10_recall_exhaustive": round(hits[1] / n, 4)}


def _query_child(store: str, queries: list[tuple[str, str, str]], exact_queries: int = 0) -> dict:
    """Open the index as a query process does and time each part of `search`; peak RSS is the query side's.
    Recall counts the gold row in the top 10 (`hybrid_top10_recall`), and also a row with the gold's own label
    (`hybrid_top10_recall_label`): rows that share the gold's label text are told apart by nothing in a name
    query, and the generated rows repeat real labels more often the more there are of them."""
    t0 = time.perf_counter()
    g = Grounder(store)
    load_s = time.perf_counter() - t0
    enc, lexs, vecs_t, hyb, hits, label_hits = [], [], [], [], 0, 0
    for q, gold, gold_label in queries:
        t0 = time.perf_counter()
        v = g.encode_query(q)
        enc.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        g.lexical.search(q, 30)
        lexs.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        g.vectors.search(v, 30)
        vecs_t.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        res = g.search(q, query_vector=v, k=10)
        hyb.append(time.perf_counter() - t0)
        hits += gold in [c.id for c in res.candidates]
        label_hits += any(c.id == gold or c.label.lower() == gold_label.lower() for c in res.candidates)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # before the exhaustive scans below
    recall = _vector_recall(g, [(q, gold) for q, gold, _ in queries[:exact_queries]]) if exact_queries else None
    g.close()
    return {"index_load_s": round(load_s, 2), "encode": pct(enc), "lexical": pct(lexs), "vector": pct(vecs_t),
            "hybrid_excl_encode": pct(hyb), "hybrid_top10_recall": round(hits / max(len(queries), 1), 4),
            "hybrid_top10_recall_label": round(label_hits / max(len(queries), 1), 4), "vs_exhaustive": recall,
            "query_peak_rss_mb": round(peak, 1)}


def _in_fresh_process(fn_name: str, *args):  # noqa: ANN002, ANN202 - a function of this module, its result
    import importlib
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    fn = getattr(importlib.import_module("bench.grounding"), fn_name)  # pickled by module name, also under -m
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(fn, *args).result()


def same_text_shares(labels: list[str], gold_labels: list[str]) -> dict[str, float]:
    """The share of queries whose gold label (case aside) is also the label of at least 1 and of at least 10 other
    rows: what no name search can tell apart, and what grows with the generated rows."""
    wanted = {t.lower() for t in gold_labels}
    counts: Counter[str] = Counter(t.lower() for t in labels if t.lower() in wanted)
    n = max(len(gold_labels), 1)
    return {"at_least_1": round(sum(counts[t.lower()] >= 2 for t in gold_labels) / n, 4),
            "at_least_10": round(sum(counts[t.lower()] >= 11 for t in gold_labels) / n, 4)}


def generated_rows(real: list[tuple[str, str, str, str]], n: int, rng: random.Random):  # noqa: ANN201
    """The real rows, then synthetic entity labels (real words, real label lengths) up to `n` rows, streamed."""
    yield from real[:n]
    words = [w for r in real for w in r[2].split()]
    lengths = [len(r[2]) for r in real]
    for i in range(len(real), n):
        target, parts = rng.choice(lengths), []
        while sum(len(p) + 1 for p in parts) < target:
            parts.append(rng.choice(words))
        yield (f"S{i}", "entity", " ".join(parts), "")


def speed(args: argparse.Namespace) -> dict:
    """A label memory of `--rows` rows (the real labels, then generated ones), indexed by `build_index` (what
    `kbqa index` runs: the default static embedder, every row embedded) in one process and queried in
    another, so each peak RSS is its own; rapidfuzz over every label in this one, on the same queries."""
    from rapidfuzz import fuzz, process

    rng = random.Random(7)
    real = real_rows()
    tmp = Path(args.workdir or tempfile.mkdtemp(prefix="gbench-"))
    tmp.mkdir(parents=True, exist_ok=True)
    saved_build = tmp / "build.json"
    reuse = args.reuse_index and saved_build.is_file()
    mem = None if reuse else LabelMemory(tmp / "labels.sqlite")
    gen = mem.begin_generation() if mem is not None else 0
    t0 = time.perf_counter()
    labels: list[str] = []  # every label, for the rapidfuzz baseline (row i: real[i] or the synthetic S{i})
    chunk: dict[str, dict] = {}
    for r in generated_rows(real, args.rows, rng):  # also when reused: the queries come from the same generator
        labels.append(r[2])
        if mem is not None:
            chunk[WD + r[0]] = {"label": r[2], "description": r[3], "kind": r[1]}
            if len(chunk) >= 50_000:
                mem.merge_texts(chunk, gen)
                chunk = {}
    if mem is not None:
        if chunk:
            mem.merge_texts(chunk, gen)
        mem.commit()
        mem.close()
    (tmp / "manifest.json").write_text(json.dumps({"profile": "wikidata"}), encoding="utf-8")
    n_real = min(len(real), args.rows)
    fig: dict = {"rows": len(labels), "real_labels": n_real, "vector_store": args.vector_store or "hnsw",
                 "memory_write_s": round(time.perf_counter() - t0, 1)}
    print(f"memory: {len(labels)} rows ({n_real} real) in {fig['memory_write_s']} s", flush=True)
    if reuse:
        built = json.loads(saved_build.read_text(encoding="utf-8"))
        print("index: reused from an earlier run (its build figures)", flush=True)
    else:
        built = _in_fresh_process("_build_child", str(tmp), args.vector_store, args.batch_size)
        saved_build.write_text(json.dumps(built), encoding="utf-8")
    fig.update({"embedder": built["model"], "vectors": built["vectors"], "build_s": round(built["seconds"], 1),
                "build_rows_per_s": round(built["rows_per_s"], 1), "build_peak_rss_mb": round(built["peak_rss_mb"], 1),
                "index_disk_mb": round(sum(p.stat().st_size for p in (tmp / "index").rglob("*") if p.is_file()) / 2**20, 1)})
    print(f"index ({fig['embedder']}, {fig['vector_store']}): {fig['vectors']} vectors in {fig['build_s']} s "
          f"({fig['build_rows_per_s']} rows/s), peak RSS {fig['build_peak_rss_mb']} MB, {fig['index_disk_mb']} MB on disk",
          flush=True)
    # queries: real labels (the first --query-pool rows), perturbed as users type them
    pool = real[:min(args.query_pool, n_real)]
    queries = [(perturb(r[2], rng), WD + r[0], r[2]) for r in rng.sample(pool, min(args.queries, len(pool)))]
    fig["queries_whose_label_other_rows_share"] = same_text_shares(labels, [q[2] for q in queries])
    fig.update(_in_fresh_process("_query_child", str(tmp), queries, args.exact_queries))
    print(f"query process (before the rapidfuzz baseline, slow at scale): {json.dumps(fig)}", flush=True)
    rf, rf_hits, rf_label_hits = [], 0, 0
    for q, gold, gold_label in queries[:args.rapidfuzz_queries]:
        t0 = time.perf_counter()
        top = process.extract(q, labels, scorer=fuzz.WRatio, limit=10)
        rf.append(time.perf_counter() - t0)
        rf_hits += any(WD + (real[i][0] if i < n_real else f"S{i}") == gold for _, _, i in top)
        rf_label_hits += any(WD + (real[i][0] if i < n_real else f"S{i}") == gold or text.lower() == gold_label.lower()
                             for text, _, i in top)
    fig.update({"rapidfuzz_extract_all": pct(rf), "rapidfuzz_top10_recall": round(rf_hits / max(len(rf), 1), 4),
                "rapidfuzz_top10_recall_label": round(rf_label_hits / max(len(rf), 1), 4),
                "queries": len(queries), "rapidfuzz_queries": len(rf)})
    fig["speedup_lexical_vs_rapidfuzz_p50"] = round(fig["rapidfuzz_extract_all"]["p50_ms"] / fig["lexical"]["p50_ms"], 1)
    fig["speedup_hybrid_vs_rapidfuzz_p50"] = round(
        fig["rapidfuzz_extract_all"]["p50_ms"] / fig["hybrid_excl_encode"]["p50_ms"], 1)
    for key in ("encode", "lexical", "vector", "hybrid_excl_encode", "rapidfuzz_extract_all"):
        print(f"{key:24s} p50 {fig[key]['p50_ms']:8.2f} ms   p99 {fig[key]['p99_ms']:8.2f} ms", flush=True)
    if fig.get("vs_exhaustive"):
        print(f"compact lists vs an exhaustive scan: {fig['vs_exhaustive']}", flush=True)
    print(f"peak RSS: build {fig['build_peak_rss_mb']} MB, query {fig['query_peak_rss_mb']} MB; top-10 recall: hybrid "
          f"{fig['hybrid_top10_recall']} (a row with the gold's label: {fig['hybrid_top10_recall_label']}), rapidfuzz "
          f"{fig['rapidfuzz_top10_recall']} ({fig['rapidfuzz_top10_recall_label']}); gold labels other rows share: "
          f"{fig['queries_whose_label_other_rows_share']}; speed-up p50 vs rapidfuzz: lexical "
          f"{fig['speedup_lexical_vs_rapidfuzz_p50']}x, hybrid {fig['speedup_hybrid_vs_rapidfuzz_p50']}x", flush=True)
    if not args.workdir:
        shutil.rmtree(tmp, ignore_errors=True)
    return fig


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="part", required=True)
    a = sub.add_parser("accuracy", help="top-1/top-10 on real gold links (needs the wikidata-mini store)")
    a.add_argument("--store", type=Path, default=Path(".kbqa/stores/wikidata-mini"))
    a.add_argument("--threshold", type=float, default=0.0, help="0 scores every query (default)")
    a.add_argument("--sq-limit", type=int, default=500, help="SimpleQuestions valid questions to use")
    a.add_argument("--limit", type=int, default=0, help="the first N queries of each part (0: all); a slow vector "
                   "store (Milvus Lite) is compared with hnsw on the same N")
    s = sub.add_parser("speed", help="latency at scale against rapidfuzz over all labels")
    s.add_argument("--rows", type=int, default=1_000_000)
    s.add_argument("--queries", type=int, default=300)
    s.add_argument("--query-pool", type=int, default=20_000, help="queries are drawn from the first N real labels")
    s.add_argument("--rapidfuzz-queries", type=int, default=50, help="queries timed with rapidfuzz (slow)")
    s.add_argument("--reuse-index", action="store_true", help="with --workdir: query the memory and index an "
                   "earlier run with the same --rows left there (its build figures are reported)")
    s.add_argument("--exact-queries", type=int, default=30, help="queries whose compact-store top 10 is compared "
                   "with an exhaustive scan (after the timed ones)")
    s.add_argument("--batch-size", type=int, default=None, help="texts per embedding batch (default: the embedder's)")
    s.add_argument("--workdir", default=None, help="where the bench memory and index go (default: a temp dir, removed)")
    for p in (a, s):
        p.add_argument("--vector-store", default=None, metavar="SPEC",
                       help="as `kbqa index --vector-store` (default hnsw); accuracy: the store's label memory is "
                            "indexed again with it in a temporary folder (a comma list: with each, in one run)")
        p.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = ap.parse_args(argv)
    fig = accuracy(args) if args.part == "accuracy" else speed(args)
    if args.out:
        args.out.write_text(json.dumps(fig, indent=1), encoding="utf-8")
    print(json.dumps(fig, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
