"""Gold SPARQL → Plan for decompose: walks rdflib's parse tree, IRIs become placeholders.

Why rdflib's *parse tree* (after prefix resolution) and not its algebra or pyoxigraph: the parse
tree keeps the query as written — triple order, FILTER position, `{ }` nesting, OPTIONAL order —
so that one AC per written pattern falls out directly, and writing the Plan back gives a query
whose algebra is the gold's (the algebra reorders triples and folds filters, which would lose the
ACs; pyoxigraph exposes no syntax tree at all).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeAlias

from rdflib import BNode, URIRef, Variable
from rdflib import Literal as RdfLiteral
from rdflib.plugins.sparql.algebra import translatePName, translatePrologue, traverse
from rdflib.plugins.sparql.parser import parseQuery
from rdflib.plugins.sparql.parserutils import CompValue
from rdflib.term import Identifier

from assembler.plan import (
    AGGREGATES,
    Aggregate,
    BinaryOp,
    Bind,
    Call,
    Exists,
    Filter,
    Group,
    In,
    Literal,
    Minus,
    Node,
    Optional,
    OrderKey,
    PathAlt,
    PathInv,
    PathMod,
    PathSeq,
    Projection,
    Query,
    SubQuery,
    Triple,
    UnaryOp,
    Union,
    Values,
    Var,
)
from assembler.writer import BUILTINS, CASTS
from kb_dumps.profiles import XSD

# A term IRI → Plan node; `position` is "subject", "object", "class" (object of a typing
# predicate), "value" (VALUES / expressions) or "predicate". Supplied by decompose (placeholders).
TermMaker = Callable[[str, str], Node]
# A value in rdflib's SPARQL parse tree: a node, a term, an operator or keyword ("*", "DESC", "UNDEF"), a list of these.
ParseNode: TypeAlias = CompValue | Identifier | str | list["ParseNode"] | None

_EXPR_CHAINS = {"ConditionalOrExpression": "||", "ConditionalAndExpression": "&&"}
_ARITH_CHAINS = ("AdditiveExpression", "MultiplicativeExpression")
_UNARY = {"UnaryNot": "!", "UnaryMinus": "-", "UnaryPlus": "+"}
# Argument names rdflib's parser gives each built-in, in call order (default: arg, arg1, arg2, arg3).
_BUILTIN_ARGS = {
    "REGEX": ("text", "pattern", "flags"),
    "SUBSTR": ("arg", "start", "length"),
    "REPLACE": ("arg", "pattern", "replacement", "flags"),
}
_AGG_NAMES = {"Count": "COUNT", "Sum": "SUM", "Min": "MIN", "Max": "MAX", "Avg": "AVG", "Sample": "SAMPLE",
              "GroupConcat": "GROUP_CONCAT"}


class Unsupported(Exception):
    """The gold query uses something decompose cannot express as a Plan (message says what)."""


def parse_gold(sparql: str) -> CompValue:
    """The query part of rdflib's parse tree with prefixed names resolved. Raises on a syntax error."""
    tree = parseQuery(sparql)
    prologue = translatePrologue(tree[0], None)
    return traverse(tree[1], visitPost=functools.partial(translatePName, prologue=prologue))


class Lowerer:
    """One gold query → Plan; IRIs go through `make_term` (placeholders), variables keep their names."""

    def __init__(self, make_term: TermMaker, type_predicates: tuple[str, ...] = ()):
        self.make_term = make_term
        self.type_predicates = set(type_predicates)
        self.bnodes: dict[str, str] = {}

    # ---- query ---------------------------------------------------------------------------
    def query(self, q: CompValue) -> Query:
        name = q.name
        if name not in ("SelectQuery", "AskQuery", "SubSelect"):
            form = name.replace("Query", "").upper()
            raise Unsupported(f"{form} queries are not supported (only SELECT and ASK)")
        if _g(q, "datasetClause"):
            raise Unsupported("FROM / FROM NAMED clauses are not supported")
        out = Query(form="ask" if name == "AskQuery" else "select")
        if _g(q, "modifier") == "REDUCED":
            raise Unsupported("SELECT REDUCED is not supported")
        out.distinct = _g(q, "modifier") == "DISTINCT"
        for p in _g(q, "projection") or []:
            if _g(p, "evar") is not None:
                out.projection.append(Projection(self.expr(p["expr"]), Var(str(p["evar"]))))
            else:
                out.projection.append(Var(str(p["var"])))
        if (len(out.projection) == 1 and isinstance(out.projection[0], Projection)
                and isinstance(out.projection[0].expr, Aggregate) and out.projection[0].expr.name == "COUNT"):
            out.form = "count"  # what the DeSQ reader calls a SELECT of one COUNT
        out.where = self.where(q["where"])
        if _g(q, "valuesClause") is not None:
            raise Unsupported("a VALUES clause after the WHERE block is not supported")
        if _g(q, "groupby") is not None:
            for c in q["groupby"]["condition"]:
                if isinstance(c, CompValue) and c.name == "GroupAs":
                    raise Unsupported("GROUP BY (expression AS ?var) is not supported")
                out.group_by.append(self.expr(c))
        if _g(q, "having") is not None:
            out.having = [self.expr(c) for c in q["having"]["condition"]]
        if _g(q, "orderby") is not None:
            for c in q["orderby"]["condition"]:
                if isinstance(c, CompValue) and c.name == "OrderCondition":
                    out.order_by.append(OrderKey(self.expr(c["expr"]), _g(c, "order") == "DESC"))
                else:
                    out.order_by.append(OrderKey(self.expr(c)))
        lo = _g(q, "limitoffset")
        if lo is not None:
            if _g(lo, "limit") is not None:
                out.limit = int(lo["limit"])
            if _g(lo, "offset") is not None:
                out.offset = int(lo["offset"])
        return out

    # ---- graph patterns --------------------------------------------------------------------
    def where(self, g: CompValue) -> Group:
        if g.name == "SubSelect":  # `WHERE { SELECT … }`
            return Group([SubQuery(self.query(g))])
        return self.group(g)

    def group(self, g: CompValue) -> Group:
        if g.name == "SubSelect":
            return Group([SubQuery(self.query(g))])
        parts = list(_g(g, "part") or [])
        filters = [p for p in parts if p.name == "Filter"]
        items: list[Node] = []
        for p in parts:
            conj = _nary_and(p["expr"]) if p.name == "Filter" and len(filters) == 1 else None
            if conj is not None:
                # rdflib folds a group's FILTERs into one `a && b && c`, so one FILTER per conjunct
                # has the gold's algebra; a nested `(a && b) && c` would not.
                items.extend(Filter(self.expr(e)) for e in conj)
                continue
            items.extend(self.part(p))
        return Group(items)

    def part(self, p: CompValue) -> list[Node]:
        name = p.name
        if name == "TriplesBlock":
            return self.triples(p["triples"])
        if name == "Filter":
            return [Filter(self.expr(p["expr"]))]
        if name == "OptionalGraphPattern":
            return [Optional(self.group(p["graph"]))]
        if name == "MinusGraphPattern":
            return [Minus(self.group(p["graph"]))]
        if name == "GroupOrUnionGraphPattern":
            graphs = list(p["graph"])
            if len(graphs) == 1:
                g = graphs[0]
                return [SubQuery(self.query(g))] if g.name == "SubSelect" else [self.group(g)]
            return [Union([self.group(g) for g in graphs])]
        if name == "Bind":
            return [Bind(self.expr(p["expr"]), Var(str(p["var"])))]
        if name == "InlineData":
            return [self.values(p)]
        if name == "ServiceGraphPattern":
            raise Unsupported("SERVICE (other than wikibase:label) needs a remote endpoint")
        if name == "GraphGraphPattern":
            raise Unsupported("GRAPH patterns are not supported")
        raise Unsupported(f"unsupported graph pattern {name}")

    def values(self, p: CompValue) -> Values:
        names = [Var(str(v)) for v in _g(p, "var") or []]
        rows: list[list[Node | None]] = []
        raw = list(_g(p, "value") or [])
        for row in (raw if raw and isinstance(raw[0], list) else [[v] for v in raw]):
            rows.append([None if _is_undef(v) else self.term(v, "value") for v in row])
        return Values(names, rows)

    def triples(self, blocks: list) -> list[Node]:
        out: list[Node] = []
        for flat in blocks:
            if len(flat) % 3:
                raise Unsupported("malformed triple block")
            for i in range(0, len(flat), 3):
                s, p, o = flat[i:i + 3]
                pred = self.predicate(p)
                typed = _single_iri(p) in self.type_predicates
                out.append(Triple(self.term(s, "subject"), pred, self.term(o, "class" if typed else "object")))
        return out

    def predicate(self, p: ParseNode) -> Node:
        if isinstance(p, Variable):
            return Var(str(p))
        if isinstance(p, URIRef):
            return self.make_term(str(p), "predicate")
        if not isinstance(p, CompValue):
            raise Unsupported(f"unsupported predicate {p!r}"[:120])
        parts = _g(p, "part")
        if p.name in ("PathAlternative", "PathSequence"):
            items = [self.predicate(x) for x in parts]
            if len(items) == 1:
                return items[0]
            return PathAlt(items) if p.name == "PathAlternative" else PathSeq(items)
        if p.name == "PathElt":
            inner = self.predicate(parts[0] if isinstance(parts, list) else parts)
            return PathMod(inner, str(p["mod"])) if _g(p, "mod") else inner
        if p.name == "PathEltOrInverse":
            return PathInv(self.predicate(parts[0] if isinstance(parts, list) else parts))
        raise Unsupported(f"property path {p.name} (negated property sets) is not supported")

    # ---- terms and expressions -------------------------------------------------------------
    def term(self, t: ParseNode, position: str) -> Node:
        if isinstance(t, Variable):
            return Var(str(t))
        if isinstance(t, BNode):
            # A blank node in a pattern is an unnamed variable; it gets a name of its own.
            key = str(t)
            self.bnodes.setdefault(key, f"_b{len(self.bnodes) + 1}")
            return Var(self.bnodes[key])
        if isinstance(t, URIRef):
            return self.make_term(str(t), position)
        if isinstance(t, RdfLiteral):
            dt = str(t.datatype) if t.datatype is not None else None
            return Literal(str(t), datatype=dt, lang=t.language or None)
        raise Unsupported(f"unsupported term {t!r}"[:120])

    def expr(self, e: ParseNode) -> Node:
        if not isinstance(e, CompValue):
            if isinstance(e, list) and len(e) == 1:
                return self.expr(e[0])
            return self.term(e, "value")
        name = e.name
        if name in _EXPR_CHAINS or name in _ARITH_CHAINS or name == "RelationalExpression":
            return self.chain(e)
        if name in _UNARY:
            return UnaryOp(_UNARY[name], self.expr(e["expr"]))
        if name in ("Builtin_EXISTS", "Builtin_NOTEXISTS"):
            return Exists(self.group(e["graph"]), negated=name == "Builtin_NOTEXISTS")
        if name.startswith("Builtin_"):
            return self.builtin(e)
        if name.startswith("Aggregate_"):
            return self.aggregate(e)
        if name == "Function":
            iri = str(e["iri"])
            if iri.startswith(XSD) and iri[len(XSD):] in CASTS:
                return Call("xsd:" + iri[len(XSD):], [self.expr(a) for a in _g(e, "expr") or []])
            raise Unsupported(f"function <{iri}> is not a SPARQL built-in or xsd cast")
        raise Unsupported(f"unsupported expression {name}")

    def chain(self, e: CompValue) -> Node:
        left = self.expr(e["expr"])
        other = _g(e, "other")
        if other is None:
            return left
        name = e.name
        if name == "RelationalExpression":
            op = str(e["op"])
            if op in ("IN", "NOT IN"):
                return In(left, [self.expr(x) for x in other], negated=op == "NOT IN")
            return BinaryOp(op, left, self.expr(other))
        others = other if isinstance(other, list) else [other]
        ops = [_EXPR_CHAINS[name]] * len(others) if name in _EXPR_CHAINS else list(e["op"])
        if len(others) > 1:
            # rdflib keeps `a op b op c` flat; the Plan nests it, which rdflib reads back differently.
            raise Unsupported(f"a chain of {len(others) + 1} operands ({' '.join(ops)}) in one expression")
        return BinaryOp(ops[0], left, self.expr(others[0]))

    def builtin(self, e: CompValue) -> Node:
        name = e.name[len("Builtin_"):].upper()
        if name not in BUILTINS:
            raise Unsupported(f"built-in {name} is not supported")
        keys = _BUILTIN_ARGS.get(name, ("arg", "arg1", "arg2", "arg3"))
        args: list[Node] = []
        for k in keys:
            v = _g(e, k)
            if v is None:
                continue
            if isinstance(v, list) and name in ("CONCAT", "COALESCE"):
                args.extend(self.expr(x) for x in v)
            else:
                args.append(self.expr(v))
        return Call(name, args)

    def aggregate(self, e: CompValue) -> Aggregate:
        kind = e.name[len("Aggregate_"):]
        name = _AGG_NAMES.get(kind)
        if name is None or name not in AGGREGATES:
            raise Unsupported(f"aggregate {kind} is not supported")
        arg = _g(e, "vars")
        distinct = bool(_g(e, "distinct"))
        sep = _g(e, "separator")
        return Aggregate(name, None if arg == "*" or arg is None else self.expr(arg), distinct,
                         None if sep is None else str(sep))


def _g(node: ParseNode, key: str) -> ParseNode:
    """A field of a parse-tree node or None (CompValue.get returns odd values for missing keys)."""
    return node[key] if isinstance(node, CompValue) and key in node else None


def _is_undef(v: ParseNode) -> bool:
    return isinstance(v, str) and not isinstance(v, URIRef | RdfLiteral) and v.upper() == "UNDEF"


def _nary_and(e: ParseNode) -> list[ParseNode] | None:
    """The conjuncts of `a && b && c` (three or more, under single-operand wrappers), else None."""
    while isinstance(e, CompValue) and e.name == "ConditionalOrExpression" and _g(e, "other") is None:
        e = e["expr"]
    if (isinstance(e, CompValue) and e.name == "ConditionalAndExpression"
            and isinstance(_g(e, "other"), list) and len(e["other"]) >= 2):
        return [e["expr"], *e["other"]]
    return None


def _single_iri(p: ParseNode) -> str | None:
    """The IRI of a predicate that is a plain IRI wrapped in rdflib's path nodes, else None."""
    while isinstance(p, CompValue) and p.name in ("PathAlternative", "PathSequence", "PathElt"):
        if _g(p, "mod"):
            return None
        parts = _g(p, "part")
        if isinstance(parts, list):
            if len(parts) != 1:
                return None
            parts = parts[0]
        p = parts
    return str(p) if isinstance(p, URIRef) else None
