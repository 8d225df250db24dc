"""`kbqa serve`: the HTTP API (/v1/*), the read-only SPARQL endpoint (/sparql) and the web page (/), on uvicorn."""

from __future__ import annotations

import argparse
import sys

from kbqa.commands.common import (
    add_endpoint_flags,
    add_server_translator_flags,
    add_store_flag,
    integer,
    port,
    seconds,
    server_settings,
    subparser,
    workers,
)

EXAMPLE = """kbqa serve --store .kbqa/stores/wikidata-mini --port 8000
  then: open http://127.0.0.1:8000/  or
  curl -s localhost:8000/v1/ask -H 'content-type: application/json' -d '{"question": "where was sasha vujačić born"}'
  kbqa serve --translator replay --replay outputs.jsonl   answer from recorded model outputs
  kbqa serve --store kb/ --endpoint http://localhost:7001/sparql   queries (and /sparql) go to that endpoint"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparser(subparsers, "serve", "serve the HTTP API, a read-only SPARQL endpoint and a web page", EXAMPLE)
    add_store_flag(p)
    add_endpoint_flags(p)
    p.add_argument("--host", default=None, help="address to listen on (default: setting KBQA_SERVER_HOST, else "
                                                "127.0.0.1: this machine only)")
    p.add_argument("--port", type=port, default=None, help="port (default: setting KBQA_SERVER_PORT, else 8000)")
    add_server_translator_flags(p, "/v1/ask")
    p.add_argument("--engines", type=workers, default=None, metavar="N",
                   help="engines answering /v1 requests in parallel, one thread each (default 1)")
    p.add_argument("--sparql-workers", type=workers, default=None, metavar="N",
                   help="query worker processes of /sparql (default 2)")
    p.add_argument("--max-inflight", type=integer(1, 1_000_000, "a request limit"), default=None, metavar="N",
                   help="requests served at once; more get 429 (default 64)")
    p.add_argument("--timeout", type=seconds, default=None, metavar="S", help="time budget per query (default 10)")
    p.add_argument("--model-timeout", type=seconds, default=None, metavar="S",
                   help="time budget per model call (default 60)")
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"],
                   help="uvicorn log level (default info)")
    return p


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from kbqa.server import create_app

    settings = server_settings(args, engines=args.engines, sparql_workers=args.sparql_workers,
                               max_inflight=args.max_inflight)
    store = settings.store
    app = create_app(settings)
    where = f"http://{settings.host}:{settings.port}/"
    print(f"kbqa serving {store or args.sparql_endpoint} on {where}  (Ctrl-C stops it)", file=sys.stderr)
    # uvicorn handles SIGINT/SIGTERM: it stops accepting, waits for open requests, then closes the engines
    uvicorn.run(app, host=settings.host, port=settings.port, log_level=args.log_level,
                timeout_graceful_shutdown=settings.graceful_timeout_s)
    return 0
