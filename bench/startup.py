"""Start-up benchmark (issue 17): fresh-process `kbqa ask` wall time, `kbqa index` time, `kbqa serve` RSS,
and the embedders' throughput and query-encode latency, the static default against MiniLM in one run.

  python -m bench.startup --store .kbqa/stores/wikidata-mini --minilm-store DIR [--index minilm-static] --out F

`--store` is indexed (and has a case bank) with the default embedder, `--minilm-store` the same KB with
`--embedder minilm` (`kbqa index --store DIR --embedder minilm`, `kbqa cases build --store DIR --limit 5000`).
`--index E` also times `kbqa index --rebuild --embedder E` on a scratch copy of `--store` (minutes for MiniLM).
Prints a summary and writes JSON (--out); not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

BIN = Path(sys.executable).parent
QUESTION = "what city is the birthplace of lily tomlin"
ENV = {**os.environ, "HF_HUB_OFFLINE": "1"}


def wall(cmd: list[str], runs: int) -> dict:
    """Median and spread of the wall time of a fresh process, after one unmeasured run (warm page cache), and
    its median CPU time (user + sys), which a loaded machine inflates far less than the wall time."""
    subprocess.run(cmd, capture_output=True, env=ENV, check=False)
    times, cpu = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=ENV, check=False)
        times.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-1000:]}")
    return {"median_s": round(statistics.median(times), 3), "min_s": round(min(times), 3),
            "max_s": round(max(times), 3), "cpu_median_s": round(statistics.median(cpu), 3), "runs": runs}


def index_time(store: Path, embedder: str) -> dict:
    """`kbqa index --rebuild --embedder E` on a scratch copy of the store, timed as a fresh process."""
    with tempfile.TemporaryDirectory(prefix="idx-bench-") as tmp:
        copy = Path(tmp) / store.name
        shutil.copytree(store, copy, ignore=shutil.ignore_patterns("index", "index.old", "cases"))
        t0 = time.perf_counter()
        proc = subprocess.run([str(BIN / "kbqa"), "index", "--store", str(copy), "--rebuild", "--embedder", embedder,
                               "--format", "json"], capture_output=True, text=True, env=ENV, check=True)
        secs = time.perf_counter() - t0
        stats = json.loads(proc.stdout)
    return {"wall_s": round(secs, 1), "rows": stats["rows"], "texts": stats["embedded_texts"],
            "rows_per_s": round(stats["rows"] / secs), "peak_rss_mb": round(stats["peak_rss_mb"])}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss_mb(pid: int) -> dict:
    status = Path(f"/proc/{pid}/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return {k: round(int(fields[k].split()[0]) / 1024) for k in ("VmRSS", "VmHWM")}


def serve_rss(store: Path, questions: int = 5) -> dict:
    """RSS of `kbqa serve` after start-up and after answering a few questions (the warm-up)."""
    port = _free_port()
    proc = subprocess.Popen([str(BIN / "kbqa"), "serve", "--store", str(store), "--port", str(port),
                             "--log-level", "warning"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    base = f"http://127.0.0.1:{port}"
    try:
        t0 = time.perf_counter()
        while True:
            try:
                urllib.request.urlopen(base + "/healthz", timeout=5).read()
                break
            except OSError:
                if proc.poll() is not None or time.perf_counter() - t0 > 120:
                    raise SystemExit("kbqa serve did not start") from None
                time.sleep(0.2)
        ready_s = time.perf_counter() - t0
        started = _rss_mb(proc.pid)
        body = json.dumps({"question": QUESTION}).encode()
        for _ in range(questions):
            req = urllib.request.Request(base + "/v1/ask", data=body, headers={"Content-Type": "application/json"})
            urllib.request.urlopen(req, timeout=120).read()
        warm = _rss_mb(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return {"ready_s": round(ready_s, 2), "rss_started_mb": started["VmRSS"], "rss_warm_mb": warm["VmRSS"],
            "peak_mb": warm["VmHWM"]}


def embedder_speed(name: str, store: Path, n_rows: int, n_queries: int) -> dict:
    """Rows/s embedding real label-memory rows (label: description + aliases) and the p50 of one query."""
    from grounding.build import open_memory
    from grounding.embedder import get_embedder, row_texts

    t0 = time.perf_counter()
    emb = get_embedder(name)
    load_s = time.perf_counter() - t0
    mem = open_memory(store)
    rows = []
    for r in mem.iter_rows():
        rows.append(r)
        if len(rows) >= n_rows:
            break
    mem.close()
    texts = [t for r in rows for t in row_texts(r.label, r.description, r.aliases)]
    emb.encode(texts[:64], progress=False)  # warm-up
    t0 = time.perf_counter()
    emb.encode(texts, progress=False)
    secs = time.perf_counter() - t0
    one = []
    for r in rows[:n_queries]:
        t0 = time.perf_counter()
        emb.encode_one(r.label or r.id)
        one.append(time.perf_counter() - t0)
    return {"load_s": round(load_s, 2), "rows": len(rows), "texts": len(texts), "rows_per_s": round(len(rows) / secs),
            "texts_per_s": round(len(texts) / secs), "query_encode_p50_ms": round(statistics.median(one) * 1000, 3)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", type=Path, default=Path(".kbqa/stores/wikidata-mini"))
    ap.add_argument("--minilm-store", type=Path, default=None, help="the same KB indexed with --embedder minilm")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--index", action="append", default=[], metavar="EMBEDDER",
                    help="also time `kbqa index --rebuild --embedder EMBEDDER` on a copy of --store (repeatable)")
    ap.add_argument("--embed-rows", type=int, default=5000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    stores = {"minilm-static": args.store, **({"minilm": args.minilm_store} if args.minilm_store else {})}
    fig: dict = {"question": QUESTION, "python_c_pass": wall([sys.executable, "-c", "pass"], args.runs)}
    print(f"python -c pass: {fig['python_c_pass']}", flush=True)
    for name, store in stores.items():
        part = fig[name] = {"store": str(store)}
        part["ask"] = wall([str(BIN / "kbqa"), "ask", QUESTION, "--store", str(store)], args.runs)
        print(f"{name}: kbqa ask {part['ask']}", flush=True)
        part["serve"] = serve_rss(store)
        print(f"{name}: kbqa serve {part['serve']}", flush=True)
        if name in args.index:
            part["index"] = index_time(args.store, name)
            print(f"{name}: kbqa index {part['index']}", flush=True)
    for name in stores:  # in-process last: MiniLM's torch import must not slow the fresh processes above
        fig[name]["embedder"] = embedder_speed(name, args.store, args.embed_rows, args.queries)
        print(f"{name}: embedder {fig[name]['embedder']}", flush=True)
    text = json.dumps(fig, indent=1)
    print(text)
    if args.out:  # the JSON BENCHMARKS.md quotes
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
