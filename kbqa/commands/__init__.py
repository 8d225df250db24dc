"""One module per `kbqa` verb: each has `add_parser(subparsers)` and `run(args) -> int`.

The CLI is a thin face over the Python API: each `run` parses flags, calls library functions,
and prints; errors are KBQAError and become one line on stderr plus an exit code.
"""

# Order in `kbqa --help`; each is the name of a module here.
VERBS = ["ingest", "index", "sparql", "ground", "decompose", "compile", "ask", "cases", "models", "train",
         "eval", "serve", "mcp"]
