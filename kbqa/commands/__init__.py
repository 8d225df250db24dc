"""One module per `kbqa` verb: each has `add_parser(subparsers)` and `run(args) -> int`.

The CLI is a thin face over the Python API: each `run` parses flags, calls library functions,
and prints; errors are KBQAError and become one line on stderr plus an exit code.
"""

# Order in `kbqa --help`; a verb's module is imported only if present (verbs land issue by issue).
VERBS = ["ingest", "index", "sparql", "ground", "decompose", "compile", "ask", "cases", "models", "train",
         "eval", "serve", "mcp"]
