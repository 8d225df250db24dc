"""`kbqa mcp`: the engine as Model Context Protocol tools (stdio for desktop clients, streamable HTTP at /mcp)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kbqa.commands.common import add_backend_flag, add_endpoint_flags, add_store_flag, subparser

EXAMPLE = """kbqa mcp --store .kbqa/stores/wikidata-mini             stdio: what a desktop MCP client starts
  kbqa mcp --store kb/ --transport http --port 8765          streamable HTTP at http://127.0.0.1:8765/mcp
  tools: ask, generate_sparql, run_sparql, ground, explain, describe_kb; resources: kbqa://schema, kbqa://eval/last"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparser(subparsers, "mcp", "serve the engine as Model Context Protocol tools for agents", EXAMPLE)
    add_store_flag(p)
    add_endpoint_flags(p)
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio",
                   help="stdio (default: the client starts this command) or streamable HTTP at /mcp")
    p.add_argument("--host", default="127.0.0.1", help="http: address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="http: port (default 8765)")
    add_backend_flag(p, "translator of the ask tool (default: setting KBQA_BACKEND, else explore)")
    p.add_argument("--model", default=None, help="model name or path, as for `kbqa ask`")
    p.add_argument("--model-url", default=None, metavar="URL",
                   help="OpenAI-compatible model server URL (…/v1) of --backend openai")
    p.add_argument("--replay", type=Path, default=None, metavar="FILE", help="replay JSONL (id, question, output)")
    p.add_argument("--timeout", type=float, default=None, metavar="S", help="time budget per query (default 10)")
    p.add_argument("--model-timeout", type=float, default=None, metavar="S",
                   help="time budget per model call (default 60)")
    return p


def run(args: argparse.Namespace) -> int:
    from kb_dumps.errors import KBQAError
    from kb_dumps.layout import StoreLayout
    from kbqa.commands.common import resolve_store
    from kbqa.config import get_settings
    from kbqa.mcp import serve
    from kbqa.server import ServerSettings

    store = resolve_store(args.store) if args.store is not None or not args.sparql_endpoint else None
    if store is not None and not StoreLayout.of(store).exists():
        raise KBQAError(f"no store at {store}; build one with `kbqa ingest SOURCE --store {store}`", stage="store")
    cfg = get_settings()
    # the limits of `kbqa serve` (KBQA_SERVER_* variables), with the flags given here on top
    given = {"query_timeout_s": args.timeout, "model_timeout_s": args.model_timeout}
    settings = ServerSettings(store=store, host=args.host, port=args.port, backend=args.backend, model=args.model,
                              model_url=args.model_url, replay_path=args.replay,
                              sparql_endpoint=args.sparql_endpoint, endpoint_dialect=args.endpoint_dialect,
                              **{"query_timeout_s": cfg.query_timeout_s, "row_cap": cfg.row_cap,
                                 **{k: v for k, v in given.items() if v is not None}})
    where = "stdio" if args.transport == "stdio" else f"http://{args.host}:{args.port}/mcp"
    print(f"kbqa mcp over {store or args.sparql_endpoint} on {where}", file=sys.stderr)  # stdout is the protocol's
    serve(settings, args.transport)
    return 0
