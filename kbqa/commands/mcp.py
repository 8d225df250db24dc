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

MCP_PORT = 8765  # the HTTP transport's port when neither --port nor KBQA_SERVER_PORT names one (serve: 8000)

EXAMPLE = """kbqa mcp --store .kbqa/stores/wikidata-mini             stdio: what a desktop MCP client starts
  kbqa mcp --store kb/ --transport http --port 8765          streamable HTTP at http://127.0.0.1:8765/mcp
  tools: ask, generate_sparql, run_sparql, ground, explain, describe_kb; resources: kbqa://schema, kbqa://eval/last"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparser(subparsers, "mcp", "serve the engine as Model Context Protocol tools for agents", EXAMPLE)
    add_store_flag(p)
    add_endpoint_flags(p)
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio",
                   help="stdio (default: the client starts this command) or streamable HTTP at /mcp")
    p.add_argument("--host", default=None, help="http: address to listen on (default: setting KBQA_SERVER_HOST, "
                                                "else 127.0.0.1)")
    p.add_argument("--port", type=port, default=None,
                   help=f"http: port (default: setting KBQA_SERVER_PORT, else {MCP_PORT})")
    add_server_translator_flags(p, "the ask tool")
    p.add_argument("--timeout", type=seconds, default=None, metavar="S", help="time budget per query (default 10)")
    p.add_argument("--model-timeout", type=seconds, default=None, metavar="S",
                   help="time budget per model call (default 60)")
    return p


def run(args: argparse.Namespace) -> int:
    from kbqa.mcp import serve

    # the limits of `kbqa serve` (KBQA_SERVER_* variables), with the flags given here on top
    settings = server_settings(args)
    if "port" not in settings.model_fields_set:  # neither --port nor KBQA_SERVER_PORT: MCP's own default
        settings = settings.model_copy(update={"port": MCP_PORT})
    store = settings.store
    where = "stdio" if args.transport == "stdio" else f"http://{settings.host}:{settings.port}/mcp"
    print(f"kbqa mcp over {store or args.sparql_endpoint} on {where}", file=sys.stderr)  # stdout is the protocol's
    serve(settings, args.transport)
    return 0
