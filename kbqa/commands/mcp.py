"""`kbqa mcp`: the engine as Model Context Protocol tools (stdio for desktop clients, streamable HTTP at /mcp)."""

from __future__ import annotations

import argparse
import sys

from kbqa.commands.common import (
    add_endpoint_flags,
    add_server_translator_flags,
    add_store_flag,
    port,
    seconds,
    server_settings,
    subparser,
)

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
    p.add_argument("--port", type=port, default=8765, help="http: port (default 8765)")
    add_server_translator_flags(p, "the ask tool")
    p.add_argument("--timeout", type=seconds, default=None, metavar="S", help="time budget per query (default 10)")
    p.add_argument("--model-timeout", type=seconds, default=None, metavar="S",
                   help="time budget per model call (default 60)")
    return p


def run(args: argparse.Namespace) -> int:
    from kbqa.mcp import serve

    # the limits of `kbqa serve` (KBQA_SERVER_* variables), with the flags given here on top
    settings = server_settings(args)
    store = settings.store
    where = "stdio" if args.transport == "stdio" else f"http://{args.host}:{args.port}/mcp"
    print(f"kbqa mcp over {store or args.sparql_endpoint} on {where}", file=sys.stderr)  # stdout is the protocol's
    serve(settings, args.transport)
    return 0
