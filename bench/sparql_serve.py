"""`kbqa serve` /sparql against `oxigraph serve-read-only` on copies of one store, driven by `wrk` on loopback.

    HF_HUB_OFFLINE=1 .venv/bin/python -m bench.sparql_serve [--seconds 10] [--connections 20] [--threads 2]

Both servers get a copy of a fresh wikidata-mini store and the same queries, POST application/sparql-query;
`wrk` (Debian's, installed with apt-get when missing) sends them from a Lua script. Two query mixes:

- `lookup`: one-hop lookups of the sample's entities (`SELECT ?p ?o WHERE { <s> ?p ?o } LIMIT 50`), nearly
  empty work for the engine: it measures the HTTP path. Once with a new text per request (a counter in a
  trailing comment: every check and parse is a cache miss), once with repeated texts.
- `gold`: the gold queries of the Wikidata benchmarks bundled in eval/benchmarks (the first `--gold-per-set`
  usable records of each of simplequestions-valid, lcquad2-dev, qald7-train, rubq2-dev and wwq-dev) over the same
  store, with the profile's prefixes declared in the text (oxigraph does not predeclare them), new texts per
  request. Only queries that cannot run on either server are left out: those the check refuses (SERVICE
  wikibase:label: oxigraph would call the network) and those that fail or pass 1 s on the local store.

Prints, per mix, server and mode: requests/s, p50 / p99 latency, server CPU per request (the server and its
worker processes), and the kbqa / oxigraph ratio; one JSON object at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent

LUA = """
local queries = %(queries)s
local distinct = %(distinct)s
local n = 0
local tid = 0
function init(args) tid = math.random(1, 1000000000) end
function request()
  n = n + 1
  local q = queries[(n %% #queries) + 1]
  if distinct then q = q .. "\\n# " .. tid .. "-" .. n .. "\\n" end
  return wrk.format("POST", "%(path)s", {["Content-Type"] = "application/sparql-query",
                    ["Accept"] = "application/sparql-results+json"}, q)
end
"""


RUNS = (("lookup", "distinct"), ("lookup", "repeated"), ("gold", "distinct"))


def ensure_wrk() -> str:
    path = shutil.which("wrk")
    if path:
        return path
    subprocess.run(["apt-get", "update"], check=False, capture_output=True)
    subprocess.run(["apt-get", "install", "-y", "wrk"], check=True, capture_output=True)
    return shutil.which("wrk") or "wrk"


def workload(store: Path, n: int) -> list[str]:
    """One-hop queries over the store's first `n` subjects (their labels and direct properties)."""
    from kb_dumps.store import LocalStore

    with LocalStore(store) as s:
        res = s.query("SELECT DISTINCT ?s WHERE { ?s <http://www.w3.org/2000/01/rdf-schema#label> ?l } LIMIT "
                      + str(n))
    subjects = [row[0]["value"] for row in res.rows if row[0]]
    return [f"SELECT ?p ?o WHERE {{ <{s}> ?p ?o }} LIMIT 50" for s in subjects]


GOLD_SETS = ("simplequestions-valid", "lcquad2-dev", "qald7-train", "rubq2-dev", "wwq-dev")


def gold_workload(store: Path, per_set: int) -> tuple[list[str], dict[str, int]]:
    """The gold queries of the bundled Wikidata benchmarks that run on `store` (see the module docstring), and how
    many of each set were kept."""
    from eval.loaders import load_benchmark
    from kb_dumps.profiles import get_profile
    from kb_dumps.sparql_text import with_prefixes
    from kb_dumps.stage_errors import QueryError
    from kb_dumps.store import LocalStore

    prefixes = get_profile("wikidata").prefixes
    queries: list[str] = []
    kept: dict[str, int] = {}
    with LocalStore(store, timeout_s=1.0) as s:
        for name in GOLD_SETS:
            kept[name] = 0
            records = [r for r in load_benchmark(name) if r.usable and r.sparql][:per_set]
            for r in records:
                q = with_prefixes(r.sparql, prefixes)
                if re.search(r"[\x00-\x08\x0b-\x1f]", q):  # not writable as a Lua string literal
                    continue
                try:
                    s.query(q)
                except QueryError:
                    continue
                queries.append(q)
                kept[name] += 1
    return queries, kept


def wait_http(url: str, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:  # noqa: S310 - loopback
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"{url} did not answer within {seconds:g} s")


def cpu_seconds(pid: int) -> float:
    proc = psutil.Process(pid)
    total = 0.0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


def _ms(text: str) -> float:
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text)
    if m is None:
        raise RuntimeError(f"wrk wrote a latency this bench cannot read: {text!r}")
    value, unit = m.groups()
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[unit]


def run_wrk(wrk: str, url: str, path: str, queries: list[str], distinct: bool, seconds: int, connections: int,
            threads: int, pid: int, tmp: Path) -> dict:
    script = tmp / f"wrk_{'distinct' if distinct else 'repeated'}.lua"
    lua_list = "{" + ", ".join(json.dumps(q, ensure_ascii=False) for q in queries) + "}"  # UTF-8 bytes in Lua
    script.write_text(LUA % {"queries": lua_list, "distinct": "true" if distinct else "false", "path": path})
    cpu0 = cpu_seconds(pid)
    out = subprocess.run([wrk, f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", str(script),
                          url], capture_output=True, text=True, check=True).stdout
    cpu = cpu_seconds(pid) - cpu0
    requests = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),  # type: ignore[union-attr]
            "p50_ms": _ms(re.search(r"50%\s+(\S+)", out).group(1)),  # type: ignore[union-attr]
            "p99_ms": _ms(re.search(r"99%\s+(\S+)", out).group(1)),  # type: ignore[union-attr]
            "cpu_ms_per_request": 1000 * cpu / max(requests, 1), "requests": requests,
            "non_2xx": int(errors.group(1)) if errors else 0}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--connections", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--gold-per-set", type=int, default=200, help="gold queries taken from each benchmark")
    ap.add_argument("--sparql-workers", type=int, default=2)
    args = ap.parse_args(argv)
    from kb_dumps.ingest import ingest
    from kb_dumps.oxigraph_server import OxigraphServer, free_port
    from kb_dumps.samples import get_sample

    wrk = ensure_wrk()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        sample = get_sample("wikidata-mini")
        ingest(sample.paths(), tmp / "kbqa-store", profile=sample.profile, progress=False)
        shutil.copytree(tmp / "kbqa-store", tmp / "oxigraph-store")
        t0 = time.monotonic()
        mixes = {"lookup": workload(tmp / "kbqa-store", args.queries)}
        mixes["gold"], kept = gold_workload(tmp / "kbqa-store", args.gold_per_set)
        print(f"gold mix: {len(mixes['gold'])} queries {kept} (built in {time.monotonic() - t0:.0f} s)", flush=True)
        port = free_port()
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        kbqa = subprocess.Popen([str(Path(sys.executable).parent / "kbqa"), "serve", "--store", str(tmp / "kbqa-store"),
                                 "--port", str(port), "--log-level", "warning", "--translator", "cases",
                                 "--sparql-workers", str(args.sparql_workers)],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        results: dict[str, dict] = {}
        try:
            wait_http(f"http://127.0.0.1:{port}/healthz")
            with OxigraphServer(tmp / "oxigraph-store") as oxi:
                assert oxi.proc is not None
                servers = {"kbqa": (f"http://127.0.0.1:{port}/sparql", "/sparql", kbqa.pid),
                           "oxigraph": (oxi.url, "/query", oxi.proc.pid)}
                for mix, mode in RUNS:
                    for name, (url, path, pid) in servers.items():
                        r = run_wrk(wrk, url, path, mixes[mix], mode == "distinct", args.seconds, args.connections,
                                    args.threads, pid, tmp)
                        results[f"{name}/{mix}/{mode}"] = r
                        print(f"{name:9s} {mix:7s} {mode:9s} {r['rps']:8.0f} req/s  p50 {r['p50_ms']:6.2f} ms  "
                              f"p99 {r['p99_ms']:7.2f} ms  cpu {r['cpu_ms_per_request']:.2f} ms/req  "
                              f"non-2xx {r['non_2xx']}", flush=True)
        finally:
            kbqa.terminate()
            kbqa.wait(20)
    for mix, mode in RUNS:
        ratio = results[f"kbqa/{mix}/{mode}"]["rps"] / results[f"oxigraph/{mix}/{mode}"]["rps"]
        results[f"ratio/{mix}/{mode}"] = {"kbqa_over_oxigraph": round(ratio, 3)}
        print(f"ratio {mix} {mode}: {ratio:.2f}x")
    print(json.dumps({"args": vars(args), "cpus": os.cpu_count(), "results": results}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
