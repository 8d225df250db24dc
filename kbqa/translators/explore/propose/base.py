"""What every family of candidate graphs shares: the `Probe` (schema memory, join paths, store probes within the
search's deadline, display columns; `Search` extends it), the `Shape` a family adds to a focus class, and the
coverage of the question's words."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from grounding.schema import SchemaMemory
from kb_dumps.stage_errors import KBQAError
from kbqa.translators.explore import probes
from kbqa.translators.explore.link.anchors import Anchors
from kbqa.translators.explore.link.words import cue_spans, overlaps
from kbqa.translators.explore.propose.display import DisplayColumns
from kbqa.translators.explore.propose.paths import SchemaPaths
from kbqa.translators.explore.query import Cond, Path, Term

MIN_NAMED = 3  # items whose names must contain a word before it reads as a kind of item ("penguins")
# Classes of the modelling vocabulary itself (every individual of an OWL file is an owl:NamedIndividual):
# never what a question is about.
META_NAMESPACES = ("http://www.w3.org/2002/07/owl#", "http://www.w3.org/2000/01/rdf-schema#",
                   "http://www.w3.org/1999/02/22-rdf-syntax-ns#")


class Probe:
    """What every candidate family asks the store and the schema through: the schema memory, its join paths, the
    store probes (each within the search's deadline) and the display columns."""

    def __init__(self, schema: SchemaMemory, paths: SchemaPaths, store: object, *, budget_s: float = 2.0,
                 cap: int = 400, display: DisplayColumns | None = None):
        self.schema, self.paths, self.store = schema, paths, store
        self.display = display
        self.budget_s, self.cap = budget_s, cap
        self.deadline = 0.0
        self.truncated = False

    def rows(self, sparql: str | None) -> list[list[dict]]:
        if sparql is None:  # a probe no query can hold finds nothing
            return []
        try:
            return self.store.query(sparql, timeout_s=max(0.2, self.deadline - time.perf_counter()),  # type: ignore[attr-defined]
                                    row_cap=500).rows
        except KBQAError:  # a probe that fails (timeout, refused) proposes nothing
            return []

    def name_words(self, a: Anchors, focus: str, taken: list[tuple[int, int]]
                    ) -> list[tuple[Cond, tuple[int, int]]]:
        """"penguins kept by Omar", where the KG has no class *penguin* but its items are named so: a word
        nothing else links, contained in the names of some (not all) items of the focus class."""
        linked = taken + cue_spans(a.question, a.lang) + [lk.span for lk in a.classes + a.predicates + a.values + a.entities if lk.score >= 0.5]
        total = self.schema.classes.get(focus, {}).get("count", 0)
        out: list[tuple[Cond, tuple[int, int]]] = []
        for m in re.finditer(r"[A-Za-z]{4,}", a.question):
            word = m.group(0).lower()
            if word in a.lang.function_words or any(overlaps((m.start(), m.end()), sp) for sp in linked) or len(out) >= 2:
                continue
            for form in dict.fromkeys((a.lang.singular(word), word)):
                rows = self.rows(probes.items_named(self.schema.type_predicate, focus, form))
                n = int(rows[0][0]["value"]) if rows and rows[0] and rows[0][0] else 0
                # a word in one or two names is an accident of naming (one long name holds it), not a kind
                if MIN_NAMED <= n and (not total or n <= 0.5 * total):
                    out.append((Cond((), "contains", Term("literal", form, label=form), text=word, score=0.5,
                                     name_filter=True, span=(m.start(), m.end())), (m.start(), m.end())))
                    break
        return out


@dataclass
class Shape:
    """What a family adds to a focus class: the answer columns, the form and modifiers, more constraints, the
    question spans it reads and its features."""

    answer: list[Path]
    form: str = "select"
    aggs: list[tuple[str, Path | None]] | None = None
    group: bool = False
    order: tuple[Path | None, bool] | None = None
    limit: int | None = None
    distinct: bool = False
    having: tuple[str, float, Path] | None = None
    conds: list[Cond] | None = None
    spans: list[tuple[int, int]] | None = None
    features: dict[str, float] | None = None

    def __post_init__(self) -> None:
        self.aggs = self.aggs or []
        self.conds = self.conds or []
        self.spans = self.spans or []
        self.features = self.features or {}


def coverage(a: Anchors, spans: list[tuple[int, int]]) -> float:
    """The share of the question's content words that `spans` cover."""
    words = a.content_words()
    if not words:
        return 1.0
    return sum(1 for w in words if any(overlaps(w, s) for s in spans)) / len(words)
