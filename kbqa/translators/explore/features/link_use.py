"""Link-use features: which of the question's linked values a candidate uses, and whether the classes it reads
hold what the question names.

A value the question names ("the heaviest dog", "accounts opened in 2015") usually constrains the answer; a
candidate that drops it answers a wider question. Where several classes have alike attributes (a KG of many
tables, or several KGs behind one endpoint: `weight` of pets, of people and of cars), the value and the other
attribute names also say which class is meant: the one whose predicates hold them. Over the value links of score
≥ `STRONG` and the attribute words (overlapping spans are one group, as in features/projection.py):

  lv_used          value groups the candidate compares with (a condition on the link's predicate with its
                   value, or a condition said by the same words)
  lv_unused        value groups it uses nowhere
  lv_unused_held   of those, the ones whose predicate one of the candidate's own classes holds (it could have
                   used the value without another class)
  lv_unused_score  the best link score among the unused groups (0: none unused)
  la_held          attribute word groups one of whose predicates a class of the candidate holds
  la_not_held      attribute word groups none of whose predicates any class of the candidate holds

Nothing here knows a language; the fitted ranker learns from the train KGs how much a dropped value or a class
that lacks a named attribute costs.

Measured (BENCHMARKS.md, issue 22 tenth pass): on the train KGs' 5-fold by KG, trees fitted with them then scored 0.4
points below the same candidates without them (0.6647 vs 0.6690); the rankers fitted since (twelfth pass on) read
every non-word feature, these included, as the shipped ranker.json's feature list shows.
"""

from __future__ import annotations

from grounding.schema import SchemaMemory
from kbqa.translators.explore.features.projection import span_groups
from kbqa.translators.explore.link.anchors import Anchors
from kbqa.translators.explore.link.words import Link
from kbqa.translators.explore.query import Cond, Graph, Path

STRONG = 0.5  # a link at least this sure is one the question names (weaker readings stay out)
Span = tuple[int, int]


def _overlaps(a: Span, b: Span) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def _parts(g: Graph) -> list[Graph]:
    return [g, *g.parts]


def _paths(g: Graph) -> list[Path]:
    out: list[Path] = []
    for part in _parts(g):
        out += [c.path for c in part.flat_conds()] + [p for p in part.answer if p] + [p for _, p in part.aggs if p]
        if part.order and part.order[0]:
            out.append(part.order[0])
        if part.having and part.having[2]:
            out.append(part.having[2])
    return out


def candidate_classes(schema: SchemaMemory, g: Graph) -> set[str]:
    """The focus class and every class a step of the candidate's paths reaches (the other end's classes)."""
    out = {part.focus_class for part in _parts(g) if part.focus_class}
    for path in _paths(g):
        for step in path:
            info = schema.predicates.get(step.pred)
            if info is not None:
                out |= set(info.ranges if step.forward else info.domains)
    return out


def _uses(cond: Cond, link: Link) -> bool:
    if cond.span is not None and _overlaps(cond.span, link.span):
        return True
    if not cond.path or cond.path[-1].pred != link.iri:
        return False
    said = {t.value for t in ([cond.value] if cond.value else []) + cond.values + [t for _, t in cond.either]}
    return link.value in said


def _held(schema: SchemaMemory, predicates: list[str], classes: set[str]) -> bool:
    return any(schema.predicates[p].domains.keys() & classes for p in predicates if p in schema.predicates)


def _groups(links: list[Link]) -> list[list[Link]]:
    grouped = span_groups([(lk.span, str(i)) for i, lk in enumerate(links)])
    return [[links[int(i)] for i in ids] for ids in grouped.values()]


def add_link_use_features(schema: SchemaMemory, a: Anchors, graphs: list[Graph]) -> None:
    """Set the lv_* and la_* features above on every candidate (in place)."""
    values = _groups([lk for lk in a.values if lk.score >= STRONG and lk.value is not None])
    attrs = [[lk.iri for lk in links] for links in _groups([lk for lk in a.predicates if lk.score >= STRONG])]
    if not values and not attrs:
        return
    for g in graphs:
        conds = [c for part in _parts(g) for c in part.flat_conds()]
        classes = candidate_classes(schema, g)
        used = unused = held = 0
        best = 0.0
        for links in values:
            if any(_uses(c, lk) for c in conds for lk in links):
                used += 1
                continue
            unused += 1
            best = max(best, max(lk.score for lk in links))
            held += _held(schema, [lk.iri for lk in links], classes)
        f = g.features
        if values:
            f["lv_used"] = float(used)
            f["lv_unused"] = float(unused)
            f["lv_unused_held"] = float(held)
            f["lv_unused_score"] = best
        if attrs:
            n_held = sum(1 for preds in attrs if _held(schema, preds, classes))
            f["la_held"] = float(n_held)
            f["la_not_held"] = float(len(attrs) - n_held)
