"""The store probes of `explore` — what an entity is linked by, which classes point at it, which item of several
the KG uses most, whether a case's facts are there — built as Plans (`assembler/plan.py`) and written by the
assembler's SPARQL writer, the one that writes the candidates' queries too: explore writes no SPARQL text itself.
Each function returns the query text (None for an IRI no SPARQL query can hold: the probe then finds nothing, as
a store refusing it would say); the caller runs it within its own time limit."""

from __future__ import annotations

from assembler.plan import (
    IRI,
    Aggregate,
    Bind,
    Call,
    Filter,
    Group,
    Literal,
    Node,
    OrderKey,
    Projection,
    Query,
    Triple,
    Union,
    Values,
    Var,
)
from assembler.writer import write_sparql
from kb_dumps.profiles import XSD, KBProfile

_IRIS = KBProfile()  # full IRIs and the standard prefixes only


def _text(q: Query) -> str | None:
    return write_sparql(q, _IRIS, rename_vars=False).sparql


def _count(var: Var | None, name: str, *, distinct: bool = False) -> Projection:
    return Projection(Aggregate("COUNT", var, distinct=distinct), Var(name))


def _int(n: int) -> Literal:
    return Literal(str(n), datatype=XSD + "integer")


def is_a(item: str, type_predicate: str, cls: str) -> str | None:
    """ASK: is `item` of class `cls`?"""
    return _text(Query("ask", where=Group([Triple(IRI(item), IRI(type_predicate), IRI(cls))])))


def has_fact(item: str, prop: str, *, subject: bool) -> str | None:
    """ASK: does `item` have `prop` (as subject), or is it the object of `prop`?"""
    t = Triple(IRI(item), IRI(prop), Var("o")) if subject else Triple(Var("s"), IRI(prop), IRI(item))
    return _text(Query("ask", where=Group([t])))


def uses(items: list[str]) -> str | None:
    """How many triples point at each of `items` (?x, ?n)."""
    q = Query("select", [Var("x"), _count(Var("s"), "n")],
              where=Group([Values([Var("x")], [[IRI(i)] for i in items]), Triple(Var("s"), Var("p"), Var("x"))]),
              group_by=[Var("x")])
    return _text(q)


def items_named(type_predicate: str, cls: str, word: str) -> str | None:
    """How many items of `cls` have `word` in their IRI (?n)."""
    contains = Call("CONTAINS", [Call("LCASE", [Call("STR", [Var("x")])]), Literal(word)])
    q = Query("count", [_count(Var("x"), "n")],
              where=Group([Triple(Var("x"), IRI(type_predicate), IRI(cls)), Filter(contains)]))
    return _text(q)


def linking_predicates(item: str, limit: int) -> str | None:
    """The predicates that point at `item`, most used first (?p, ?n)."""
    q = Query("select", [Var("p"), _count(None, "n")], where=Group([Triple(Var("x"), Var("p"), IRI(item))]),
              group_by=[Var("p")], order_by=[OrderKey(Var("n"), True)], limit=limit)
    return _text(q)


def classes_pointing_at(item: str, type_predicate: str, limit: int) -> str | None:
    """The classes of what points at `item`, most first (?c, ?n)."""
    q = Query("select", [Var("c"), _count(Var("x"), "n")],
              where=Group([Triple(Var("x"), Var("p"), IRI(item)), Triple(Var("x"), IRI(type_predicate), Var("c"))]),
              group_by=[Var("c")], order_by=[OrderKey(Var("n"), True)], limit=limit)
    return _text(q)


def paths_to_class(entity: str, type_predicate: str, cls: str, limit: int) -> str | None:
    """How `entity` meets class `cls` (?p, ?d): it is one (d 2), an item points at it (d 1), it points at an
    item (d 0)."""
    def typed(x: Node) -> Triple:
        return Triple(x, IRI(type_predicate), IRI(cls))

    union = Union([
        Group([typed(IRI(entity)), Bind(_int(2), Var("d")), Bind(IRI(type_predicate), Var("p"))]),
        Group([typed(Var("x")), Triple(Var("x"), Var("p"), IRI(entity)), Bind(_int(1), Var("d"))]),
        Group([typed(Var("x")), Triple(IRI(entity), Var("p"), Var("x")), Bind(_int(0), Var("d"))]),
    ])
    return _text(Query("select", [Var("p"), Var("d")], distinct=True, where=Group([union]), limit=limit))


def shared_predicates(a: str, b: str, limit: int) -> str | None:
    """The predicates both items have (?p)."""
    q = Query("select", [Var("p")], distinct=True,
              where=Group([Triple(IRI(a), Var("p"), Var("a")), Triple(IRI(b), Var("p"), Var("b"))]), limit=limit)
    return _text(q)


def edges(item: str, limit: int) -> str | None:
    """`item`'s predicates in each direction with their use (?p, ?d: 1 out of it, 0 into it, ?n)."""
    union = Union([Group([Triple(IRI(item), Var("p"), Var("o")), Bind(_int(1), Var("d"))]),
                   Group([Triple(Var("o"), Var("p"), IRI(item)), Bind(_int(0), Var("d"))])])
    q = Query("select", [Var("p"), Var("d"), _count(None, "n")], where=Group([union]),
              group_by=[Var("p"), Var("d")], limit=limit)
    return _text(q)


def column_spread(preds: list[str], type_predicate: str, cls: str) -> str | None:
    """For each of `preds` on the items of `cls`: its different values and its uses (?p, ?n, ?m)."""
    q = Query("select", [Var("p"), _count(Var("o"), "n", distinct=True), _count(Var("x"), "m")],
              where=Group([Values([Var("p")], [[IRI(p)] for p in preds]),
                           Triple(Var("x"), IRI(type_predicate), IRI(cls)), Triple(Var("x"), Var("p"), Var("o"))]),
              group_by=[Var("p")])
    return _text(q)
