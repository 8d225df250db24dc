"""The identifier a question asks for by its generic word ("the ids of circuits", "show ids for all aircrafts"):
the focus class's own identifier column, named in the schema after the class (*circuitid*, *card id* of *customers
cards*, *stuid* of *student*, *aid* of *aircraft*) rather than the other classes' identifiers it also holds
(*customer id* of *customers cards*). The name matcher links the bare word to every column ending in it and
prefers none of them; this finds the focus class's own."""

from __future__ import annotations

import re

from grounding.schema import SchemaMemory
from grounding.text import normalize
from kbqa.translators.explore.link.anchors import Anchors
from kbqa.translators.explore.link.name_match import abbreviates
from kbqa.translators.explore.link.words import Link
from kbqa.translators.explore.query import Path, Step

OWN_ID = 0.92  # above the bare word's link to any column ending in it (0.85)
SUFFIX = "id"  # how schemas end an identifier column's name, whatever the question's language


def own_id_links(schema: SchemaMemory, a: Anchors, focus: str) -> list[tuple[Path, Link]]:
    """(path, link) of the focus class's own identifier for each identifier word of the question."""
    # a word a longer name already reads ("the customer ids") is that column's, not the focus class's
    longer = [lk.span for lk in a.predicates if lk.score >= 0.8]
    words = [(m.start(), m.end()) for m in re.finditer(r"[^\W_]+", a.question)
             if m.group(0).lower() in a.lang.identifier_words and not any(
                 s <= m.start() and m.end() <= e and e - s > m.end() - m.start() for s, e in longer)]
    if not words:
        return []
    best = own_id(schema, focus, a)
    if best is None:
        return []
    label = schema.predicates[best].label
    return [((Step(best),), Link("predicate", best, OWN_ID, span, a.question[span[0]:span[1]], label=label))
            for span in words]


def own_id(schema: SchemaMemory, focus: str, a: Anchors) -> str | None:
    """The literal column of `focus` whose name is the class's name (or a shortening of it) and "id"."""
    cls = [a.lang.singular(w) for w in normalize(schema.class_label(focus)).split()]
    if not cls:
        return None
    scored: list[tuple[int, int, str]] = []
    for p in schema.predicates_of(focus):
        info = schema.predicates.get(p)
        if info is None or not info.literal:
            continue
        name = normalize(info.label).replace(" ", "")
        if not name.endswith(SUFFIX):
            continue
        rest = name[: -len(SUFFIX)]
        if rest in (cls[-1], "".join(cls)):
            rank = 3  # *card id* of *customers cards*, *actual order id* of *actual orders*
        elif rest and any(w.startswith(rest) or abbreviates(rest, w) for w in (cls[0], cls[-1])):
            rank = 2  # *stuid* of *student*, *aid* of *aircraft*, *customer id* of *customers cards* (below *card id*)
        elif not rest:
            rank = 1  # a bare *id*
        else:
            continue
        scored.append((rank, -len(name), p))
    return max(scored)[2] if scored else None
