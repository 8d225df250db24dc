"""GBNF grammars that constrain a model's output to a front-end format (llama.cpp grammar syntax).

The DeSQ grammar is generated from the parser's own tables (known prefixes, built-in functions and
their arities, casts, aggregates), so the strings it admits pass the DeSQ parse stage: three
sections, `ACn: sentence` lines, `ACn => fragment` lines in the SPARQL subset with `[name]`
placeholders, and `[name] kind | label | description | uri?` grounding lines. What a context-free
grammar cannot say (every placeholder grounded, every AC with a fragment, projected variables
bound) is left to the validate stage and the repair loop. Everything is bounded — counts, text
lengths, and the nesting of expressions, groups and paths (a recursive rule is unrolled into
levels) — so a looping model (`DATATYPE(DATATYPE(…`) is forced back out and the text ends.
QCompiler and PyRAG grammars come from `grammars_qcompiler_pyrag` when that module is present.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from assembler.plan import AGGREGATES
from assembler.sparql_builtins import BUILTIN_ARITY, CASTS
from kbqa.frontends.desq_expr import KNOWN_PREFIXES


@dataclass(frozen=True)
class DesqBounds:
    """Limits of the DeSQ grammar. The defaults admit 4943 of the 4944 wikidata case-bank targets."""

    acs: int = 20  # ATOMIC CONSTRAINTS lines and FRAGMENTS lines (the largest real target has 16)
    grounding: int = 16  # GROUNDING lines
    items: int = 8  # pattern items / modifiers in one fragment, and in one { group }
    text: int = 400  # characters of an AC sentence or a string literal
    label: int = 100  # characters of a grounding label
    description: int = 400  # Wikidata descriptions copied into the case bank run to ~300 characters
    expr_depth: int = 6  # nesting of ( ), calls and aggregates (nested IF chains in real targets: 6)
    group_depth: int = 4  # nesting of { } groups (UNION of sub-queries in real targets: 3)
    path_depth: int = 3  # nesting of ( ) in property paths


# The text may end right after the last grounding line (a chat model ends its turn there, without a newline).
# Layout of a fragment: a head or a modifier with a variable list (`SELECT ?a ?b`, `ORDER BY ?a`) is
# never followed by a pattern that starts with a variable: the parser would read that variable as one
# more projection / key. Only the first part of a fragment may be a head (a second is a parse error).
_TOP = r'''
root ::= format? "ATOMIC CONSTRAINTS\n" acline{1,%(acs)d} "\n"? "FRAGMENTS\n" fragline{1,%(acs)d} "\n"? "GROUNDING" ("\n" gline){0,%(gl)d} "\n"?
format ::= "FORMAT desq/1\n"
acnum ::= [1-9] [0-9]?
acline ::= "AC" acnum ": " [^ \n] [^\n]{0,%(text)d} "\n"
fragline ::= "AC" acnum " => " fragment "\n"
gline ::= "[" ident "] " kind " | " label " | " desc (" | " guri)?
kind ::= "entity" | "property" | "class"
label ::= [^| \n\\] lchar{0,%(label)d}
lchar ::= [^|\n\\] | "\\|"
desc ::= lchar{0,%(desc)d}
guri ::= pname | "<http" "s"? "://" [^<>"{}|^`\\ \t\n]{1,200} ">"

ident ::= [A-Za-z_] [A-Za-z0-9_]{0,40}
sp ::= " " | "\n" [ ]{0,16}
osp ::= sp?

fragment ::= head (sp modseq)? (sp safeitem0 (sp item0){0,%(items)d})? | modseq (sp safeitem0 (sp item0){0,%(items)d})? | item0 (sp item0){0,%(items)d} (sp modseq)?
head ::= "ASK" | selecthead
selecthead ::= "SELECT" (sp "DISTINCT")? (sp "*" | (sp proj){1,6})
proj ::= var | "(" osp expr0 sp "AS" sp var osp ")"
modseq ::= modifier (sp modifier){0,3}
modifier ::= "GROUP BY" (sp (var | bracketed0)){1,4} | "HAVING" osp bracketed0 | "ORDER BY" (sp orderkey){1,4} | ("LIMIT" | "OFFSET") sp [0-9]{1,6}
orderkey ::= ("ASC" | "DESC") osp bracketed0 | var | bracketed0

triples ::= (var | placeholder | iri) sp predobj
safetriples ::= (placeholder | iri) sp predobj
predobj ::= verb sp objects (osp ";" sp verb sp objects){0,4} (osp ".")?
objects ::= object (osp "," sp object){0,4}
object ::= var | placeholder | iri | literal
verb ::= var | path0
leafitem ::= "FILTER" osp (bracketed0 | call0 | exists) | "BIND" osp "(" osp expr0 sp "AS" sp var osp ")" | "VALUES" sp values
exists ::= ("NOT" sp)? "EXISTS" osp flatgroup
flatgroup ::= "{" osp triples (sp triples){0,%(items)d} osp "}"

values ::= var osp "{" (osp vterm){0,12} osp "}" %(values)s
vterm ::= placeholder | iri | literal | "UNDEF"
relop ::= "=" | "!=" | "<" | ">" | "<=" | ">="
aggname ::= %(aggs)s
castname ::= %(casts)s

term ::= var | placeholder | iri | literal
var ::= "?" [A-Za-z_] [A-Za-z0-9_]{0,30}
placeholder ::= ("p:" | "ps:" | "pq:")? "[" ident "]"
iri ::= pname | iriref
pname ::= prefix ":" [A-Za-z0-9_] [A-Za-z0-9_-]{0,60}
prefix ::= %(prefixes)s
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


def _args(low: int, high: int, expr: str) -> str:
    """GBNF for `low` to `high` comma-separated expressions (high capped: CONCAT takes any number)."""
    high = min(high, 12)
    if high == 0:
        return ""
    if low == 0:
        return f"({_args(1, high, expr)})?"
    required = ' osp "," sp '.join([expr] * low)
    return required + (f' (osp "," sp {expr}){{0,{high - low}}}' if high > low else "")


def _arity_groups() -> list[tuple[int, int, list[str]]]:
    by_arity: dict[tuple[int, int], list[str]] = {}
    for name, arity in sorted(BUILTIN_ARITY.items()):
        by_arity.setdefault(arity, []).append(name)
    return [(lo, hi, names) for (lo, hi), names in sorted(by_arity.items())]


def _expr_levels(depth: int) -> list[str]:
    """Expressions unrolled into `depth` levels: a nested ( ), call or aggregate goes one level down;
    the last level holds terms only. Built-in calls are grouped by arity (a wrong count cannot be written)."""
    groups = _arity_groups()
    rules = [f"fn{i} ::= {_alts(names)}" for i, (_, _, names) in enumerate(groups)]
    for d in range(depth):
        nxt = f"expr{d + 1}" if d + 1 < depth else None
        rules += [f'expr{d} ::= and{d} (sp "||" sp and{d}){{0,6}}',
                  f'and{d} ::= rel{d} (sp "&&" sp rel{d}){{0,6}}']
        in_list = (f' | sp ("NOT" sp)? "IN" osp "(" osp ({nxt} (osp "," sp {nxt}){{0,12}})? osp ")"' if nxt else "")
        rules += [f"rel{d} ::= add{d} (sp relop sp add{d}{in_list})?",
                  f'add{d} ::= mul{d} (sp ("+" | "-") sp mul{d}){{0,6}}',
                  f'mul{d} ::= unary{d} (sp ("*" | "/") sp unary{d}){{0,6}}',
                  f'unary{d} ::= "!"? primary{d}']
        if nxt is None:
            rules.append(f"primary{d} ::= term")
            continue
        calls = []
        for i, (lo, hi, _) in enumerate(groups):
            args = _args(lo, hi, nxt)
            calls.append(f'fn{i} "(" osp {args} osp ")"' if args else f'fn{i} "(" osp ")"')
        rules += [f"primary{d} ::= bracketed{d} | exists | aggregate{d} | call{d} | cast{d} | term",
                  f'bracketed{d} ::= "(" osp {nxt} osp ")"',
                  f"call{d} ::= " + " | ".join(calls),
                  f'aggregate{d} ::= aggname "(" osp ("DISTINCT" sp)? ("*" | {nxt}) '
                  f'(osp ";" sp "SEPARATOR" osp "=" osp string)? osp ")"',
                  f'cast{d} ::= "xsd:" castname "(" osp {nxt} osp ")"']
    return rules


def _group_levels(depth: int, items: int) -> list[str]:
    """Items and { } groups unrolled into levels; items of the deepest level hold no group."""
    rules = []
    for g in range(depth + 1):
        if g == depth:
            rules += [f"item{g} ::= triples | safeitem{g}", f"safeitem{g} ::= safetriples | leafitem"]
            continue
        grp = f"group{g}"
        rules += [f"item{g} ::= triples | safeitem{g}",
                  f'safeitem{g} ::= safetriples | leafitem | "OPTIONAL" osp {grp} | "MINUS" osp {grp} '
                  f'| {grp} (sp "UNION" sp {grp}){{0,6}}',
                  f'{grp} ::= "{{" osp "}}" | "{{" osp item{g + 1} (sp item{g + 1}){{0,{items}}} osp "}}" '
                  f'| "{{" osp selecthead (sp "WHERE")? osp {_inner_group(g, depth)} (sp modifier){{0,3}} osp "}}"']
    return rules


def _inner_group(g: int, depth: int) -> str:
    # the WHERE of a sub-query is one level down; at the last level it is a flat group of triples
    return f"group{g + 1}" if g + 1 < depth else "flatgroup"


def _path_levels(depth: int) -> list[str]:
    rules = []
    for p in range(depth):
        nested = f' | "(" osp path{p + 1} osp ")"' if p + 1 < depth else ""
        rules += [f'path{p} ::= pathseq{p} (osp "|" osp pathseq{p}){{0,3}}',
                  f'pathseq{p} ::= pathelt{p} (osp "/" osp pathelt{p}){{0,3}}',
                  f'pathelt{p} ::= "^"? (placeholder | iri | "a"{nested}) ("*" | "+" | "?")?']
    return rules


@cache
def desq_grammar(bounds: DesqBounds = DesqBounds()) -> str:  # noqa: B008 - frozen, hashable default
    """The GBNF grammar of the DeSQ text form (built once per bounds from the parser's tables)."""
    b = bounds
    text = _TOP % {"acs": b.acs, "gl": b.grounding, "items": b.items - 1, "text": b.text, "label": b.label,
                   "desc": b.description, "values": _values_alts(), "aggs": _alts(list(AGGREGATES)),
                   "casts": _alts(sorted(CASTS)), "prefixes": _alts(sorted(p for p in KNOWN_PREFIXES if p))}
    if min(b.expr_depth, b.group_depth, b.path_depth) < 2:
        raise ValueError("DeSQ grammar depths must be at least 2")
    rules = [*_expr_levels(b.expr_depth), *_group_levels(b.group_depth, b.items - 1), *_path_levels(b.path_depth)]
    return text.strip() + "\n" + "\n".join(rules) + "\n"


def grammar_for(frontend: str) -> str | None:
    """The GBNF grammar of a front-end, or None when there is none (the model is then unconstrained)."""
    if frontend == "desq":
        return desq_grammar()
    from kbqa.translators.grammars_qcompiler_pyrag import GRAMMARS

    return GRAMMARS.get(frontend)
