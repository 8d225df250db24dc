"""Does the store have a triple with this entity in this position of this property? Many pairs, one query."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from kb_dumps.errors import KBQAError

_BAD_IRI = re.compile(r'[\s<>"{}|^`\\]')
# Pairs per query: VALUES lists stay small enough for the store to plan well.
BATCH = 200


def _rows(pairs: list[tuple[str, str]]) -> str:
    return " ".join(f"(<{e}> <{p}>)" for e, p in pairs)


class TripleChecker:
    """Checks (entity, property, position) triples against a store (a LocalStore or anything with `.query`)."""

    def __init__(self, store_dir: str | Path, store: Any = None, timeout_s: float = 5.0):
        self.store_dir = Path(store_dir)
        self._store = store
        self._own = store is None
        self.timeout_s = timeout_s

    @property
    def store(self) -> Any:
        if self._store is None:
            from kb_dumps.store import open_store

            self._store = open_store(self.store_dir)  # a remote store directory queries its endpoint
        return self._store

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
