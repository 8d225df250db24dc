"""KB-context check: which candidates does the store confirm, given the known ends of the fragment?

The context of a placeholder is a dict with any of `subject` (IRI), `object` (IRI), `property`
(IRI) and `role` (`subject` | `object`: where the placeholder sits when it is an entity). One
SELECT with a VALUES block asks about every candidate at once. `TripleChecker` asks the same of many
(entity, property, position) pairs at once (the cases translator ranks its slot fills with it).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from kb_dumps.profiles import KBProfile, WikidataProfile
from kb_dumps.stage_errors import KBQAError
from kb_dumps.store_types import Store

log = logging.getLogger(__name__)
CONTEXT_KEYS = ("subject", "object", "property", "role")
CONTEXT_TIMEOUT_S = 3.0
# A context as given, before `check_context`: CONTEXT_KEYS -> an IRI or a role (None or "": not given).
RawContext = dict[str, str | None]


def _expand(profile: KBProfile, name: str) -> str:
    return profile.expand(name) if not name.startswith("http") else name


def query_property(profile: KBProfile, iri: str) -> str:
    """The IRI a property has in a triple pattern (Wikidata: wd:P19 / p:P19 -> wdt:P19)."""
    if isinstance(profile, WikidataProfile):
        return profile.direct_property(profile.property_entity(iri))
    return iri


def check_context(context: RawContext) -> dict[str, str]:
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


def confirmed_ids(store: Store, profile: KBProfile, kind: str | None, context: dict[str, str],
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


# ---- (entity, property) pairs: does the store have a triple with this entity in this position? -------
_BAD_IRI = re.compile(r'[\s<>"{}|^`\\]')
# Pairs per query: VALUES lists stay small enough for the store to plan well.
BATCH = 200


def _rows(pairs: list[tuple[str, str]]) -> str:
    return " ".join(f"(<{e}> <{p}>)" for e, p in pairs)


class StoreOnFirstUse:
    """`store`: the one given, else the store of `store_dir`, opened when first read (a remote store directory
    queries its endpoint); what the grounding parts that may never need the store share."""

    store_dir: Path
    _store: Store | None

    @property
    def store(self) -> Store:
        if self._store is None:
            from kb_dumps.store import open_store

            self._store = open_store(self.store_dir)
        return self._store


class TripleChecker(StoreOnFirstUse):
    """Checks (entity, property, position) triples against a store (a LocalStore or anything with `.query`)."""

    def __init__(self, store_dir: str | Path, store: Store | None = None, timeout_s: float = 5.0):
        self.store_dir = Path(store_dir)
        self._store = store
        self._own = store is None
        self.timeout_s = timeout_s

    def close(self) -> None:
        if self._own and self._store is not None:
            self._store.close()
            self._store = None

    def check(self, wanted: set[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
        """The subset of `wanted` the store confirms; position is "subject" or "object".

        A store failure confirms nothing (the caller then ranks without the KB) rather than failing
        the translation: the check only re-ranks.
        """
        clean = sorted(w for w in wanted if not _BAD_IRI.search(w[0]) and not _BAD_IRI.search(w[1]))
        found: set[tuple[str, str, str]] = set()
        for i in range(0, len(clean), BATCH):
            chunk = clean[i:i + BATCH]
            subj = [(e, p) for e, p, pos in chunk if pos == "subject"]
            obj = [(e, p) for e, p, pos in chunk if pos == "object"]
            parts = []
            if subj:
                parts.append(f'{{ VALUES (?e ?p) {{ {_rows(subj)} }} FILTER EXISTS {{ ?e ?p ?x }} '
                             f'BIND("subject" AS ?pos) }}')
            if obj:
                parts.append(f'{{ VALUES (?e ?p) {{ {_rows(obj)} }} FILTER EXISTS {{ ?y ?p ?e }} '
                             f'BIND("object" AS ?pos) }}')
            query = "SELECT ?e ?p ?pos WHERE { " + " UNION ".join(parts) + " }"
            try:
                res = self.store.query(query, timeout_s=self.timeout_s)
            except KBQAError:
                continue
            for row in res.rows:
                if all(t is not None for t in row):
                    found.add((row[0]["value"], row[1]["value"], row[2]["value"]))
        return found
