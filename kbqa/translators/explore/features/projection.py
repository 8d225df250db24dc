"""Projection features: how a candidate's answer columns line up with the attributes the question names.

A question asks for some attributes and constrains others ("the names and ages of the singers from France":
*name* and *age* are asked for, *country* constrains). Which ones are asked for is not read from cue words: the
features say where each named attribute stands against the focus class's mention and whether the candidate shows
it, and the fitted ranker learns from the train KGs which columns a question of that form wants.

  p_cols_linked    answer columns (beside the focus itself) that an attribute word of the question names
  p_cols_unlinked  answer columns no word names (a display column, a key the search added)
  p_asked          attribute word groups before the focus class's mention (where "the X and Y of Z" lists what it asks)
  p_asked_shown    of those, the ones the candidate shows, aggregates or groups by
  p_asked_missed   of those, the ones it does not use at all
  p_after_shown    attribute words after the focus class's mention that the candidate shows
  p_focus_attrs    1 when the candidate shows the focus items and also a named attribute of them

Measured (BENCHMARKS.md, issue 22 seventh pass): trees fitted with them then gained no more than the learner's own
noise on the train KGs' k-fold; the rankers fitted since (eighth pass on) read every non-word feature, these included.
"""

from __future__ import annotations

from grounding.schema import SchemaMemory
from kbqa.translators.explore.link.anchors import Anchors
from kbqa.translators.explore.propose.identifiers import own_id_links
from kbqa.translators.explore.query import Graph, Path

Span = tuple[int, int]


def _named(schema: SchemaMemory, a: Anchors, focus: str | None) -> dict[Span, set[str]]:
    """The predicates each attribute word group of the question may name: its predicate links and, for an
    identifier word, the focus class's own identifier. Overlapping spans are one group ("member id" and its "id"
    are two readings of the same words), keyed by their union."""
    links = [(lk.span, lk.iri) for lk in a.predicates]
    if focus:
        links += [(lk.span, path[-1].pred) for path, lk in own_id_links(schema, a, focus)]
    return span_groups(links)


def span_groups(links: list[tuple[Span, str]]) -> dict[Span, set[str]]:
    """The predicates each word group names, from (span, predicate) links: overlapping spans are one group, keyed
    by their union."""
    groups: list[tuple[Span, set[str]]] = []
    for span, iri in sorted(links):
        if groups and span[0] < groups[-1][0][1]:
            (start, end), preds = groups[-1]
            groups[-1] = ((start, max(end, span[1])), preds | {iri})
        else:
            groups.append((span, {iri}))
    return dict(groups)


def _focus_start(a: Anchors, focus: str | None) -> int | None:
    starts = [lk.span[0] for lk in a.classes if lk.iri == focus]
    return min(starts) if starts else None


def _preds(paths: list[Path | None]) -> set[str]:
    return {p[-1].pred for p in paths if p}


def add_projection_features(schema: SchemaMemory, a: Anchors, graphs: list[Graph]) -> None:
    """Set the p_* features above on every candidate (in place); the question's parts are read once a focus."""
    per_focus: dict[str | None, tuple[dict[Span, set[str]], int | None]] = {}
    for g in graphs:
        if g.parts or g.form == "ask":
            continue
        focus = g.focus_class
        if focus not in per_focus:
            per_focus[focus] = (_named(schema, a, focus), _focus_start(a, focus))
        named, start = per_focus[focus]
        linked = set().union(*named.values()) if named else set()
        cols = [p for p in g.answer if p]
        shown = _preds(cols)
        used_out = shown | _preds([p for _, p in g.aggs]) | ({g.order[0][-1].pred} if g.order and g.order[0] else set())
        used_any = used_out | _preds([c.path for c in g.flat_conds()])
        n_linked = sum(1 for p in cols if p[-1].pred in linked)
        f = g.features
        f["p_cols_linked"] = float(n_linked)
        f["p_cols_unlinked"] = float(len(cols) - n_linked)
        f["p_focus_attrs"] = 1.0 if () in g.answer and n_linked else 0.0
        if start is None:
            continue
        asked = [preds for span, preds in named.items() if span[1] <= start]
        f["p_asked"] = float(len(asked))
        f["p_asked_shown"] = float(sum(1 for preds in asked if preds & used_out))
        f["p_asked_missed"] = float(sum(1 for preds in asked if not preds & used_any))
        f["p_after_shown"] = float(sum(1 for span, preds in named.items() if span[0] >= start and preds & shown))
