"""GBNF grammars that constrain a model's output to a front-end format (llama.cpp grammar syntax).

The DeSQ grammar is generated from the parser's own tables (known prefixes, built-in functions and
their arities, casts, aggregates), so every string it admits passes the DeSQ parse stage: three
sections, `ACn: sentence` lines, `ACn => fragment` lines in the SPARQL subset with `[name]`
placeholders, and `[name] kind | label | description | uri?` grounding lines. What a context-free
grammar cannot say (every placeholder grounded, every AC with a fragment, projected variables
bound) is left to the validate stage and the repair loop. Counts and free-text lengths are bounded
so that a model that loops still ends inside the format instead of being cut off mid-line.
QCompiler and PyRAG grammars come from `grammars_qcompiler_pyrag` when that module is present.
"""

from __future__ import annotations

import importlib
from functools import cache

from assembler.plan import AGGREGATES
from assembler.sparql_text import BUILTIN_ARITY, CASTS
from kbqa.frontends.desq_expr import KNOWN_PREFIXES

# Layout of a fragment: a head or a modifier with a variable list (`SELECT ?a ?b`, `ORDER BY ?a`) is never
# followed by a pattern that starts with a variable: the parser would read that variable as one more
# projection / key. Only the first fragment part may be a head (a second one is a parse error).
# Bounds: generous for real targets (the case bank's largest has 16 ACs), small enough that a
# looping model reaches the end of the grammar within a few hundred tokens.
MAX_ACS = 20
MAX_GROUNDING = 16
MAX_ITEMS = 8  # pattern items / modifiers in one fragment, and in one { group }
MAX_TEXT = 400  # characters of an AC sentence or a string literal
MAX_LABEL = 100
MAX_DESCRIPTION = 400  # Wikidata descriptions copied into the case bank run to ~300 characters

_RULES_HEAD = r'''
root ::= format? "ATOMIC CONSTRAINTS\n" acline{1,%(acs)d} "\n"? "FRAGMENTS\n" fragline{1,%(acs)d} "\n"? "GROUNDING\n" gline{0,%(gl)d}
format ::= "FORMAT desq/1\n"
acnum ::= [1-9] [0-9]?
acline ::= "AC" acnum ": " [^ \n] [^\n]{0,%(text)d} "\n"
fragline ::= "AC" acnum " => " fragment "\n"
gline ::= "[" ident "] " kind " | " label " | " desc (" | " guri)? "\n"
kind ::= "entity" | "property" | "class"
label ::= [^| \n\\] lchar{0,%(label)d}
lchar ::= [^|\n\\] | "\\|"
desc ::= lchar{0,%(desc)d}
guri ::= pname | "<http" "s"? "://" [^<>"{}|^`\\ \t\n]{1,200} ">"

ident ::= [A-Za-z_] [A-Za-z0-9_]{0,40}
sp ::= " " | "\n" [ ]{0,16}
osp ::= sp?

fragment ::= head (sp modseq)? (sp safeitem (sp item){0,%(items)d})? | modseq (sp safeitem (sp item){0,%(items)d})? | item (sp item){0,%(items)d} (sp modseq)?
head ::= "ASK" | selecthead
selecthead ::= "SELECT" (sp "DISTINCT")? (sp "*" | (sp proj){1,6})
proj ::= var | "(" osp expr sp "AS" sp var osp ")"
modseq ::= modifier (sp modifier){0,3}
modifier ::= "GROUP BY" (sp (var | bracketed)){1,4} | "HAVING" osp bracketed | "ORDER BY" (sp orderkey){1,4} | ("LIMIT" | "OFFSET") sp [0-9]{1,6}
orderkey ::= ("ASC" | "DESC") osp bracketed | var | bracketed

item ::= triples | safeitem
safeitem ::= safetriples | "FILTER" osp (bracketed | call | exists) | "OPTIONAL" osp group | "MINUS" osp group | "BIND" osp "(" osp expr sp "AS" sp var osp ")" | "VALUES" sp values | group (sp "UNION" sp group){0,6}
group ::= "{" osp "}" | "{" osp item (sp item){0,%(items)d} osp "}" | "{" osp selecthead (sp "WHERE")? osp group (sp modifier){0,3} osp "}"
triples ::= (var | placeholder | iri) sp predobj
safetriples ::= (placeholder | iri) sp predobj
predobj ::= verb sp objects (osp ";" sp verb sp objects){0,4} (osp ".")?
objects ::= object (osp "," sp object){0,4}
object ::= var | placeholder | iri | literal
verb ::= var | path
path ::= pathseq (osp "|" osp pathseq){0,3}
pathseq ::= pathelt (osp "/" osp pathelt){0,3}
pathelt ::= "^"? (placeholder | iri | "a" | "(" osp path osp ")") ("*" | "+" | "?")?

values ::= var osp "{" (osp vterm){0,12} osp "}" %(values)s
vterm ::= placeholder | iri | literal | "UNDEF"

expr ::= andexpr (sp "||" sp andexpr){0,6}
andexpr ::= relexpr (sp "&&" sp relexpr){0,6}
relexpr ::= addexpr (sp relop sp addexpr | sp ("NOT" sp)? "IN" osp "(" osp (expr (osp "," sp expr){0,12})? osp ")")?
relop ::= "=" | "!=" | "<" | ">" | "<=" | ">="
addexpr ::= mulexpr (sp ("+" | "-") sp mulexpr){0,6}
mulexpr ::= unary (sp ("*" | "/") sp unary){0,6}
unary ::= "!" unary | primary
primary ::= bracketed | exists | aggregate | call | cast | term
bracketed ::= "(" osp expr osp ")"
exists ::= ("NOT" sp)? "EXISTS" osp group
aggregate ::= aggname "(" osp ("DISTINCT" sp)? ("*" | expr) (osp ";" sp "SEPARATOR" osp "=" osp string)? osp ")"
cast ::= "xsd:" castname "(" osp expr osp ")"

term ::= var | placeholder | iri | literal
var ::= "?" [A-Za-z_] [A-Za-z0-9_]{0,30}
placeholder ::= ("p:" | "ps:" | "pq:")? "[" ident "]"
iri ::= pname | iriref
pname ::= prefix ":" [A-Za-z0-9_] [A-Za-z0-9_-]{0,60}
iriref ::= "<" [^<>"{}|^`\\ \t\n]{1,200} ">"
literal ::= string ("@" [a-zA-Z]{1,8} ("-" [a-zA-Z0-9]{1,8}){0,2} | "^^" iri)? | "-"? [0-9]{1,12} ("." [0-9]{1,12})? | "true" | "false"
string ::= "\"" ([^"\\\n] | "\\" ["\\nrt]){0,%(text)d} "\""
'''


def _alts(words: list[str]) -> str:
    return " | ".join(f'"{w}"' for w in words)


def _values_alts(max_vars: int = 4) -> str:
    """VALUES (?a …) with 1..max_vars variables: one alternative per width, so rows match the variables."""
    alts = []
    for n in range(1, max_vars + 1):
        vs = " sp ".join(["var"] * n)
        ts = " sp ".join(["vterm"] * n)
        alts.append(f'"(" osp {vs} osp ")" osp "{{" (osp "(" osp {ts} osp ")"){{0,12}} osp "}}"')
    return " | " + " | ".join(alts)


def _args(low: int, high: int) -> str:
    """GBNF for `low` to `high` comma-separated expressions (high capped: CONCAT takes any number)."""
    high = min(high, 12)
    if high == 0:
        return ""
    if low == 0:
        return f"({_args(1, high)})?"
    required = ' osp "," sp '.join(["expr"] * low)
    return required + (f' (osp "," sp expr){{0,{high - low}}}' if high > low else "")


def _call_rules() -> str:
    """Built-in calls grouped by arity, so a call with the wrong number of arguments cannot be written."""
    by_arity: dict[tuple[int, int], list[str]] = {}
    for name, arity in sorted(BUILTIN_ARITY.items()):
        by_arity.setdefault(arity, []).append(name)
    alts, rules = [], []
    for i, ((low, high), names) in enumerate(sorted(by_arity.items())):
        args = _args(low, high)
        rules.append(f"fn{i} ::= {_alts(names)}")
        alts.append(f'fn{i} "(" osp {args} osp ")"' if args else f'fn{i} "(" osp ")"')
    return "call ::= " + " | ".join(alts) + "\n" + "\n".join(rules)


@cache
def desq_grammar() -> str:
    """The GBNF grammar of the DeSQ text form (built once from the parser's tables)."""
    text = _RULES_HEAD % {"acs": MAX_ACS, "gl": MAX_GROUNDING, "items": MAX_ITEMS - 1, "text": MAX_TEXT,
                          "label": MAX_LABEL, "desc": MAX_DESCRIPTION, "values": _values_alts()}
    prefixes = sorted(p for p in KNOWN_PREFIXES if p)
    extra = [
        _call_rules(),
        f"aggname ::= {_alts(list(AGGREGATES))}",
        f"castname ::= {_alts(sorted(CASTS))}",
        f"prefix ::= {_alts(prefixes)}",
    ]
    return text.strip() + "\n" + "\n".join(extra) + "\n"


def _extension_grammars() -> dict[str, str]:
    """QCompiler / PyRAG grammars from their own module, when it has landed (names it may export)."""
    try:
        module = importlib.import_module("kbqa.models.grammars_qcompiler_pyrag")
    except ModuleNotFoundError as e:
        if e.name != "kbqa.models.grammars_qcompiler_pyrag":
            raise
        return {}
    found: dict[str, str] = {}
    table = getattr(module, "GRAMMARS", None)
    if isinstance(table, dict):
        found.update({k: v for k, v in table.items() if isinstance(v, str)})
    for frontend, attr in (("qcompiler", "QCOMPILER_GRAMMAR"), ("pyrag", "PYRAG_GRAMMAR")):
        value = getattr(module, attr, None)
        if isinstance(value, str):
            found.setdefault(frontend, value)
    return found


def grammar_for(frontend: str) -> str | None:
    """The GBNF grammar of a front-end, or None when there is none (the model is then unconstrained)."""
    if frontend == "desq":
        return desq_grammar()
    return _extension_grammars().get(frontend)
