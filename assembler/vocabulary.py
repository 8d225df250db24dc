"""The KB profile's own vocabulary as grounding candidates: `rdfs:label`, the description and alias predicates.

These predicates are not rows of the label memory (they *make* it), so a placeholder labelled "label" or
"name" would otherwise ground to the nearest real property (Wikidata's *record label*). They are offered by
their own names, and win outright when the fragment uses the property as text — its object compared with
CONTAINS / STRSTARTS / STRENDS / REGEX / LANG / LCASE / UCASE / STR, as in "items whose name starts with …".
"""

from __future__ import annotations

from assembler.plan import Call, Filter, Placeholder, Query, Triple, Var, walk
from grounding.candidates import Candidate
from grounding.text import best_similarity, normalize
from kb_dumps.profiles import KBProfile

# Functions whose use of a variable means "this value is text".
TEXT_FUNCTIONS = frozenset({"CONTAINS", "STRSTARTS", "STRENDS", "REGEX", "LANG", "LCASE", "UCASE", "STR",
                            "STRLEN", "SUBSTR", "LANGMATCHES"})
# The names a fragment may give each vocabulary role (first: the label shown).
ROLE_NAMES = {"label": ("label", "name", "title", "called", "named"),
              "description": ("description", "summary"),
              "alias": ("alias", "also known as", "alternative name", "other name")}
# Below this name similarity a vocabulary predicate is not offered at all.
MIN_SIMILARITY = 0.85
# A named vocabulary predicate scores a little below an exact label-memory match; used as text, it wins.
NAMED_SCORE = 0.9


def text_properties(plan: Query) -> set[str]:
    """Names of the property placeholders whose object variable is used as text in a FILTER."""
    text_vars: set[str] = set()
    for f in walk(plan):
        if isinstance(f, Filter):
            for call in walk(f.expr):
                if isinstance(call, Call) and call.name.upper() in TEXT_FUNCTIONS:
                    text_vars |= {v.name for v in walk(call.args) if isinstance(v, Var)}
    return {t.p.name for t in walk(plan) if isinstance(t, Triple) and isinstance(t.p, Placeholder)
            and t.p.kind == "property" and isinstance(t.o, Var) and t.o.name in text_vars}


def vocabulary_candidates(profile: KBProfile, ph: Placeholder, used_as_text: bool) -> list[Candidate]:
    """The profile's label / description / alias predicates the placeholder names (or, used as text, the
    label predicate whatever its name), scored as the module docstring says."""
    roles = {"label": profile.label_predicates[:1], "description": profile.description_predicates[:1],
             "alias": profile.alias_predicates[:1]}
    norm = normalize(ph.label or "")
    out = []
    for role, iris in roles.items():
        if not iris:
            continue
        names = ROLE_NAMES[role]
        sim, matched = best_similarity(norm, names[0], list(names[1:])) if norm else (0.0, names[0])
        # a "name"/"label" placeholder compared as text is the label predicate; other roles need their name
        if used_as_text and role == "label":
            score = 1.0
        elif used_as_text and sim >= MIN_SIMILARITY:
            score = 0.95 + 0.04 * sim  # a named description / alias used as text: just behind the label
        elif sim >= MIN_SIMILARITY:
            score = NAMED_SCORE * sim
        else:
            continue
        out.append(Candidate(iris[0], names[0], f"the KB's own {role} predicate", "property", round(score, 4),
                             {"lexical": round(sim, 4), "vocabulary": 1.0}, ["vocabulary"], matched))
    return out
