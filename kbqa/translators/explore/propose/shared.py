"""A value two items share: "the hometowns of both people older than 30 and people younger than 20", "the colleges
that have both a forward and a goalkeeper" — the answer is an attribute value that one item meeting the first
constraint and *another* item meeting the second both have (SQL's INTERSECT on a column).

A rewrite of a finished candidate, not a reading of cue words: a candidate whose two constraints on one path no
single item can meet together (two different values, or two comparisons whose ranges do not meet) answers
nothing as it stands; each attribute it shows gives one more candidate that asks the second constraint of another
item with the same value of that attribute (`Cond.shared`). Likewise a candidate with one negated constraint: the
values of an attribute that no item with the value meets it for (SQL's EXCEPT on a column). Whether the question
means it ("both", "and also", "except", or nothing at all) is the ranker's to weigh (features/structure.py
`s_shared`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator

from grounding.schema import SchemaMemory
from kbqa.translators.explore.query import Cond, Graph, Path, Step

MAX_SHARED = 2  # attributes tried per candidate: the answer's first ones
_LOWER = {">": False, ">=": True}  # op -> whether the bound is included
_UPPER = {"<": False, "<=": True}


def shared_value_graphs(g: Graph, schema: SchemaMemory) -> Iterator[Graph]:
    """The shared-value readings of `g`: where two of its constraints exclude each other on one item, the second
    asked of another item with the same value; where one is negated, of every item with the same value ("the
    studios that made no film by Hill": no film of the studio has him, not only the film shown)."""
    if g.form != "select" or g.aggs or g.group or g.having or g.order is not None or g.parts or not g.focus_class:
        return
    pair = _exclusive_pair(g.conds)
    negated = [k for k, c in enumerate(g.conds) if c.negated and c.path and _simple(c)]
    if pair is not None:
        i, j = pair
    elif len(negated) == 1:
        i = j = negated[0]
    else:
        return
    own = {g.conds[i].path[0].pred, g.conds[j].path[0].pred}
    shown = [p for p in g.answer if len(p) == 1 and p[0].forward and p[0].pred not in own and
             (info := schema.predicates.get(p[0].pred)) is not None and info.literal][:MAX_SHARED]
    for attr in shown:
        other = dataclasses.replace(g.conds[j], path=_via(attr) + g.conds[j].path, apart=False, shared=len(attr))
        conds = [other if k == j else c for k, c in enumerate(g.conds)]
        out = Graph(g.family, focus_class=g.focus_class, conds=conds, answer=[attr], distinct=True)
        # the walk to the other item is two hops more
        out.features = {**g.features, "joins": out.joins()}
        yield out


def _via(attr: Path) -> Path:
    """From the focus to another item with the same value of `attr`: out along it, back along it."""
    return attr + tuple(Step(s.pred, not s.forward) for s in reversed(attr))


def _exclusive_pair(conds: list[Cond]) -> tuple[int, int] | None:
    """The first two plain constraints on one path that no single item meets together (by their values)."""
    for j, b in enumerate(conds):
        for i in range(j):
            a = conds[i]
            if a.path and a.path == b.path and _plain(a) and _plain(b) and _exclude(a, b):
                return i, j
    return None


def _plain(c: Cond) -> bool:
    return not c.negated and _simple(c) and c.value is not None


def _simple(c: Cond) -> bool:
    return not (c.name_filter or c.any_of or c.other is not None or c.versus_average is not None or c.shared)


def _exclude(a: Cond, b: Cond) -> bool:
    assert a.value is not None and b.value is not None
    if a.op == "=" and b.op == "=":
        return a.value.value != b.value.value
    ra, rb = _range(a), _range(b)
    if ra is None or rb is None:
        return False
    lo = max(ra[0], rb[0], key=lambda bound: (bound[0], not bound[1]))
    hi = min(ra[1], rb[1], key=lambda bound: (bound[0], bound[1]))
    return lo[0] > hi[0] or (lo[0] == hi[0] and not (lo[1] and hi[1]))


def _range(c: Cond) -> tuple[tuple[float, bool], tuple[float, bool]] | None:
    """((low, included), (high, included)) of a comparison with a number; None for anything else."""
    assert c.value is not None
    try:
        x = float(c.value.value)
    except ValueError:
        return None
    if c.op in _LOWER:
        return (x, _LOWER[c.op]), (math.inf, False)
    if c.op in _UPPER:
        return (-math.inf, False), (x, _UPPER[c.op])
    if c.op == "=":
        return (x, True), (x, True)
    return None
