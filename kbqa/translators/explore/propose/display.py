"""The display column of a class: the attribute that names its items ("the campuses" are shown by their campus
name, not by row IRIs). Questions about items are often answered with that name rather than the item itself, so
`explore` proposes, beside each candidate that shows the focus items, one that also shows their display column
(feature `display`); an extra column costs nothing when the item itself was asked for.

The display column is found from the data, in any language: the text-valued attribute of the class with the
most different values (ties: the one on more items), when it names nearly every item apart (at least 0.9 as many
values as items). One aggregate query per class, cached; a class too large for a quick answer has none.
"""

from __future__ import annotations

from grounding.schema import SchemaMemory
from kb_dumps.stage_errors import KBQAError
from kbqa.translators.explore import probes

MAX_ITEMS = 50_000  # larger classes get no display column (the query would not be quick)
MIN_SHARE = 0.9  # different values per item, at least: the column names items apart


class DisplayColumns:
    def __init__(self, schema: SchemaMemory, store: object):
        self.schema, self.store = schema, store
        self._cache: dict[str, str | None] = {}

    def of(self, cls: str) -> str | None:
        if cls not in self._cache:
            self._cache[cls] = self._find(cls)
        return self._cache[cls]

    def _find(self, cls: str) -> str | None:
        items = int(self.schema.classes.get(cls, {}).get("count", 0) or 0)
        if not items or items > MAX_ITEMS:
            return None
        preds = [p for p in self.schema.predicates_of(cls)
                 if (info := self.schema.predicates[p]).literal and not info.numeric and not info.date]
        if not preds:
            return None
        q = probes.column_spread(preds, self.schema.type_predicate, cls)
        if q is None:
            return None
        try:
            rows = self.store.query(q, timeout_s=0.5, row_cap=200).rows  # type: ignore[attr-defined]
        except KBQAError:  # too slow or refused: no display column
            return None
        best: tuple[int, int, str] | None = None
        for p, n, m in ((r[0]["value"], int(r[1]["value"]), int(r[2]["value"])) for r in rows if all(r)):
            if n >= MIN_SHARE * items and (best is None or (n, m) > best[:2]):
                best = (n, m, p)
        return best[2] if best else None
