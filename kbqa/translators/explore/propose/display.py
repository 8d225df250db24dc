"""The display column of a class: the attribute that names its items ("the campuses" are shown by their campus
name, not by row IRIs). Questions about items are often answered with that name rather than the item itself, so
`explore` proposes, beside each candidate that shows the focus items, one that also shows their display column
(feature `display`); an extra column costs nothing when the item itself was asked for.

The display column is found from the data: the text-valued attribute of the class with the most different values
(ties: the one on more items), when it names nearly every item apart (at least 0.9 as many values as items). One
aggregate query per class, cached; a class too large for a quick answer has none.

Attributes still tied (200 of the 427 classes of the Spider4SPARQL train KGs that have a display column: *name*,
*song_name* and *song_release_year* each name six singers apart) were chosen by the order the engine returned its
rows, so oxigraph and Virtuoso showed different columns over the same data. Ties are now broken by the attribute's
name and values alone: one whose name holds a naming word of the language profile (*fname*, *job_title*), then one
named by the class's own word (*campus* of *campuses*), then one whose values are mostly letters (in the schema's
value memory: not a code of digits), then the shortest name. Chosen on the train KGs: the chosen column is the one
the train gold queries project most for 137 of the 177 tied classes they project any of (row order: 89;
`python -m bench.display_ties`).
"""

from __future__ import annotations

import re

from grounding.schema import SchemaMemory
from kb_dumps.stage_errors import KBQAError
from kbqa.translators.explore import probes
from kbqa.translators.language import ENGLISH, LanguageProfile

MAX_ITEMS = 50_000  # larger classes get no display column (the query would not be quick)
MIN_SHARE = 0.9  # different values per item, at least: the column names items apart
LETTERS = 0.5  # a column whose values are at least this share letters is text, not a code


def local_name(iri: str) -> str:
    """The last segment of an IRI, lower case: *song_name* of `…/singer#song_name`."""
    return re.split(r"[/#]", iri.rstrip("/#"))[-1].lower()


class DisplayColumns:
    def __init__(self, schema: SchemaMemory, store: object, lang: LanguageProfile = ENGLISH):
        self.schema, self.store, self.lang = schema, store, lang
        self._cache: dict[str, str | None] = {}
        self._letters: dict[str, float] | None = None

    def of(self, cls: str) -> str | None:
        if cls not in self._cache:
            self._cache[cls] = self._find(cls)
        return self._cache[cls]

    def _find(self, cls: str) -> str | None:
        tied = self.tied(cls)
        return min(tied, key=lambda p: self._tie_key(cls, p)) if tied else None

    def tied(self, cls: str, timeout_s: float = 0.5) -> list[str]:
        """The text attributes that name most of `cls`'s items apart, equally (most values, then most uses), in the
        engine's row order; [] when none names nearly every item apart or the class is too large or too slow."""
        items = int(self.schema.classes.get(cls, {}).get("count", 0) or 0)
        if not items or items > MAX_ITEMS:
            return []
        preds = [p for p in self.schema.predicates_of(cls)
                 if (info := self.schema.predicates[p]).literal and not info.numeric and not info.date]
        q = probes.column_spread(preds, self.schema.type_predicate, cls) if preds else None
        if q is None:
            return []
        try:
            rows = self.store.query(q, timeout_s=timeout_s, row_cap=200).rows  # type: ignore[attr-defined]
        except KBQAError:  # too slow or refused: no display column
            return []
        spread = [(r[0]["value"], int(r[1]["value"]), int(r[2]["value"])) for r in rows if all(r)]
        spread = [(p, n, m) for p, n, m in spread if n >= MIN_SHARE * items]
        if not spread:
            return []
        top = max((n, m) for _, n, m in spread)
        return [p for p, n, m in spread if (n, m) == top]

    def _tie_key(self, cls: str, pred: str) -> tuple[bool, bool, bool, int, str]:
        """Smaller first: a naming word in the name, the class's own word as the name, values mostly letters,
        a shorter name, then the IRI (one answer whatever the engine's row order)."""
        name = local_name(pred)
        own = self.lang.singular(re.split(r"[_\W]+", local_name(cls))[-1])
        return (not any(w in name for w in self.lang.naming_words), self.lang.singular(name) != own,
                self.letter_share(pred) < LETTERS, len(name), pred)

    def letter_share(self, pred: str) -> float:
        """The share of letters among the characters of `pred`'s values in the value memory (1.0 for a predicate
        with none there: its values are long texts)."""
        if self._letters is None:
            letters: dict[str, list[int]] = {}
            for rows in self.schema.values.values():
                for p, _n, text, _dt in rows:
                    acc = letters.setdefault(str(p), [0, 0])
                    acc[0] += sum(ch.isalpha() for ch in str(text))
                    acc[1] += len(str(text))
            self._letters = {p: a / c for p, (a, c) in letters.items() if c}
        return self._letters.get(pred, 1.0)
