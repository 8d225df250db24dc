"""Property groups named in a question: a super-property whose label's distinctive words the question uses
("fitness attributes" names the group of fitness sub-properties; read by propose/groups.py)."""

from __future__ import annotations

import re

from grounding.schema import SchemaMemory
from grounding.text import normalize
from kbqa.translators.explore.link.words import Link
from kbqa.translators.language import ENGLISH, LanguageProfile

# A name token this long that begins a question word is an abbreviation of it ("fit" -> "fitness").
MIN_ABBREVIATION = 3


def link_groups(question: str, schema: SchemaMemory, min_score: float = 0.6, lang: LanguageProfile = ENGLISH
                ) -> list[Link]:
    """Super-properties the question names: every distinctive token of the group's name (not one of the
    profile's `group_generic_words`) matches a word of the question exactly, as a singular, or as an
    abbreviation of it."""
    words = [(m.start(), m.end(), m.group(0).lower()) for m in re.finditer(r"[A-Za-z]+", question)]
    out: list[Link] = []
    for iri, info in (schema.groups or {}).items():
        tokens = [t for t in normalize(info.get("label", "")).split() if t not in lang.group_generic_words]
        if not tokens:
            continue
        spans, score = [], 1.0
        for t in tokens:
            hit = next(((s, e, 1.0) for s, e, w in words if w == t or lang.singular(w) == lang.singular(t)), None)
            if hit is None and len(t) >= MIN_ABBREVIATION:
                hit = next(((s, e, 0.8) for s, e, w in words if len(w) > len(t) and w.startswith(t)), None)
            if hit is None:
                break
            spans.append(hit[:2])
            score = min(score, hit[2])
        else:
            span = (min(s for s, _ in spans), max(e for _, e in spans))
            # "fitness attributes": the generic noun after the name belongs to the link
            m = lang.group_noun_re.match(question[span[1]:])
            if m:
                span = (span[0], span[1] + m.end())
            if score >= min_score:
                out.append(Link("group", iri, score, span, question[span[0]:span[1]], label=info.get("label", "")))
    return sorted(out, key=lambda lk: -lk.score)
