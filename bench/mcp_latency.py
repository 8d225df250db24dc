"""Latency of the `ask` tool through `kbqa mcp` (stdio and streamable HTTP) against `Engine.ask` in-process.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/mcp_latency.py [--questions 30] [--rounds 3]

Same store and workload as bench/server_load.py: `.kbqa/stores/wikidata-mini` with its grounding index (else
a fresh copy without one), the first `--questions` usable simplequestions-valid questions, and the `replay`
backend whose recorded outputs are `decompose(gold)`, so each call is translate (a lookup) → parse → ground →
assemble → execute. Every question is asked once per transport to warm up; then `--rounds` rounds, each
asking every question in-process, over stdio and over HTTP in turn (interleaved, so machine load drifts alike
over all three). One client, one call at a time. Prints one JSON object: medians, p90 and the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the packages, ahead of bench/ (whose grounding.py would shadow them)

from server_load import pick_store, workload  # noqa: E402  # bench/, after the packages


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stats(lat: list[float]) -> dict[str, float]:
    lat = sorted(lat)
    return {"calls": len(lat), "p50_ms": round(statistics.median(lat) * 1000, 1),
            "p90_ms": round(lat[int(0.9 * (len(lat) - 1))] * 1000, 1)}


async def mcp_round(client: Any, questions: list[str]) -> tuple[list[float], int]:
    lat, errors = [], 0
    for q in questions:
        t0 = time.perf_counter()
        res = await client.call_tool("ask", {"question": q})
        lat.append(time.perf_counter() - t0)
        errors += bool(res.is_error)
    return lat, errors


def start_http(args: list[str], env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-m", "kbqa.cli", "mcp", *args, "--transport", "http", "--port",
                             str(port)], env={**os.environ, **env}, cwd=ROOT, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc
        except OSError:
            if proc.poll() is not None:
                raise SystemExit("kbqa mcp --transport http exited at startup") from None
            time.sleep(0.3)
    proc.kill()
    raise SystemExit("kbqa mcp --transport http did not start in 300 s")


async def run(store: Path, replay: Path, questions: list[str], rounds: int) -> dict[str, Any]:
    from mcp import Client, StdioServerParameters

    from kbqa.pipeline import Engine
    from kbqa.translators.replay import ReplayTranslator

    args = ["--store", str(store), "--translator", "replay", "--replay", str(replay)]
    env = {"HF_HUB_OFFLINE": "1"}
    port = free_port()
    http = start_http(args, env, port)
    stdio = StdioServerParameters(command=sys.executable, args=["-m", "kbqa.cli", "mcp", *args], env=env,
                                  cwd=str(ROOT))
    lat: dict[str, list[float]] = {"in_process": [], "mcp_stdio": [], "mcp_http": []}
    errors = {"in_process": 0, "mcp_stdio": 0, "mcp_http": 0}
    try:
        with Engine(store, translator=ReplayTranslator(replay)) as engine:
            async with Client(stdio) as over_stdio, Client(f"http://127.0.0.1:{port}/mcp") as over_http:
                for r in range(rounds + 1):  # round 0 warms up: the embedding model, the index, query workers
                    t_in = []
                    for q in questions:
                        t0 = time.perf_counter()
                        res = engine.ask(q)
                        t_in.append(time.perf_counter() - t0)
                        errors["in_process"] += r > 0 and res.status == "error"
                    t_stdio, e_stdio = await mcp_round(over_stdio, questions)
                    t_http, e_http = await mcp_round(over_http, questions)
                    if r == 0:
                        continue
                    lat["in_process"] += t_in
                    lat["mcp_stdio"] += t_stdio
                    lat["mcp_http"] += t_http
                    errors["mcp_stdio"] += e_stdio
                    errors["mcp_http"] += e_http
    finally:
        http.terminate()
        http.wait(30)
    out: dict[str, Any] = {k: {**stats(v), "failed_results": errors[k]} for k, v in lat.items()}
    base = out["in_process"]["p50_ms"]
    out["ratio_p50_stdio"] = round(out["mcp_stdio"]["p50_ms"] / base, 2)
    out["ratio_p50_http"] = round(out["mcp_http"]["p50_ms"] / base, 2)
    out["overhead_p50_ms"] = {k: round(out[k]["p50_ms"] - base, 1) for k in ("mcp_stdio", "mcp_http")}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store, what = pick_store(Path(tmp))
        replay = Path(tmp) / "replay.jsonl"
        _, questions = workload(store, a.questions, replay)
        t0 = time.perf_counter()
        result = asyncio.run(run(store, replay, questions, a.rounds))
        load = os.getloadavg()
    print(json.dumps({"store": what, "questions": len(questions), "rounds": a.rounds,
                      "seconds": round(time.perf_counter() - t0, 1), "load_avg_end": [round(x, 2) for x in load],
                      **result}, indent=1))


if __name__ == "__main__":
    main()
