"""Query shapes the schema allows around a focus class, whether or not a cue word was read.

`propose/shapes.py` reads the question's cue words into shapes (a count word gives a COUNT, "each" a GROUP BY);
a phrasing its word lists lack would never be proposed. This module proposes, beside them, every shape the
linked attributes and related classes allow — the plain projection (and DISTINCT), COUNT, ASK, AVG / MIN / MAX
/ SUM of each numeric attribute (alone and per value of another attribute), ORDER BY an attribute LIMIT 1 both
ways, COUNT per attribute value (and its most / least common value), related items counted per focus item (and
the focus item with the most / fewest), HAVING a count against a number of the question, and NOT EXISTS of a
related class. Each carries the feature `ungated` = 1; the fitted ranker weighs it with the question's words
(features/structure.py), so which shape a question asks for is learned from the train KGs, not typed here. A
shape the cue reading also gave is kept once, with the cue reading's features (the search dedupes by key).
Group-by shapes also project their aggregate: a table with the count beside each value answers the question
and shows what ranked it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypedDict, Unpack

from kbqa.translators.explore.link.anchors import Anchors
from kbqa.translators.explore.propose.base import Probe, Shape
from kbqa.translators.explore.propose.shapes import Attr, comparisons, is_numeric, related_classes
from kbqa.translators.explore.query import Cond, Path

AGGREGATES = ("AVG", "MIN", "MAX", "SUM")
MAX_NUMERIC = 2  # numeric attributes aggregated or ordered by
MAX_GROUP_KEYS = 2  # attributes grouped by
HAVING_OPS = (">", ">=", "<", "<=")


class ShapeOptions(TypedDict, total=False):
    """The form and modifiers of a `Shape` that a shape below sets (the rest keep their defaults)."""

    form: str
    aggs: list[tuple[str, Path | None]]
    group: bool
    order: tuple[Path | None, bool]
    limit: int
    distinct: bool
    having: tuple[str, float, Path]


def ungated_shapes(s: Probe, a: Anchors, focus: str, attrs: list[Attr], spans: list[tuple[int, int]]
                   ) -> Iterator[Shape]:
    """Each shape below, for each reading of the question's comparisons (none: one reading with no condition)."""
    for conds, used, cmp_score in comparisons(s, a, focus, attrs):
        free = [x for x in attrs if x not in used]
        yield from _shapes(s, a, focus, free, spans, conds, {"ungated": 1.0, "cmp": cmp_score},
                           [x[1].span for x in used])


def _shapes(s: Probe, a: Anchors, focus: str, attrs: list[Attr], spans: list[tuple[int, int]], conds: list[Cond],
            f: dict[str, float], cond_spans: list[tuple[int, int]]) -> Iterator[Shape]:
    def shape(answer: list[Path], *, extra: tuple[Cond, ...] = (), sp: list[tuple[int, int]] | None = None,
              **kw: Unpack[ShapeOptions]) -> Shape:
        return Shape(answer, conds=conds + list(extra), spans=(sp or attr_spans) + cond_spans, features=dict(f),
                      **kw)

    paths = [p for p, _ in attrs]
    attr_spans = [x[1].span for x in attrs]
    related = related_classes(s, a, focus, spans)
    yield shape([()] + paths)
    if paths:
        yield shape(paths, distinct=True)
    yield shape([()], aggs=[("COUNT", None)])
    yield shape([()], form="ask")
    numeric = [x for x in attrs if is_numeric(s, x[0])][:MAX_NUMERIC]
    for x in numeric:
        others = [y for y in attrs if y is not x]
        shown = [p for p, _ in others]
        for fn in AGGREGATES:
            yield shape([()], aggs=[(fn, x[0])])
            for key in others[:MAX_GROUP_KEYS]:
                yield shape([key[0]], aggs=[(fn, x[0])], group=True)
        for desc in (True, False):
            yield shape([()] + shown, order=(x[0], desc), limit=1)
    numbers = sorted({n[0] for n in a.cues.numbers})
    for key in attrs[:MAX_GROUP_KEYS]:
        yield shape([()], aggs=[("COUNT_DISTINCT", key[0])])  # how many different values
        yield shape([key[0]], aggs=[("COUNT", None)], group=True)
        for desc in (True, False):
            yield shape([key[0]], aggs=[("COUNT", None)], group=True, order=(None, desc), limit=1)
        for value in numbers[:2]:  # "the cities with at least 15 stations": values counted, then compared
            for op in HAVING_OPS:
                yield shape([key[0]], aggs=[("COUNT", None)], group=True, having=(op, value, ()))
    for path, lk, cls_span in related:
        sp = attr_spans + [cls_span]
        shown = paths or [()]
        yield shape(shown, aggs=[("COUNT", path)], group=True, sp=sp)
        for desc in (True, False):
            yield shape(shown, aggs=[("COUNT", path)], group=True, order=(None, desc), limit=1, sp=sp)
        yield shape([()] + paths, extra=(Cond(path, "exists", None, negated=True, text=f"no {lk.text}",
                                              span=cls_span),), sp=sp)
        for value in numbers[:2]:
            for op in HAVING_OPS:
                yield shape(shown, aggs=[("COUNT", path)], group=True, having=(op, value, path), sp=sp)
