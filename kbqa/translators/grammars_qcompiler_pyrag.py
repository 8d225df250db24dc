"""GBNF grammars and prompt format texts for the QCompiler and PyRAG front-ends, plus a small GBNF well-formedness check.

The grammars constrain a llama.cpp sampler to the *shape* of each format (the llama.cpp mechanism and
`grammar_for(frontend)` live in `kbqa/translators/grammars.py`); they are deliberately looser than the
parsers — GBNF has no look-ahead, so "an operator counts only between spaces" or "no dunder names" are
left to `qcompiler_parse` / `pyrag`, whose errors go to the repair loop.
"""

from __future__ import annotations

import re

# Repetitions are bounded (as in the DeSQ grammar) so that a model that loops still reaches the end of the
# grammar: a sampler constrained by `word*` may write words until max_tokens and leave nothing parseable.
_QCOMPILER_TEMPLATE = r"""
root ::= expr
expr ::= dep (" + " dep){0,%(leaves)d}
dep ::= atom (" * " atom){0,%(leaves)d}
atom ::= "(" expr ")" | leaf
leaf ::= word (" " word){0,%(words)d}
word ::= wstart wrest{0,%(chars)d}
wstart ::= [^ \t\n()+*{}] | placeholder
wrest ::= [^ \t\n{}] | placeholder
placeholder ::= "{" [A-Za-z_] [A-Za-z0-9_]{0,30} "}"
"""

_PYRAG_TEMPLATE = r"""
root ::= (stmt "\n"){0,%(stmts)d} final "\n"?
stmt ::= name " = " value
final ::= "final_answer = " value
value ::= call%(depth)d | name
%(calls)s
prim ::= "entity" | "cls" | "hop" | "rhop" | "isa" | "filter" | "compare" | "count" | "argmax" | "argmin" | "ask_kb"
kw ::= "label" | "description" | "uri" | "property" | "op" | "value" | "question" | "x" | "y" | "cls"
string ::= "\"" char{0,%(chars)d} "\""
fstring ::= "f\"" (char | "{" name "}"){0,%(chars)d} "\""
char ::= [^"\\{}\n] | "\\" ["\\]
number ::= "-"? [0-9]{1,12} ("." [0-9]{1,12})?
name ::= [a-z_] [a-z0-9_]{0,30}
"""


def qcompiler_grammar(leaves: int = 8, words: int = 40, chars: int = 40) -> str:
    """The QCompiler GBNF: at most `leaves`+1 operands per operator chain, `words`+1 words per leaf."""
    return _QCOMPILER_TEMPLATE % {"leaves": leaves, "words": words, "chars": chars}


def pyrag_grammar(stmts: int = 16, chars: int = 160, depth: int = 4) -> str:
    """The PyRAG GBNF: at most `stmts` assignments before `final_answer`, strings of at most `chars` characters,
    calls nested at most `depth` deep (`count(rhop(entity(...), ...))` is 3)."""
    calls = []
    for d in range(1, depth + 1):  # callN may hold callN-1 in its arguments; call1 holds none
        inner = f" | call{d - 1}" if d > 1 else ""
        calls.append(f'call{d} ::= prim "(" (arg{d} (", " arg{d}){{0,5}})? ")"\n'
                     f'arg{d} ::= (kw "=")? (string | fstring | number | name{inner})')
    return _PYRAG_TEMPLATE % {"stmts": stmts, "chars": chars, "depth": depth, "calls": "\n".join(calls)}


QCOMPILER_GBNF = qcompiler_grammar()
PYRAG_GBNF = pyrag_grammar()

GRAMMARS = {"qcompiler": QCOMPILER_GBNF, "pyrag": PYRAG_GBNF}

QCOMPILER_FORMAT = """You split a question into atomic questions joined by operators (a QCompiler expression), on one line.
`A * B`: B uses the answer of A, written {name} in B (e.g. `Who directed Titanic? * Where was {director} born?`).
`A + B`: both answers are wanted. `*` binds tighter than `+`; group with parentheses: `(A + B) * C {x}`.
Operators have a space on each side. An independent question has no {name}; every {name} follows a `*`.
Write only the expression."""

PYRAG_FORMAT = """You write a small Python program over knowledge-base primitives; it is read, never run. Only
assignments `name = primitive(...)`, ending with `final_answer = name`. Primitives:
entity(label, description), cls(label), hop(x, property), rhop(x, property) (x is the object),
isa(x, cls), filter(x, op, value), compare(x, op, y), count(x), argmax(x, property), argmin(x, property),
ask_kb(question) (an f-string may name earlier variables: ask_kb(f"When was {director} born?")).
op is one of = != < > <= >=. No imports, loops, attributes or other calls. Write only the program."""

# How a leaf's `{x}` reaches the DeSQ translator (added to the DeSQ prompt when a leaf has one).
LEAF_NOTE = ("{name} in the question stands for an entity found by an earlier question: write it as the entity "
             "placeholder [name] with the grounding line `[name] entity | {name} | the earlier answer`.")

_RULE_RE = re.compile(r"^([A-Za-z][A-Za-z0-9-]*)\s*::=\s*(.*)$")
_TOKEN_RE = re.compile(r"""\s*(?:("(?:[^"\\]|\\.)*")|(\[(?:[^\]\\]|\\.)*\])|([A-Za-z][A-Za-z0-9-]*)|([()|*+?])|(\{[0-9]+(?:,[0-9]*)?\}))""")


def check_gbnf(grammar: str) -> list[str]:
    """Problems of a GBNF text as far as a small reader can tell: each rule `name ::= body` (continuation
    lines allowed), string and character-class literals closed, parentheses balanced, every referenced rule
    defined, `root` defined. An empty list means well-formed."""
    rules: dict[str, str] = {}
    current = None
    problems: list[str] = []
    for raw in grammar.splitlines():
        line = raw.split("#", 1)[0].rstrip() if not re.search(r"[\"\[]", raw) else raw.rstrip()
        if not line.strip():
            continue
        m = _RULE_RE.match(line.strip())
        if m:
            current = m.group(1)
            if current in rules:
                problems.append(f"rule {current} is defined twice")
            rules[current] = m.group(2)
        elif current is not None and raw[:1].isspace():
            rules[current] += " " + line.strip()
        else:
            problems.append(f"cannot read the line {line.strip()[:40]!r}")
    refs: set[str] = set()
    for name, body in rules.items():
        pos, depth = 0, 0
        while pos < len(body):
            if not body[pos:].strip():
                break
            m = _TOKEN_RE.match(body, pos)
            if m is None or m.end() == pos:
                problems.append(f"rule {name}: cannot read {body[pos:pos + 20].strip()!r}")
                break
            if m.group(3):
                refs.add(m.group(3))
            elif m.group(4) == "(":
                depth += 1
            elif m.group(4) == ")":
                depth -= 1
                if depth < 0:
                    problems.append(f"rule {name}: ')' closes nothing")
                    break
            pos = m.end()
        if depth > 0:
            problems.append(f"rule {name}: '(' is never closed")
    problems += [f"rule {r} is used but never defined" for r in sorted(refs - set(rules))]
    if "root" not in rules:
        problems.append("no root rule")
    return problems
