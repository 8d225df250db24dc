"""The store probes of `explore` — what an entity is linked by, which classes point at it, which item of several
the KG uses most, whether a case's facts are there — built as Plans (`assembler/plan.py`) and written by the
assembler's SPARQL writer, the one that writes the candidates' queries too: explore writes no SPARQL text itself.
Each function returns the query text (None for an IRI no SPARQL query can hold: the probe then finds nothing, as
a store refusing it would say); the caller runs it within its own time limit."""

from __future__ import annotations

from assembler import plan as ir
from assembler.writer import write_sparql
from kb_dumps.profiles import XSD, KBProfile

_IRIS = KBProfile()  # full IRIs and the standard prefixes only


def _text(q: ir.Query) -> str | None:
    return write_sparql(q, _IRIS, rename_vars=False).sparql


def _count(var: ir.Var | None, name: str, *, distinct: bool = False) -> ir.Projection:
    return ir.Projection(ir.Aggregate("COUNT", var, distinct=distinct), ir.Var(name))


def _int(n: int) -> ir.Literal:
    return ir.Literal(str(n), datatype=XSD + "integer")


def is_a(item: str, type_predicate: str, cls: str) -> str | None:
    """ASK: is `item` of class `cls`?"""
    return _text(ir.Query("ask", where=ir.Group([ir.Triple(ir.IRI(item), ir.IRI(type_predicate), ir.IRI(cls))])))


def has_fact(item: str, prop: str, *, subject: bool) -> str | None:
    """ASK: does `item` have `prop` (as subject), or is it the object of `prop`?"""
    t = ir.Triple(ir.IRI(item), ir.IRI(prop), ir.Var("o")) if subject else ir.Triple(ir.Var("s"), ir.IRI(prop), ir.IRI(item))
    return _text(ir.Query("ask", where=ir.Group([t])))


def mentioned(item: str) -> str | None:
    """ASK: is `item` in any triple of the store (as subject or object)?"""
    return _text(ir.Query("ask", where=ir.Group([ir.Union([
        ir.Group([ir.Triple(ir.IRI(item), ir.Var("p"), ir.Var("o"))]),
        ir.Group([ir.Triple(ir.Var("s"), ir.Var("p"), ir.IRI(item))]),
    ])])))


def uses(items: list[str]) -> str | None:
    """How many triples point at each of `items` (?x, ?n)."""
    q = ir.Query("select", [ir.Var("x"), _count(ir.Var("s"), "n")],
              where=ir.Group([ir.Values([ir.Var("x")], [[ir.IRI(i)] for i in items]), ir.Triple(ir.Var("s"), ir.Var("p"), ir.Var("x"))]),
              group_by=[ir.Var("x")])
    return _text(q)


def items_named(type_predicate: str, cls: str, word: str) -> str | None:
    """How many items of `cls` have `word` in their IRI (?n)."""
    contains = ir.Call("CONTAINS", [ir.Call("LCASE", [ir.Call("STR", [ir.Var("x")])]), ir.Literal(word)])
    q = ir.Query("count", [_count(ir.Var("x"), "n")],
              where=ir.Group([ir.Triple(ir.Var("x"), ir.IRI(type_predicate), ir.IRI(cls)), ir.Filter(contains)]))
    return _text(q)


def linking_predicates(item: str, limit: int) -> str | None:
    """The predicates that point at `item`, most used first (?p, ?n)."""
    q = ir.Query("select", [ir.Var("p"), _count(None, "n")], where=ir.Group([ir.Triple(ir.Var("x"), ir.Var("p"), ir.IRI(item))]),
              group_by=[ir.Var("p")], order_by=[ir.OrderKey(ir.Var("n"), True)], limit=limit)
    return _text(q)


def classes_pointing_at(item: str, type_predicate: str, limit: int) -> str | None:
    """The classes of what points at `item`, most first (?c, ?n)."""
    q = ir.Query("select", [ir.Var("c"), _count(ir.Var("x"), "n")],
              where=ir.Group([ir.Triple(ir.Var("x"), ir.Var("p"), ir.IRI(item)), ir.Triple(ir.Var("x"), ir.IRI(type_predicate), ir.Var("c"))]),
              group_by=[ir.Var("c")], order_by=[ir.OrderKey(ir.Var("n"), True)], limit=limit)
    return _text(q)


def paths_to_class(entity: str, type_predicate: str, cls: str, limit: int) -> str | None:
    """How `entity` meets class `cls` (?p, ?d): it is one (d 2), an item points at it (d 1), it points at an
    item (d 0)."""
    def typed(x: ir.Node) -> ir.Triple:
        return ir.Triple(x, ir.IRI(type_predicate), ir.IRI(cls))

    union = ir.Union([
        ir.Group([typed(ir.IRI(entity)), ir.Bind(_int(2), ir.Var("d")), ir.Bind(ir.IRI(type_predicate), ir.Var("p"))]),
        ir.Group([typed(ir.Var("x")), ir.Triple(ir.Var("x"), ir.Var("p"), ir.IRI(entity)), ir.Bind(_int(1), ir.Var("d"))]),
        ir.Group([typed(ir.Var("x")), ir.Triple(ir.IRI(entity), ir.Var("p"), ir.Var("x")), ir.Bind(_int(0), ir.Var("d"))]),
    ])
    return _text(ir.Query("select", [ir.Var("p"), ir.Var("d")], distinct=True, where=ir.Group([union]), limit=limit))


def shared_predicates(a: str, b: str, limit: int) -> str | None:
    """The predicates both items have (?p)."""
    q = ir.Query("select", [ir.Var("p")], distinct=True,
              where=ir.Group([ir.Triple(ir.IRI(a), ir.Var("p"), ir.Var("a")), ir.Triple(ir.IRI(b), ir.Var("p"), ir.Var("b"))]), limit=limit)
    return _text(q)


def edges(item: str, limit: int) -> str | None:
    """`item`'s predicates in each direction with their use (?p, ?d: 1 out of it, 0 into it, ?n)."""
    union = ir.Union([ir.Group([ir.Triple(ir.IRI(item), ir.Var("p"), ir.Var("o")), ir.Bind(_int(1), ir.Var("d"))]),
                   ir.Group([ir.Triple(ir.Var("o"), ir.Var("p"), ir.IRI(item)), ir.Bind(_int(0), ir.Var("d"))])])
    q = ir.Query("select", [ir.Var("p"), ir.Var("d"), _count(None, "n")], where=ir.Group([union]),
              group_by=[ir.Var("p"), ir.Var("d")], limit=limit)
    return _text(q)


def column_spread(preds: list[str], type_predicate: str, cls: str) -> str | None:
    """For each of `preds` on the items of `cls`: its different values and its uses (?p, ?n, ?m)."""
    q = ir.Query("select", [ir.Var("p"), _count(ir.Var("o"), "n", distinct=True), _count(ir.Var("x"), "m")],
              where=ir.Group([ir.Values([ir.Var("p")], [[ir.IRI(p)] for p in preds]),
                           ir.Triple(ir.Var("x"), ir.IRI(type_predicate), ir.IRI(cls)), ir.Triple(ir.Var("x"), ir.Var("p"), ir.Var("o"))]),
              group_by=[ir.Var("p")])
    return _text(q)
