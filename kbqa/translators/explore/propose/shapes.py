"""Query shapes of the `explore` search: how the question's cue words (how many, average, most, each, ordered
by, more than, not, is there) read over the focus class and the attributes it names. Each reading is yielded
as an alternative with features saying which cues it honours and which it leaves unused; the ranker decides."""

from __future__ import annotations

import re
from collections.abc import Iterator

from kbqa.translators.explore.link.anchors import Anchors, names_unit
from kbqa.translators.explore.link.words import Link, cue_spans
from kbqa.translators.explore.propose.base import Probe, Shape
from kbqa.translators.explore.propose.conjunctions import either
from kbqa.translators.explore.query import Cond, Path, Step, Term

Attr = tuple[Path, Link]


def _implied(s: Probe, a: Anchors, focus: str, word: str, pos: int) -> list[Attr]:
    """Numeric attributes of the focus that a superlative implies ("heaviest" -> *weight*, *body weight*); the
    language profile's `implied_attributes` says which noun each superlative implies."""
    noun = a.lang.implied_attribute(word)
    if noun is None:
        return []
    out = []
    for p in s.schema.predicates_of(focus):
        info = s.schema.predicates[p]
        if info.literal and (info.numeric or info.date) and noun in info.label.split():
            out.append(((Step(p),), Link("predicate", p, 0.6, (pos, pos), word, label=info.label)))
    return out[:2]


def _near(attrs: list[Attr], pos: int, after: bool | None = None) -> list[Attr]:
    """Attributes by distance from a cue at `pos` (`after`: only those that follow / precede it)."""
    pool = [x for x in attrs if after is None or (x[1].span[0] >= pos if after else x[1].span[1] <= pos)] or attrs
    return sorted(pool, key=lambda x: min(abs(x[1].span[0] - pos), abs(x[1].span[1] - pos)))


def is_numeric(s: Probe, path: Path) -> bool:
    info = s.schema.predicates.get(path[-1].pred) if path else None
    return bool(info and info.numeric)


def _number_term(s: Probe, path: Path, value: float) -> Term:
    text = str(int(value)) if value == int(value) else str(value)
    if is_numeric(s, path):
        return Term("number", text)
    return Term("literal", text, label=text)  # a year kept as a string: compare as the store writes it


def _compared_number(a: Anchors, value: float, pos: int) -> tuple[float, int, int] | None:
    """The number a comparison word at `pos` compares with: its first mention after the word (value, start, end)."""
    return next((n for n in a.cues.numbers if n[1] >= pos and n[0] == value), None)


def _unit_first(a: Anchors, ranked: list[Attr], value: float, pos: int) -> list[Attr]:
    """The attribute named right after the compared number is its unit ("at least 20 floors"): first, whatever
    attribute stands nearer the comparison word."""
    num = _compared_number(a, value, pos)
    if num is None:
        return ranked
    unit = [x for x in ranked if names_unit(a.question, num[2], x[1].span)]
    return unit[:1] + [x for x in ranked if x not in unit[:1]]


def comparisons(s: Probe, a: Anchors, focus: str, attrs: list[Attr]) -> list[tuple[list[Cond], list[Attr], float]]:
    """Readings of "more than 20", "before 2016", "between 3 and 7": (conditions, attributes they use, score)."""
    cues = a.cues
    if cues.vs_average:
        out = []
        numeric = [x for x in attrs if is_numeric(s, x[0])]
        for op, pos in cues.vs_average:
            for x in (_near(numeric, pos) or [])[:2]:
                out.append(([Cond(x[0], op, None, text=f"{op} average", versus_average=focus, span=(pos, pos + 1))],
                            [x], 1.0))
        if out:
            return out
    if not cues.comparisons and not cues.between:
        return [([], [], 0.0)]
    numeric_attrs = [x for x in attrs if is_numeric(s, x[0]) or (s.schema.predicates.get(x[0][-1].pred) and
                                                                 s.schema.predicates[x[0][-1].pred].date)]
    # the attribute a comparative word implies, named or not ("older than 20": *age*), nearest the word
    implied = [x for _op, word, pos in cues.comparatives for x in _implied(s, a, focus, word, pos)]
    numeric_attrs = implied + [x for x in numeric_attrs if x[0] not in {y[0] for y in implied}]
    if not numeric_attrs:  # "animals before 2016": no attribute named; try the focus's year-like or numeric ones
        cands = []
        for p in s.schema.predicates_of(focus):
            info = s.schema.predicates[p]
            if info.literal and (info.numeric or info.date or "year" in info.label):
                lk = Link("predicate", p, 0.3, (cues.comparisons[0][2] if cues.comparisons else 0,) * 2, "",
                          label=info.label)
                cands.append(((Step(p),), lk))
        cands.sort(key=lambda x: ("year" not in x[1].label, -s.schema.predicates[x[0][-1].pred].count))
        numeric_attrs = cands[:3]
    if not numeric_attrs:
        return [([], [], -1.0)]
    temporal_attrs = _year_like(s, focus, numeric_attrs)
    out = []
    for choice in range(min(2, len(numeric_attrs))):
        conds, used = [], []
        for op, value, pos in cues.comparisons:
            if _number_names_class(a, value, pos):
                continue  # "more than 2 animals": a count of related items (HAVING), not an attribute
            temporal = a.question.lower()[pos:].startswith(a.lang.temporal_cues)
            ranked = _near(temporal_attrs, pos) if temporal and temporal_attrs else _near(numeric_attrs, pos)
            ranked = _unit_first(a, ranked, value, pos)
            x = ranked[min(choice, len(ranked) - 1)]
            conds.append(Cond(x[0], op, _number_term(s, x[0], value), text=f"{op} {value:g}", span=(pos, pos + 1)))
            used.append(x)
        conds = either(a, conds)
        if cues.between:
            x = _near(numeric_attrs, 0)[min(choice, len(numeric_attrs) - 1)]
            lo, hi = cues.between
            at = a.question.lower().find(a.lang.between_words[0] + " ")
            conds += [Cond(x[0], ">=", _number_term(s, x[0], lo), span=(at, at + 1)),
                      Cond(x[0], "<=", _number_term(s, x[0], hi), span=(at, at + 1))]
            used.append(x)
        out.append((conds, used, 1.0 - 0.3 * choice))
    return out


def _year_like(s: Probe, focus: str, attrs: list[Attr]) -> list[Attr]:
    """Attributes that hold a year or a date: the linked ones, else the focus's own."""
    def yearish(p: str) -> bool:
        info = s.schema.predicates.get(p)
        return bool(info and info.literal and (info.date or "year" in info.label.split()))

    linked = [x for x in attrs if yearish(x[0][-1].pred)]
    if linked:
        return linked
    return [((Step(p),), Link("predicate", p, 0.3, (0, 0), "", label=s.schema.predicates[p].label))
            for p in s.schema.predicates_of(focus) if yearish(p)][:2]


def _number_names_class(a: Anchors, value: float, pos: int) -> bool:
    """Whether the number after the cue at `pos` counts items of a class the question names ("2 animals")."""
    num = _compared_number(a, value, pos)
    return num is not None and any(0 <= lk.span[0] - num[2] <= 12 for lk in a.classes)


def _having(s: Probe, a: Anchors, focus: str, related: list[tuple[Path, Link, tuple[int, int]]]
            ) -> list[tuple[str, float, Path, tuple[int, int]]]:
    """"keepers with more than 2 animals": (op, number, path to the counted class, its span) per reading."""
    out = []
    for op, value, pos in a.cues.comparisons:
        num = _compared_number(a, value, pos)
        if num is None:
            continue
        for path, lk, span in related:
            if 0 <= lk.span[0] - num[2] <= 12:
                out.append((op, value, path, span))
    return out


def shapes(s: Probe, a: Anchors, focus: str, attrs: list[Attr], spans: list[tuple[int, int]]) -> Iterator[Shape]:
    cues, q = a.cues, " " + a.question.lower() + " "
    distinct = any(k in q for k in a.lang.distinct_cues)
    related = related_classes(s, a, focus, spans)
    for conds, cmp_used, cmp_score in comparisons(s, a, focus, attrs):
        free = [x for x in attrs if x not in cmp_used]
        used_spans = [x[1].span for x in cmp_used]
        base = {"cmp": cmp_score}
        free_paths = [p for p, _ in free]
        neg_conds = _negations(s, a, focus, related, spans) + _exists(related)
        for extra, neg_f, extra_spans in neg_conds:
            cc = conds + extra
            f0 = {**base, "neg": neg_f}
            used_spans = [x[1].span for x in cmp_used] + extra_spans
            if cues.ask:
                yield Shape([()], form="ask", conds=cc, spans=used_spans, features={**f0, "cue_ok": 1.0})
            if cues.count:
                yield Shape([()], aggs=[("COUNT", None)], conds=cc, spans=used_spans,
                             features={**f0, "cue_ok": 1.0, "cue_miss": float(bool(cues.aggregates))})
                for path, _lk, cls_span in related:  # "how many animals does each keeper look after"
                    if cues.group or cues.superlative:
                        yield from _group_count(Shape, free, path, cc, used_spans + [cls_span], f0, cues)
                if cues.group and free:
                    for x in free[:2]:  # "the number of animals per species": group by an attribute
                        yield Shape([x[0]], aggs=[("COUNT", None)], group=True, conds=cc,
                                     spans=used_spans + [x[1].span], features={**f0, "cue_ok": 2.0})
            if cues.aggregates:
                numeric = [x for x in free if is_numeric(s, x[0])]
                for target in numeric[:2]:
                    aggs = [(fn, target[0]) for fn in cues.aggregates]
                    others = [x for x in free if x is not target]
                    sp = used_spans + [target[1].span]
                    yield Shape([()], aggs=aggs, conds=cc, spans=sp, features={**f0, "cue_ok": 1.0 + cues.count * -1})
                    if others and cues.group:
                        for g in others[:2]:
                            yield Shape([g[0]], aggs=aggs, group=True, conds=cc, spans=sp + [g[1].span],
                                         features={**f0, "cue_ok": 2.0})
                for aggs in multi_target_aggs(cues.aggregates, numeric[:2]):  # "the average latitude and longitude"
                    sp = used_spans + [t[1].span for t in numeric[:2]]
                    yield Shape([()], aggs=aggs, conds=cc, spans=sp, features={**f0, "cue_ok": 1.0})
            if cues.superlative and not cues.count:
                yield from _superlative_shapes(s, a, focus, free, related, cc, used_spans, f0)
            if cues.order and free:
                by = q.find(a.lang.group_by_word)
                keys = _near(free, by if by >= 0 else len(q), after=True)[:2]
                for key in keys:
                    # "the name and weight … sorted by weight": a key the question also lists is shown too
                    listed = by >= 0 and re.search(r"\b" + re.escape(key[1].text.lower()) + r"\b", q[:by])
                    shown = [p for p in free_paths if p != key[0] or listed]
                    yield Shape([()] + shown, order=(key[0], cues.order == "desc"), conds=cc,
                                 spans=used_spans + [x[1].span for x in free], features={**f0, "cue_ok": 1.0})
            for op, value, path, cls_span in _having(s, a, focus, related):
                yield Shape([()] + free_paths, having=(op, value, path), conds=cc,
                             spans=used_spans + [cls_span] + [x[1].span for x in free],
                             features={**f0, "cue_ok": 1.5})
            # the plain reading: the focus and every attribute it names
            miss = sum(bool(x) for x in (cues.count, cues.aggregates, cues.superlative, cues.ask, cues.order))
            yield Shape([()] + free_paths, conds=cc, distinct=distinct, spans=used_spans + [x[1].span for x in free],
                         features={**f0, "cue_miss": float(miss)})
            # "the names and salaries of employees earning below 6000": the compared attribute the question names
            # shown as well
            compared = [x[0] for x in cmp_used if x[1].text and x[0] not in free_paths]
            if compared and not (cues.count or cues.aggregates or cues.ask):
                yield Shape([()] + free_paths + list(dict.fromkeys(compared)), conds=cc, distinct=distinct,
                             spans=used_spans + [x[1].span for x in free],
                             features={**f0, "cue_miss": float(miss), "cmp_shown": 1.0})


def multi_target_aggs(fns: list[str], targets: list[Attr]) -> list[list[tuple[str, Path | None]]]:
    """Aggregates over two numeric attributes at once: one aggregate word over both ("the average height and
    weight"), or two words each over the attribute in the same place ("the highest price and the average
    rating", in order of mention). None with fewer than two attributes."""
    if len(targets) < 2 or not fns:
        return []
    ordered = sorted(targets, key=lambda t: t[1].span[0])
    out = [[(fn, t[0]) for t in ordered] for fn in fns[:2]]
    if len(fns) >= 2:
        out.append([(fn, t[0]) for fn, t in zip(fns[:2], ordered, strict=False)])
    return out


def _superlative_shapes(s: Probe, a: Anchors, focus: str, free: list[Attr],
                        related: list[tuple[Path, Link, tuple[int, int]]], cc: list[Cond],
                        used_spans: list[tuple[int, int]], f0: dict[str, float]) -> Iterator[Shape]:
    """The readings of a superlative ("the heaviest animal", "the keeper who looks after the most animals", "the
    most common species"): ordered by a numeric attribute, a count per focus item, or a count per value."""
    cues, q = a.cues, " " + a.question.lower() + " "
    free_paths = [p for p, _ in free]
    desc = cues.superlative == "desc"
    pos = a.question.lower().find(cues.superlative_word)
    numeric = [x for x in _near(free, pos, after=True) if is_numeric(s, x[0])][:2]
    numeric += _implied(s, a, focus, cues.superlative_word, pos)
    # "what is the maximum X" asks for the value (the aggregate), "which … has the maximum X" for items
    value_asked = bool(cues.aggregates) and cues.wh in a.lang.value_wh_words and not cues.top_k
    for key in numeric:
        shown = [p for p in free_paths if p != key[0]] or [()]
        right_after = 0 <= key[1].span[0] - pos <= len(cues.superlative_word) + 20
        yield Shape([()] + [p for p in shown if p], order=(key[0], desc), limit=cues.top_k or 1,
                     conds=cc, spans=used_spans + [key[1].span] + [x[1].span for x in free if x is not key],
                     features={**f0, "cue_ok": 0.5 if value_asked else 1.5 if right_after else 1.0})
    for path, _lk, cls_span in related:  # "the keeper who looks after the most animals"
        yield from _group_count(Shape, free, path, cc, used_spans + [cls_span], f0, cues)
    often = [sp for sp in cue_spans(a.question, a.lang)
             if not a.question[sp[1]:].lstrip().startswith(a.lang.than_word)]
    # "the most common", "the rarest": the class named nearest the cue is what is counted per value
    if often or a.lang.most_word in q:  # "the most common species": group by the attribute
        sure = bool(often) or a.lang.number_of_cue in q
        for x in free[:2]:
            yield Shape([x[0]], aggs=[("COUNT", None)], group=True, order=(None, desc), limit=1,
                         conds=cc, spans=used_spans + [x[1].span],
                         features={**f0, "cue_ok": 1.0 if sure else 0.4})
        for path, _lk, cls_span in (related if often else []):  # "the most common enclosure":
            # the related item (a class the question names) that most focus items reach
            near = min(a.classes, key=lambda c: min(abs(c.span[0] - often[0][1]),
                                                    abs(often[0][0] - c.span[1])))
            yield Shape([path], aggs=[("COUNT", None)], group=True, order=(None, desc), limit=1,
                         conds=cc, spans=used_spans + [cls_span],
                         features={**f0, "cue_ok": 2.5 if near.span == cls_span else 1.5})


def _group_count(shape_cls: type, free: list[Attr], path: Path, conds: list[Cond], spans: list[tuple[int, int]],
                 f0: dict[str, float], cues: object) -> Iterator[Shape]:
    """Count related items per focus item ("the number of animals of each keeper"), highest first when asked."""
    shown = [x[0] for x in free] or [()]
    sup = getattr(cues, "superlative", None)
    order = (None, sup == "desc") if sup else None
    yield shape_cls(shown, aggs=[("COUNT", path)], group=True, order=order, limit=1 if sup else None, conds=conds,
                    spans=spans + [x[1].span for x in free], features={**f0, "cue_ok": 2.0})


def related_classes(s: Probe, a: Anchors, focus: str, spans: list[tuple[int, int]]
                     ) -> list[tuple[Path, Link, tuple[int, int]]]:
    """Other classes the question names, with the join path from the focus to their instances."""
    out = []
    for lk in a.classes:
        if lk.iri == focus or any(lk.span == sp for sp in spans):
            continue
        # "herring food" (the entity's span may have taken the word, when the word is the class's name: "keep"
        # after a keeper's name is a verb): the word names the item's class, not a count
        if any(0 <= lk.span[0] - e.span[1] <= 1 or (e.span[0] < lk.span[0] and e.span[1] == lk.span[1] and
                                                    a.lang.stems(lk.text) == a.lang.stems(s.schema.class_label(lk.iri)))
               for e in a.entities):
            continue
        paths = s.paths.to_class(focus, lk.iri)
        if paths:
            out.append((paths[0], lk, lk.span))
    return out[:2]


def _negations(s: Probe, a: Anchors, focus: str, related: list[tuple[Path, Link, tuple[int, int]]],
               spans: list[tuple[int, int]]) -> list[tuple[list[Cond], float, list[tuple[int, int]]]]:
    """"keepers without any animal", "animals that are not kept by a keeper": no path to a related class."""
    out: list[tuple[list[Cond], float, list[tuple[int, int]]]] = [([], 0.0, [])]
    if not a.cues.negation:
        return out
    for path, lk, span in related:
        if path:
            out.append(([Cond(path, "exists", None, negated=True, text=f"no {lk.text}", span=span)], 1.0, [span]))
    return out


def _exists(related: list[tuple[Path, Link, tuple[int, int]]]
            ) -> list[tuple[list[Cond], float, list[tuple[int, int]]]]:
    """"keepers who look after an animal": a path to a related class the question names."""
    return [([Cond(path, "exists", None, text=lk.text, span=span)], 0.0, [span]) for path, lk, span in related if path]
