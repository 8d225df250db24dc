"""What the parsed SERVICE/update check costs `/sparql`: the same server with the parsed check vs the text check.

    HF_HUB_OFFLINE=1 .venv/bin/python -m bench.service_check [--clients 20] [--seconds 20] [--rounds 3]

Two `kbqa serve` processes over the same store and workload as bench/server_load.py (the gold queries of the
first `--questions` SimpleQuestions-valid records, POSTed as forms by `--clients` keep-alive clients):
`parsed` is `kbqa serve` as shipped (kb_dumps/sparql_check.py: rdflib's parser decides), `text` is the same
server with `kb_dumps.store.check_query_text` replaced, in that process only, by the check of the commit
before issue 15's fix (a regex over the masked text; it has the `ex:p\\#` bypass, so it exists only here).
Rounds alternate parsed / text so that both see the same machine load. Prints one JSON object.

The parsed check keeps its last 2,048 verdicts (`functools.lru_cache` on `check_query`), so 50 queries sent
in a loop measure the cache, not the parse. By default every request is a new text (the gold query with a
`# request k` comment: the same work for the store, a cache miss for the check); `--repeat` sends the 50
texts as they are (the cached case).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.server_load import load, pick_store, wait_healthy, workload
from kb_dumps.sparql_check import QueryFacts, RefusedQuery
from kb_dumps.sparql_text import mask

# The pre-fix check (kb_dumps/store.py and sparql_text.py at c784bd5^), kept verbatim in behaviour.
_SERVICE = re.compile(r"(?<![:\w?$])SERVICE(?![:\w])", re.I)
_UPDATE = re.compile(r"(?<![:\w?$])(INSERT|DELETE|LOAD|CLEAR|DROP|CREATE|ADD|MOVE|COPY)(?![:\w])", re.I)
_FROM = re.compile(r"(?<![:\w?$])FROM(?![:\w])", re.I)
_FORM = re.compile(r"(?<![:\w?$])(SELECT|ASK|CONSTRUCT|DESCRIBE)(?![:\w])", re.I)


def text_check(query: str, allow_label_service: bool = False) -> QueryFacts:
    """The text-mask check: SERVICE and update keywords found in the masked text (no parse)."""
    masked = mask(query)
    if _SERVICE.search(masked):
        raise RefusedQuery("SERVICE is refused", "service")
    if m := _UPDATE.search(masked):
        raise RefusedQuery(f"{m.group(1).upper()} is refused", "update")
    form = _FORM.search(masked)
    return QueryFacts(form.group(1).lower() if form else "select", bool(_FROM.search(masked)))


def serve_with_text_check(argv: list[str]) -> int:
    """`kbqa serve ARGV` with the text check in place of the parsed one (this process only)."""
    import kb_dumps.store
    from kbqa.cli import main

    kb_dumps.store.check_query_text = text_check
    return main(["serve", *argv])


def start(store: Path, port: int, check: str) -> subprocess.Popen:
    serve = ["--store", str(store), "--port", str(port), "--log-level", "warning"]
    cmd = ([sys.executable, "-m", "kbqa.cli", "serve", *serve] if check == "parsed"
           else [sys.executable, "-m", "bench.service_check", "--serve-text-check", *serve])
    proc = subprocess.Popen(cmd, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    return wait_healthy(proc, port, f"the {check} server")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--serve-text-check":
        sys.exit(serve_with_text_check(sys.argv[2:]))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=20.0, help="duration of each round")
    ap.add_argument("--rounds", type=int, default=3, help="rounds per check, alternating")
    ap.add_argument("--questions", type=int, default=50)
    ap.add_argument("--port", type=int, default=8775, help="the parsed server; the text server uses port + 1")
    ap.add_argument("--repeat", action="store_true", help="send the same texts again (the parsed check's cache)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kbqa-service-check-") as tmp:
        store, note = pick_store(Path(tmp))
        queries, _ = workload(store, args.questions, Path(tmp) / "replay.jsonl")
        for q in queries:  # both checks must let every gold query through, or the rates are not comparable
            text_check(q)
        # distinct texts: more than one round sends, so that no text is seen twice within the cache's reach
        bodies = queries if args.repeat else [f"{queries[k % len(queries)]}\n# request {k}" for k in range(60_000)]
        procs = {c: start(store, args.port + i, c) for i, c in enumerate(("parsed", "text"))}
        report: dict = {"store": note, "clients": args.clients, "seconds": args.seconds, "queries": len(queries),
                        "distinct_texts": len(bodies),
                        "load_average_start": os.getloadavg()[0], "rounds": {"parsed": [], "text": []}}
        try:
            for i in range(len(procs)):  # warm each server's workers
                asyncio.run(load(f"http://127.0.0.1:{args.port + i}", queries, "/sparql", 2, 2.0))
            for _ in range(args.rounds):
                for i, c in enumerate(procs):
                    r = asyncio.run(load(f"http://127.0.0.1:{args.port + i}", bodies, "/sparql", args.clients,
                                         args.seconds))
                    report["rounds"][c].append(r)
        finally:
            for p in procs.values():
                p.terminate()
                p.wait(60)
        report["load_average_end"] = os.getloadavg()[0]
        rate = {c: statistics.median(r["rps"] for r in rs) for c, rs in report["rounds"].items()}
        report["median_req_per_s"] = rate
        report["parsed_over_text"] = round(rate["parsed"] / rate["text"], 3)
        print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
