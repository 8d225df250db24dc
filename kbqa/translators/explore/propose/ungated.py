"""Query shapes the schema allows around a focus class, whether or not a cue word was read.

`propose/shapes.py` reads the question's cue words into shapes (a count word gives a COUNT, "each" a GROUP BY);
a phrasing its word lists lack would never be proposed. This module proposes, beside them, every shape the
linked attributes and related classes allow — the plain projection (and DISTINCT), COUNT, ASK, AVG / MIN / MAX
/ SUM of each numeric attribute (alone and per value of another attribute; several of one attribute, one of two
attributes, the count beside one aggregate, each also per value of another attribute, feature `multi_agg`; an
implied attribute's too), ORDER BY an attribute LIMIT 1 both ways, COUNT per attribute value (and its most /
least common value), related items counted per focus item (and the focus item with the most / fewest), HAVING a
count against a number of the question, NOT EXISTS of a related class, a related item's display column beside
the focus's attributes (`related_shown`), and counts and aggregates per value of the focus's own key column for a
class the question names, and how many different items of that class the column names (`key_twins`, feature
`key_twin`). Each carries the feature `ungated` = 1; the fitted ranker weighs it with the question's words
(features/structure.py), so which shape a question asks for is learned from the train KGs, not typed here. A
shape the cue reading also gave is kept once, with the cue reading's features (the search dedupes by key).
Group-by shapes also project their aggregate: a table with the count beside each value answers the question and
shows what ranked it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypedDict, Unpack

from rapidfuzz import fuzz

from kbqa.translators.explore.link.anchors import Anchors
from kbqa.translators.explore.propose.base import Probe, Shape
from kbqa.translators.explore.propose.shapes import Attr, comparisons, is_numeric, related_classes
from kbqa.translators.explore.query import Cond, Path, Step, Term

AGGREGATES = ("AVG", "MIN", "MAX", "SUM")
# aggregates asked of one attribute together: the range, and the mean with it
SEVERAL_AGGREGATES = (("MIN", "MAX"), ("AVG", "MIN", "MAX"))
MAX_NUMERIC = 2  # numeric attributes aggregated or ordered by
MAX_GROUP_KEYS = 2  # attributes grouped by
HAVING_OPS = (">", ">=", "<", "<=")
MAX_UNCUED = 2  # numbers no comparison word reads, each compared with an attribute
MAX_IMPLICIT = 2  # attributes of the focus class the question does not link, ordered by and aggregated


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
    yield from _uncued_comparisons(s, a, focus, attrs)
    if a.cues.comparisons:  # "days on which more than one revision was made": the number counts items per value
        yield from _counted_per_value(s, a, focus, attrs, spans)


def _counted_per_value(s: Probe, a: Anchors, focus: str, attrs: list[Attr], spans: list[tuple[int, int]]
                       ) -> Iterator[Shape]:
    """A compared number read as a count of items per attribute value or per focus item (HAVING), not as the
    attribute's value: the readings `_shapes` gives with no comparison condition."""
    f = {"ungated": 1.0, "cmp": 0.0}
    numbers = sorted({v for _op, v, _pos in a.cues.comparisons})[:2]
    for key in attrs[:MAX_GROUP_KEYS]:
        for value in numbers:
            for op in HAVING_OPS:
                yield Shape([key[0]], aggs=[("COUNT", None)], group=True, having=(op, value, ()),
                            spans=[key[1].span], features=dict(f))
    paths = [p for p, _ in attrs]
    for path, _lk, cls_span in related_classes(s, a, focus, spans):
        for value in numbers:
            for op in HAVING_OPS:
                yield Shape(paths or [()], aggs=[("COUNT", path)], group=True, having=(op, value, path),
                            spans=[x[1].span for x in attrs] + [cls_span], features=dict(f))


def _uncued_comparisons(s: Probe, a: Anchors, focus: str, attrs: list[Attr]) -> Iterator[Shape]:
    """A number that no comparison word of the language profile reads ("salaries over 9000" with *over* not
    listed): the numeric attribute nearest it (linked, else the focus's own most like the question) compared with
    it each way; the plain projection and the count. Feature `uncued_cmp`: the ranker weighs the words around."""
    cues = a.cues
    read = {n[1] for n in cues.numbers
            if any(v == n[0] and 0 < n[1] - pos < 40 for _op, v, pos in cues.comparisons)
            or (cues.between and n[0] in cues.between) or (cues.top_k is not None and n[0] == cues.top_k)}
    numeric = [x for x in attrs if is_numeric(s, x[0])]

    def compared(start: int, end: int) -> tuple[Path, list[tuple[int, int]]] | None:
        if numeric:
            x = min(numeric, key=lambda x: min(abs(x[1].span[0] - end), abs(start - x[1].span[1])))
            return x[0], [x[1].span]
        own = [p for p in implicit_attributes(s, a, focus, attrs, []) if is_numeric(s, p)]
        return (own[0], []) if own else None

    def number(value: float) -> Term:
        return Term("number", str(int(value)) if value == int(value) else str(value))

    unread = [n for n in cues.numbers if n[1] not in read]
    for value, start, end in unread[:MAX_UNCUED]:
        found = compared(start, end)
        if found is None:
            continue
        path, sp = found
        shown = [p for p, _ in attrs if p != path]
        term = number(value)
        for op in HAVING_OPS:
            cond = Cond(path, op, term, text=f"{op} {term.value}", span=(start, end))
            f = {"ungated": 1.0, "uncued_cmp": 1.0}
            yield Shape([()] + shown, conds=[cond], spans=sp + [(start, end)], features=dict(f))
            yield Shape([()], aggs=[("COUNT", None)], conds=[cond], spans=sp + [(start, end)], features=dict(f))
    if len(unread) >= 2:  # two numbers no word reads ("in the range of 10 and 20"): the attribute within both
        (v1, s1, _e1), (v2, _s2, e2) = unread[:2]
        found = compared(s1, e2)
        if found is not None and v1 != v2:
            path, sp = found
            lo, hi = min(v1, v2), max(v1, v2)
            conds = [Cond(path, ">=", number(lo), text=f">= {lo:g}", span=(s1, e2)),
                     Cond(path, "<=", number(hi), text=f"<= {hi:g}", span=(s1, e2))]
            shown = [p for p, _ in attrs if p != path]
            f = {"ungated": 1.0, "uncued_cmp": 1.0, "uncued_range": 1.0}
            yield Shape([()] + shown, conds=conds, spans=sp + [(s1, e2)], features=dict(f))
            yield Shape([()], aggs=[("COUNT", None)], conds=conds, spans=sp + [(s1, e2)], features=dict(f))


def _shapes(s: Probe, a: Anchors, focus: str, attrs: list[Attr], spans: list[tuple[int, int]], conds: list[Cond],
            f: dict[str, float], cond_spans: list[tuple[int, int]]) -> Iterator[Shape]:
    def shape(answer: list[Path], *, extra: tuple[Cond, ...] = (), sp: list[tuple[int, int]] | None = None,
              features: dict[str, float] | None = None, **kw: Unpack[ShapeOptions]) -> Shape:
        return Shape(answer, conds=conds + list(extra), spans=(sp or attr_spans) + cond_spans,
                     features={**f, **(features or {})}, **kw)

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
        # several aggregates of one attribute ("the oldest and the youngest age", "the mean, lowest and highest")
        for fns in SEVERAL_AGGREGATES:
            yield shape([()], aggs=[(fn, x[0]) for fn in fns], features={"multi_agg": 1.0})
        for key in others[:MAX_GROUP_KEYS]:  # the same per value of another attribute, and with the count
            yield from _grouped_several(shape, key[0], x[0])
    if len(numeric) >= 2:  # one aggregate of two attributes ("the total deaths and damage"), or the extremes
        pairs = [(fn, fn) for fn in AGGREGATES] + [("MIN", "MAX"), ("MAX", "MIN")]
        for fns in pairs:
            yield shape([()], aggs=[(fn, x[0]) for fn, x in zip(fns, numeric, strict=True)],
                        features={"multi_agg": 1.0})
        for key in [y for y in attrs if y not in numeric][:MAX_GROUP_KEYS]:  # ... per value of a third one
            for fn in AGGREGATES:
                yield shape([key[0]], aggs=[(fn, x[0]) for x in numeric], group=True, features={"multi_agg": 1.0})
    # a date or a text orders too (a text by its characters, as the store compares it: "56" < "9")
    for x in [x for x in attrs if not is_numeric(s, x[0])][:MAX_NUMERIC]:
        shown = [p for p, _ in attrs if p != x[0]]
        kind = {"key_date" if _is_date(s, x[0]) else "key_text": 1.0}
        for fn in ("MIN", "MAX"):
            yield shape([()], aggs=[(fn, x[0])], features=kind)
        for desc in (True, False):
            yield shape([()] + shown, order=(x[0], desc), limit=1, features=kind)
    # the attribute a superlative or an aggregate implies but the question does not name ("the largest dorm",
    # "when was the first payment"): the focus's own numbers and dates, and those of a related class it names
    for i, path in enumerate(implicit_attributes(s, a, focus, attrs, [(r[0], r[1].iri) for r in related])):
        date = {"implicit": 1.0, **({"key_date": 1.0} if _is_date(s, path) else {})}
        # an average or a total mostly names what it sums ("the average salary"): only of the likeliest one
        fns = ("MIN", "MAX") if i or _is_date(s, path) else AGGREGATES
        for fn in fns:
            yield shape([()], aggs=[(fn, path)], features=date)
        for key in [x for x in attrs if x[0] != path][:MAX_GROUP_KEYS]:  # "the youngest age for each job"
            for fn in fns:
                yield shape([key[0]], aggs=[(fn, path)], group=True, features=date)
        for desc in (True, False):
            yield shape([()] + paths, order=(path, desc), limit=1, features=date)
    numbers = sorted({n[0] for n in a.cues.numbers})
    twins = [t for t in key_twins(s, a, focus, spans) if t[0] not in paths]
    for key in attrs[:MAX_GROUP_KEYS] + twins:
        kf = {"key_twin": 1.0} if key in twins else None
        # how many different values; of a key column, how many of the related items the focus rows name ("how
        # many students have a grade B": the student ids of the enrolment rows, counted once each)
        yield shape([()], aggs=[("COUNT_DISTINCT", key[0])], features=kf)
        yield shape([key[0]], aggs=[("COUNT", None)], group=True, features=kf)
        for desc in (True, False):
            yield shape([key[0]], aggs=[("COUNT", None)], group=True, order=(None, desc), limit=1, features=kf)
        for value in numbers[:2]:  # "the cities with at least 15 stations": values counted, then compared
            for op in HAVING_OPS:
                yield shape([key[0]], aggs=[("COUNT", None)], group=True, having=(op, value, ()), features=kf)
    for x in numeric:  # "the average price for each maker": an aggregate per value of a key column
        for key in twins:
            for fn in AGGREGATES:
                yield shape([key[0]], aggs=[(fn, x[0])], group=True, features={"key_twin": 1.0})
    for path, lk, cls_span in related:
        sp = attr_spans + [cls_span]
        shown = paths or [()]
        col = s.display.of(lk.iri) if s.display is not None and path else None
        if col is not None:  # "each race's name and the name of its track": the related item's name beside
            yield shape([()] + paths + [path + (Step(col),)], sp=sp, features={"related_shown": 1.0})
        yield shape(shown, aggs=[("COUNT", path)], group=True, sp=sp)
        for desc in (True, False):
            yield shape(shown, aggs=[("COUNT", path)], group=True, order=(None, desc), limit=1, sp=sp)
        yield shape([()] + paths, extra=(Cond(path, "exists", None, negated=True, text=f"no {lk.text}",
                                              span=cls_span),), sp=sp)
        for value in numbers[:2]:
            for op in HAVING_OPS:
                yield shape(shown, aggs=[("COUNT", path)], group=True, having=(op, value, path), sp=sp)


def _grouped_several(shape: Callable[..., Shape], key: Path, target: Path) -> Iterator[Shape]:
    """Several aggregates per value of `key`: the extremes and the mean of `target` ("the lowest and highest price
    for each maker"), and the count of items beside one aggregate ("the number of ships and their average tonnage
    per type")."""
    for fns in SEVERAL_AGGREGATES:
        yield shape([key], aggs=[(fn, target) for fn in fns], group=True, features={"multi_agg": 1.0})
    for fn in AGGREGATES:
        yield shape([key], aggs=[("COUNT", None), (fn, target)], group=True, features={"multi_agg": 1.0})


def key_twins(s: Probe, a: Anchors, focus: str, spans: list[tuple[int, int]]) -> list[Attr]:
    """The focus's own key columns that stand for a class the question names: a predicate into that class whose
    name ends with the focus column's name, or (the predicate's subject untyped) is named as the column with one
    more word. W3C Direct Mapping writes a foreign key twice, `student#ref-dept_code` to the department and
    `student#dept_code` with the code; a table without a primary key gets blank subjects, and its links may not
    reach its typed rows at all. Grouped by, the column counts or aggregates the focus items per related item as
    the table stores them ("the number of students for each department"), with no join."""
    own = [p for p in s.schema.predicates_of(focus) if s.schema.predicates[p].literal]
    out: list[Attr] = []
    for lk in a.classes:
        if lk.iri == focus or any(lk.span == sp for sp in spans):
            continue
        for r in s.schema.predicates_into(lk.iri):
            ref = s.schema.predicates[r]
            if ref.domains and focus not in ref.domains:
                continue
            twin = _twin(s, own, ref.label.split() if ref.domains else ref.name.split(), by_name=not ref.domains)
            if twin and all(twin != x[0][0].pred for x in out):
                out.append(((Step(twin),), lk))
    return out[:MAX_GROUP_KEYS]


def _twin(s: Probe, own: list[str], words: list[str], *, by_name: bool) -> str | None:
    """The first of `own` whose label ends `words` (a link's label), or whose full name is `words` (a link's full
    name) with one word left out."""
    for p in own:
        info = s.schema.predicates[p]
        mine = (info.name if by_name else info.label).split()
        if by_name:
            if len(mine) == len(words) - 1 and any(words[:i] + words[i + 1:] == mine for i in range(len(words))):
                return p
        elif 0 < len(mine) < len(words) and words[-len(mine):] == mine:
            return p
    return None


def _is_date(s: Probe, path: Path) -> bool:
    info = s.schema.predicates.get(path[-1].pred) if path else None
    return bool(info and info.date)


def implicit_attributes(s: Probe, a: Anchors, focus: str, attrs: list[Attr], related: list[tuple[Path, str]]
                        ) -> list[Path]:
    """Numeric and date attributes the question does not link: the focus class's own (at most
    `MAX_IMPLICIT`) and one of each related class it names, those whose names look most like the question's
    words first (then the most used). Keys that join tables (IRI-valued) are no attributes."""
    linked = {x[0][-1].pred for x in attrs if x[0]}
    q = a.question.lower()

    def best(cls: str, n: int) -> list[str]:
        preds = []
        for p in s.schema.predicates_of(cls):
            info = s.schema.predicates[p]
            if p not in linked and info.literal and (info.numeric or info.date):
                preds.append((fuzz.partial_ratio(info.label, q), info.count, p))
        return [p for *_k, p in sorted(preds, reverse=True)[:n]]

    out: list[Path] = [(Step(p),) for p in best(focus, MAX_IMPLICIT)]
    for path, cls in related:
        out += [path + (Step(p),) for p in best(cls, 1)]
    return out

