"""Load test of `kbqa serve` on loopback: /sparql and /v1/generate under concurrent clients, against in-process calls.

    HF_HUB_OFFLINE=1 .venv/bin/python -m bench.server_load [--clients 20] [--seconds 30] [--rounds 2]

The store is `.kbqa/stores/wikidata-mini` when its grounding index is built, else a fresh copy of the
wikidata-mini sample (no index: guessed URIs checked against the label memory). The workload is the first
`--questions` questions of simplequestions-valid: their gold queries for /sparql, and for /v1/generate a
scripted model, the `replay` backend, whose recorded outputs are `decompose(gold)` (DeSQ with guessed URIs).

For each route: in-process calls (LocalStore.query, and Engine.ask with execution off on an Engine) for
`--baseline-seconds`, before and after the server runs; one HTTP client for the same time (the
per-request cost of HTTP); then `--clients` concurrent clients for `--seconds`, repeated `--rounds`
times with the server's memory (RSS of the server and its query workers) read after each round.
Prints one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import psutil

ROOT = Path(__file__).resolve().parent.parent
INDEXED = ROOT / ".kbqa" / "stores" / "wikidata-mini"


def pick_store(tmp: Path) -> tuple[Path, str]:
    if (INDEXED / "current" / "index" / "meta.json").is_file():
        return INDEXED, "wikidata-mini with its grounding index (.kbqa/stores/wikidata-mini)"
    from kb_dumps.ingest import ingest
    from kb_dumps.samples import get_sample

    sample = get_sample("wikidata-mini")
    store = tmp / "wikidata-mini"
    ingest(sample.paths(), store, profile=sample.profile, progress=False)
    return store, "a fresh wikidata-mini store without a grounding index"


def workload(store: Path, n: int, replay: Path) -> tuple[list[str], list[str]]:
    """(gold queries, questions) of the first n usable simplequestions-valid records; writes the replay file."""
    from eval.loaders import load_benchmark
    from kb_dumps.label_memory import LabelMemory
    from kb_dumps.layout import StoreLayout
    from kbqa.frontends.decompose import decompose

    memory = LabelMemory(StoreLayout.of(store).labels, readonly=True)
    queries, questions = [], []
    with open(replay, "w", encoding="utf-8") as f:
        for rec in load_benchmark("simplequestions-valid"):
            if len(questions) >= n:
                break
            if not rec.usable or not rec.sparql or not rec.question:
                continue
            dec = decompose(rec.sparql, labels=memory)
            if not dec.ok or not dec.desq_text or not dec.gold_sparql:
                continue
            f.write(json.dumps({"id": rec.id, "question": rec.question, "output": dec.desq_text}) + "\n")
            queries.append(dec.gold_sparql)
            questions.append(rec.question)
    memory.close()
    return queries, questions


def summary(latencies: list[float], seconds: float, statuses: dict[int, int], errors: int) -> dict:
    lat = sorted(latencies)
    pct = (lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1000) if lat else (lambda p: float("nan"))
    ok = statuses.get(200, 0)
    return {"requests": len(lat) + errors, "ok": ok, "statuses": statuses, "transport_errors": errors,
            "errors": len(lat) + errors - ok, "rps": round(len(lat) / seconds, 1), "p50_ms": round(pct(0.5), 1),
            "p99_ms": round(pct(0.99), 1), "mean_ms": round(statistics.fmean(lat) * 1000, 1) if lat else None}


async def load(url: str, bodies: list[Any], route: str, clients: int, seconds: float) -> dict:
    """`clients` concurrent keep-alive clients cycling through `bodies` for `seconds`."""
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    errors = 0
    end = time.perf_counter() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def client(i: int, http: httpx.AsyncClient) -> None:
        nonlocal errors
        k = i
        while time.perf_counter() < end:
            body = bodies[k % len(bodies)]
            k += clients
            t0 = time.perf_counter()
            try:
                if route == "/sparql":
                    res = await http.post(url + route, data={"query": body},
                                          headers={"accept": "application/sparql-results+json"})
                else:
                    res = await http.post(url + route, json=body)
                await res.aread()
            except httpx.HTTPError:
                errors += 1
                continue
            latencies.append(time.perf_counter() - t0)
            statuses[res.status_code] = statuses.get(res.status_code, 0) + 1

    t_start = time.perf_counter()
    async with httpx.AsyncClient(limits=limits, timeout=60) as http:
        await asyncio.gather(*(client(i, http) for i in range(clients)))
    return summary(latencies, time.perf_counter() - t_start, statuses, errors)


def in_process(store: Path, replay: Path, queries: list[str], questions: list[str], seconds: float) -> dict:
    """The same work without HTTP, one call at a time: LocalStore.query and Engine.ask with execution off."""
    from kb_dumps.store import LocalStore
    from kbqa.pipeline import Engine
    from kbqa.translators.replay import ReplayTranslator

    out = {}
    with LocalStore(store) as ls:
        ls.query("ASK {}")
        lat, k, end = [], 0, time.perf_counter() + seconds
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            ls.query(queries[k % len(queries)])
            lat.append(time.perf_counter() - t0)
            k += 1
        out["/sparql"] = summary(lat, sum(lat), {200: len(lat)}, 0)
    translator = ReplayTranslator(replay)
    with Engine(store, translator=translator) as engine:
        for q in questions:  # warm: grounding index, embedding model, query worker
            engine.ask(q, execute=False)
        lat, k, end = [], 0, time.perf_counter() + seconds
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            engine.ask(questions[k % len(questions)], execute=False)
            lat.append(time.perf_counter() - t0)
            k += 1
        out["/v1/generate"] = summary(lat, sum(lat), {200: len(lat)}, 0)
    return out


def rss_mb(proc: psutil.Process) -> dict:
    main = proc.memory_info().rss
    children = sum(c.memory_info().rss for c in proc.children(recursive=True))
    return {"server_mb": round(main / 2**20, 1), "with_workers_mb": round((main + children) / 2**20, 1)}


def start_server(store: Path, replay: Path, port: int) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "kbqa.cli", "serve", "--store", str(store), "--port", str(port),
                             "--translator", "replay", "--replay", str(replay), "--log-level", "warning"], env=env)
    return wait_healthy(proc, port, "the server")


def wait_healthy(proc: subprocess.Popen, port: int, what: str, timeout_s: float = 300) -> subprocess.Popen:
    """`proc` once its /healthz answers 200; SystemExit when it exits first or takes over `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited at startup")
        time.sleep(0.5)
    proc.kill()
    raise SystemExit(f"{what} did not start in {timeout_s:g} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=30.0, help="duration of each concurrent phase")
    ap.add_argument("--baseline-seconds", type=float, default=10.0)
    ap.add_argument("--rounds", type=int, default=2, help="concurrent phases per route (memory read after each)")
    ap.add_argument("--questions", type=int, default=50)
    ap.add_argument("--port", type=int, default=8765)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="kbqa-serve-bench-") as tmp:
        store, store_note = pick_store(Path(tmp))
        replay = Path(tmp) / "replay.jsonl"
        queries, questions = workload(store, args.questions, replay)
        report: dict[str, Any] = {"store": store_note, "queries": len(queries), "clients": args.clients,
                                  "seconds": args.seconds, "cpus": os.cpu_count(),
                                  "load_avg_start": [round(x, 2) for x in os.getloadavg()]}
        report["in_process"] = in_process(store, replay, queries, questions, args.baseline_seconds)
        proc = start_server(store, replay, args.port)
        url = f"http://127.0.0.1:{args.port}"
        try:
            server = psutil.Process(proc.pid)
            gen_bodies = [{"question": q} for q in questions]
            for body in gen_bodies:  # warm every path once
                httpx.post(url + "/v1/generate", json=body, timeout=60)
            for q in queries:
                httpx.post(url + "/sparql", data={"query": q})
            report["rss_after_warmup"] = rss_mb(server)
            for route, bodies in (("/sparql", queries), ("/v1/generate", gen_bodies)):
                one = asyncio.run(load(url, bodies, route, 1, args.baseline_seconds))
                rounds = []
                for _ in range(args.rounds):
                    r = asyncio.run(load(url, bodies, route, args.clients, args.seconds))
                    r["rss_after"] = rss_mb(server)
                    rounds.append(r)
                report[route] = {"one_client": one, "concurrent": rounds}
        finally:
            proc.terminate()
            report["server_exit"] = proc.wait(60)
        # in-process again: other jobs on the machine move the figures, so the baseline brackets the HTTP runs
        report["in_process_after"] = in_process(store, replay, queries, questions, args.baseline_seconds)
        for route in ("/sparql", "/v1/generate"):
            base = statistics.fmean([report[k][route]["rps"] for k in ("in_process", "in_process_after")])
            base_p50 = statistics.fmean([report[k][route]["p50_ms"] for k in ("in_process", "in_process_after")])
            report[route]["rps_vs_in_process"] = round(report[route]["concurrent"][-1]["rps"] / base, 3)
            report[route]["p50_one_client_minus_in_process_ms"] = round(
                report[route]["one_client"]["p50_ms"] - base_p50, 1)
        report["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
