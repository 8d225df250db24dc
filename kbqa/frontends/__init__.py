"""The front-ends: each turns its text into a Plan (`assembler/plan.py`). `FRONTENDS` is the one list of them.

A factory takes the `Engine` asking and returns `parse(text) -> result`, a `frontend_result.FrontendResult`
(`.plan`, `.errors`, `.ok`) with the front-end's `.constraints` (see `desq.ParseResult`); QCompiler and PyRAG take
the engine's translator for their leaves.
"""

from kbqa.registry import Registry

FRONTENDS = Registry("front-end")
FRONTENDS.add("desq", "atomic constraints, their SPARQL fragments and a grounding block (the backbone)",
              "kbqa.frontends.desq:frontend")
FRONTENDS.add("qcompiler", "an expression of atomic questions joined by * (answer feeds the next) and + (parts)",
              "kbqa.frontends.qcompiler:frontend")
FRONTENDS.add("pyrag", "a small Python program over KB primitives, read statically (never executed)",
              "kbqa.frontends.pyrag:frontend")
