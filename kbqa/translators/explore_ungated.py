"""Query shapes the schema allows around a focus class, whether or not a cue word was read.

`explore_shapes.py` reads the question's cue words into shapes (a count word gives a COUNT, "each" a GROUP BY);
a phrasing its word lists lack would never be proposed. This module proposes, beside them, every shape the
linked attributes and related classes allow — the plain projection (and DISTINCT), COUNT, ASK, AVG / MIN / MAX
/ SUM of each numeric attribute (alone and per value of another attribute), ORDER BY an attribute LIMIT 1 both
ways, COUNT per attribute value (and its most / least common value), related items counted per focus item (and
the focus item with the most / fewest), HAVING a count against a number of the question, and NOT EXISTS of a
related class. Each carries the feature `ungated` = 1; the fitted ranker weighs it with the question's words
(explore_structure.py), so which shape a question asks for is learned from the train KGs, not typed here. A
shape the cue reading also gave is kept once, with the cue reading's features (the search dedupes by key).
Group-by shapes also project their aggregate: a table with the count beside each value answers the question
and shows what ranked it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from kbqa.translators.explore_graphs import Cond
from kbqa.translators.explore_shapes import Attr, _numeric, _related_classes

if TYPE_CHECKING:
    from kbqa.translators.explore_search import Anchors, Search, _Shape

AGGREGATES = ("AVG", "MIN", "MAX", "SUM")
MAX_NUMERIC = 2  # numeric attributes aggregated or ordered by
MAX_GROUP_KEYS = 2  # attributes grouped by
HAVING_OPS = (">", ">=", "<", "<=")


def ungated_shapes(s: Search, a: Anchors, focus: str, attrs: list[Attr], spans: list[tuple[int, int]]
                   ) -> Iterator[_Shape]:
    from kbqa.translators.explore_search import _Shape

    f = {"ungated": 1.0}
    paths = [p for p, _ in attrs]
    attr_spans = [x[1].span for x in attrs]
    related = _related_classes(s, a, focus, spans)
    yield _Shape([()] + paths, spans=attr_spans, features=f)
    if paths:
        yield _Shape(paths, distinct=True, spans=attr_spans, features=f)
    yield _Shape([()], aggs=[("COUNT", None)], spans=attr_spans, features=f)
    yield _Shape([()], form="ask", spans=attr_spans, features=f)
    numeric = [x for x in attrs if _numeric(s, x[0])][:MAX_NUMERIC]
    for x in numeric:
        others = [y for y in attrs if y is not x]
        shown = [p for p, _ in others]
        for fn in AGGREGATES:
            yield _Shape([()], aggs=[(fn, x[0])], spans=attr_spans, features=f)
            for key in others[:MAX_GROUP_KEYS]:
                yield _Shape([key[0]], aggs=[(fn, x[0])], group=True, spans=attr_spans, features=f)
        for desc in (True, False):
            yield _Shape([()] + shown, order=(x[0], desc), limit=1, spans=attr_spans, features=f)
    numbers = sorted({n[0] for n in a.cues.numbers})
    for key in attrs[:MAX_GROUP_KEYS]:
        yield _Shape([key[0]], aggs=[("COUNT", None)], group=True, spans=attr_spans, features=f)
        for desc in (True, False):
            yield _Shape([key[0]], aggs=[("COUNT", None)], group=True, order=(None, desc), limit=1,
                         spans=attr_spans, features=f)
        for value in numbers[:2]:  # "the cities with at least 15 stations": values counted, then compared
            for op in HAVING_OPS:
                yield _Shape([key[0]], aggs=[("COUNT", None)], group=True, having=(op, value, ()), spans=attr_spans,
                             features=f)
    for path, lk, cls_span in related:
        sp = attr_spans + [cls_span]
        shown = paths or [()]
        yield _Shape(shown, aggs=[("COUNT", path)], group=True, spans=sp, features=f)
        for desc in (True, False):
            yield _Shape(shown, aggs=[("COUNT", path)], group=True, order=(None, desc), limit=1, spans=sp,
                         features=f)
        yield _Shape([()] + paths, conds=[Cond(path, "exists", None, negated=True, text=f"no {lk.text}",
                                               span=cls_span)], spans=sp, features=f)
        for value in numbers[:2]:
            for op in HAVING_OPS:
                yield _Shape(shown, aggs=[("COUNT", path)], group=True, having=(op, value, path), spans=sp,
                             features=f)
