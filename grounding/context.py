"""KB-context check: which candidates does the store confirm, given the known ends of the fragment?

The context of a placeholder is a dict with any of `subject` (IRI), `object` (IRI), `property`
(IRI) and `role` (`subject` | `object`: where the placeholder sits when it is an entity). One
SELECT with a VALUES block asks about every candidate at once.
"""

from __future__ import annotations

import logging
from typing import Any

from kb_dumps.errors import KBQAError
from kb_dumps.profiles import KBProfile, WikidataProfile

log = logging.getLogger(__name__)
CONTEXT_KEYS = ("subject", "object", "property", "role")
CONTEXT_TIMEOUT_S = 3.0


def _expand(profile: KBProfile, name: str) -> str:
    return profile.expand(name) if not name.startswith("http") else name


def query_property(profile: KBProfile, iri: str) -> str:
    """The IRI a property has in a triple pattern (Wikidata: wd:P19 / p:P19 -> wdt:P19)."""
    if isinstance(profile, WikidataProfile):
        return profile.direct_property(profile.property_entity(iri))
    return iri


def check_context(context: dict[str, Any]) -> dict[str, str]:
    unknown = set(context) - set(CONTEXT_KEYS)
    if unknown:
        raise KBQAError(f"unknown grounding context keys {sorted(unknown)}; allowed: {list(CONTEXT_KEYS)}",
                        stage="ground")
    role = context.get("role")
    if role not in (None, "subject", "object"):
        raise KBQAError(f"context role must be 'subject' or 'object', not {role!r}", stage="ground")
    return {k: str(v) for k, v in context.items() if v}


def context_pattern(profile: KBProfile, kind: str | None, context: dict[str, str]) -> str | None:
    """The triple pattern (with ?c for the candidate) the store must match, or None when the context says nothing."""
    subj = f"<{_expand(profile, context['subject'])}>" if context.get("subject") else None
    obj = f"<{_expand(profile, context['object'])}>" if context.get("object") else None
    if kind == "property":
        if not subj and not obj:
            return None
        return f"{subj or '?s'} ?c {obj or '?o'} ."
    prop = context.get("property")
    pred = f"<{query_property(profile, _expand(profile, prop))}>" if prop else "?p"
    role = context.get("role") or ("object" if subj and not obj else "subject" if obj and not subj else None)
    if role == "object":
        return None if (not prop and not subj) else f"{subj or '?s'} {pred} ?c ."
    if role == "subject":
        return None if (not prop and not obj) else f"?c {pred} {obj or '?o'} ."
    return None


def confirmed_ids(store: Any, profile: KBProfile, kind: str | None, context: dict[str, str],
                  candidate_ids: list[str]) -> set[str] | None:
    """The candidate ids the store confirms in this context; None when the context is not checkable."""
    pattern = context_pattern(profile, kind, context)
    if pattern is None or not candidate_ids:
        return None
    as_query = {(query_property(profile, c) if kind == "property" else c): c for c in candidate_ids}
    values = " ".join(f"<{q}>" for q in as_query)
    sparql = f"SELECT DISTINCT ?c WHERE {{ VALUES ?c {{ {values} }} {pattern} }}"
    try:
        res = store.query(sparql, timeout_s=CONTEXT_TIMEOUT_S, row_cap=len(as_query) + 1)
    except KBQAError as e:
        log.info("context check skipped: %s", e)
        return None
    return {as_query[row[0]["value"]] for row in res.rows if row and row[0] and row[0]["value"] in as_query}
