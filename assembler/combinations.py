"""Grounding combinations: the candidates of every placeholder of a Plan, and their combinations best-first."""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from typing import Protocol

import numpy as np

from assembler.assembly_records import PlaceholderGrounding
from assembler.plan import Placeholder, Query, placeholders
from grounding.candidates import Candidate, Correction, GroundingResult
from grounding.context import RawContext
from grounding.ground import LABEL_AGREEMENT
from grounding.text import best_similarity, normalize
from kb_dumps.label_memory import LabelMemory
from kb_dumps.profiles import KBProfile
from kb_dumps.stage_errors import KBQAError, echo

# Score floor inside a product, so that a candidate scored 0 (below threshold) still orders the others.
_MIN_SCORE = 1e-4
# Score factor of a candidate of the compatible kind (a class for an entity placeholder, or the reverse).
KIND_DISCOUNT = 0.9


class PlaceholderGrounder(Protocol):
    """What the assembler asks of a grounder: `grounding.Grounder`, or `MemoryGrounder` (whose `search` gives None:
    it proposes nothing). A grounder with an `encode_query` method gets the query vector computed once."""

    def correct(self, guessed_uri: str | None, label: str, description: str | None = None,
                kind: str | None = None, context: RawContext | None = None) -> Correction: ...

    def search(self, label: str, description: str | None = None, kind: str | None = None, k: int = 10,
               context: RawContext | None = None, query_vector: np.ndarray | None = None) -> GroundingResult | None: ...


class MemoryGrounder:
    """Grounding with no index: a guessed URI is checked against the label memory (exists, kind, label
    agrees, as `Grounder.correct` does) and nothing else is proposed. Used when `kbqa index` has not run."""

    reason = "the store has no grounding index (run `kbqa index --store DIR`); only guessed URIs can be used"

    def __init__(self, memory: LabelMemory | None, profile: KBProfile):
        """`memory` a LabelMemory, or None (no store: guesses are used unchecked)."""
        self.memory = memory
        self.profile = profile

    def memory_id(self, uri: str) -> str:
        iri = self.profile.expand(uri) if not uri.startswith("http") else uri
        return self.profile.property_entity(iri)

    def correct(self, guessed_uri: str | None, label: str, description: str | None = None,
                kind: str | None = None, context: RawContext | None = None) -> Correction:
        if not guessed_uri:
            return Correction("none", None, None, f"no URI was guessed; {self.reason}")
        try:
            iri = self.memory_id(guessed_uri)
        except ValueError as e:
            return Correction("none", None, guessed_uri, f"the guess {guessed_uri!r} is not a URI this KB can use ({e})")
        if self.memory is None:  # generate-only with no store: nothing to check the guess against
            cand = Candidate(iri, label, description or "", kind or "entity", 1.0, {}, ["guess-unchecked"], label)
            return Correction("kept", iri, guessed_uri, "kept unchecked: no store to confirm it", cand)
        row = self.memory.get(iri) if self.memory is not None else None
        if row is None:
            return Correction("none", None, guessed_uri, f"{guessed_uri} is not in the label memory; {self.reason}")
        norm = normalize(label or "")
        lex, matched = best_similarity(norm, row.label, row.aliases) if norm else (1.0, row.label)
        if kind and row.kind != kind:
            return Correction("none", None, guessed_uri, f"{guessed_uri} is a {row.kind}, the placeholder needs "
                              f"a {kind}; {self.reason}")
        if lex < LABEL_AGREEMENT:
            return Correction("none", None, guessed_uri, f"{guessed_uri} is labelled {echo(row.label)}, which "
                              f"does not match {echo(label)}; {self.reason}")
        cand = Candidate(row.id, row.label, row.description, row.kind, round(lex, 4), {"lexical": round(lex, 4)},
                         ["guess"], matched)
        return Correction("kept", row.id, guessed_uri, f"{guessed_uri} exists with label {row.label!r}", cand)

    def search(self, label: str, description: str | None = None, kind: str | None = None, k: int = 10,
               context: RawContext | None = None, query_vector: np.ndarray | None = None) -> GroundingResult | None:
        return None


def distinct_placeholders(plan: Query) -> list[Placeholder]:
    """The first occurrence of each placeholder name, in order of appearance."""
    seen: dict[str, Placeholder] = {}
    for ph in placeholders(plan):
        seen.setdefault(ph.name, ph)
    return list(seen.values())


def _compatible(wanted: str, kind: str) -> bool:
    """Entity and class placeholders accept either: whether a KB id is an "entity" or a "class" depends on
    how the label memory was built (an id becomes a class only when seen as an object of instance-of),
    which a model cannot know. A property is a property."""
    return (wanted == "property") == (kind == "property")


def ground_placeholder(grounder: PlaceholderGrounder, ph: Placeholder, k: int, *, widen: bool = False) -> PlaceholderGrounding:
    """Candidates for one placeholder, best first: a guessed URI the KB confirms comes first; then the
    grounder's candidates of the placeholder's kind, then of the compatible kind (entity <-> class) at a
    small discount; with `widen`, also those below the grounder's threshold."""
    pg = PlaceholderGrounding(ph.name, ph.kind, ph.label, ph.description, ph.guessed_uri, ph.ac, widened=widen)
    cands: list[Candidate] = []
    reasons: list[str] = []
    if ph.guessed_uri:
        try:
            pg.correction = grounder.correct(ph.guessed_uri, ph.label, ph.description or None,
                                             "property" if ph.kind == "property" else None)
        except KBQAError as e:
            reasons.append(e.info.message)
        else:
            cand = pg.correction.candidate
            if pg.correction.action == "kept" and cand is not None and _compatible(ph.kind, cand.kind):
                cands.append(cand)
            elif pg.correction.action == "kept" and cand is not None:
                reasons.append(f"{ph.guessed_uri} is a {cand.kind}, the placeholder needs a {ph.kind}")
                pg.correction = Correction("none", None, ph.guessed_uri, reasons[-1])
            elif pg.correction.action == "none":
                reasons.append(pg.correction.reason)
    if ph.label.strip() or ph.description.strip():
        kinds = [ph.kind] + [other for other in ("entity", "class") if ph.kind in ("entity", "class") and other != ph.kind]
        vector = None
        for i, kind in enumerate(kinds):
            try:
                if vector is None and hasattr(grounder, "encode_query"):
                    vector = grounder.encode_query(ph.label, ph.description or None)
                res = grounder.search(ph.label, ph.description or None, kind, k, query_vector=vector)
            except KBQAError as e:
                reasons.append(e.info.message)
                break
            if res is None:
                if isinstance(grounder, MemoryGrounder) and not ph.guessed_uri:
                    reasons.append(grounder.reason)
                break
            found = list(res.candidates) + (list(res.below_threshold) if widen else [])
            for c in found:
                if i:  # the compatible kind: kept, a little behind the asked kind
                    c = Candidate(c.id, c.label, c.description, c.kind, round(c.score * KIND_DISCOUNT, 4),
                                  dict(c.signals), list(c.sources), c.matched)
                cands.append(c)
            if not res.candidates and res.reason and i == 0:
                reasons.append(res.reason)
    best: dict[str, Candidate] = {}
    for c in cands:
        if c.id not in best or c.score > best[c.id].score:
            best[c.id] = c
    # A confirmed guess keeps the first place whatever its score: the model and the KB agree on it.
    guess_id = pg.correction.uri if pg.correction and pg.correction.action == "kept" else None
    pg.candidates = sorted(best.values(), key=lambda c: (c.id != guess_id, -c.score))
    if not pg.candidates:
        pg.reason = "; ".join(dict.fromkeys(r for r in reasons if r)) or "no candidate"
    return pg


def pinned_grounding(ph: Placeholder, iri: str) -> PlaceholderGrounding:
    """A placeholder whose IRI the translator already confirmed on this store (it ran its query with it): that IRI
    is its one candidate, kept as given, so what runs is what was checked."""
    pg = PlaceholderGrounding(ph.name, ph.kind, ph.label, ph.description, ph.guessed_uri, ph.ac)
    cand = Candidate(iri, ph.label, ph.description, ph.kind, 1.0, {}, ["confirmed"], ph.label)
    pg.correction = Correction("kept", iri, ph.guessed_uri or iri, "confirmed by the translator's check on this store",
                               cand)
    pg.candidates = [cand]
    return pg


def combinations(lists: list[list[Candidate]], limit: int) -> Iterator[tuple[float, tuple[int, ...]]]:
    """Index tuples into `lists` (each sorted best first) in order of decreasing score product, at most
    `limit` of them: the classic best-first walk over a product with a heap (no full enumeration)."""
    if any(not lst for lst in lists):
        return
    if not lists:  # a Plan with no placeholder has exactly one combination: the empty one
        yield 1.0, ()
        return

    def score(idx: tuple[int, ...]) -> float:
        out = 1.0
        for lst, i in zip(lists, idx, strict=True):
            out *= max(lst[i].score, _MIN_SCORE)
        return out

    start = (0,) * len(lists)
    heap = [(-score(start), start)]
    seen = {start}
    produced = 0
    while heap and produced < limit:
        neg, idx = heapq.heappop(heap)
        yield -neg, idx
        produced += 1
        for d in range(len(lists)):
            if idx[d] + 1 < len(lists[d]):
                nxt = idx[:d] + (idx[d] + 1,) + idx[d + 1:]
                if nxt not in seen:
                    seen.add(nxt)
                    heapq.heappush(heap, (-score(nxt), nxt))


def add_candidates(pg: PlaceholderGrounding, extra: list[Candidate]) -> None:
    """Merge more candidates into a placeholder's list (best score per id), keeping a confirmed guess first."""
    best = {c.id: c for c in pg.candidates}
    for c in extra:
        if c.id not in best or c.score > best[c.id].score:
            best[c.id] = c
    guess_id = pg.correction.uri if pg.correction and pg.correction.action == "kept" else None
    pg.candidates = sorted(best.values(), key=lambda c: (c.id != guess_id, -c.score))
    if pg.candidates:
        pg.reason = ""
