"""The label collector: watches a source as it streams into the store and writes the label memory.

Two entries, one bookkeeping: `observe(quad)` for readers that yield quads (Turtle, RDF/XML,
Wikidata JSON), and `scan_block(bytes)` for N-Triples/N-Quads lines that pyoxigraph's bulk
loader parses itself. The byte scanner exists because building a Python object per triple
halves the load rate (bench/ingest.py): it only slices IRIs out of each line and counts them,
and hands the few lines that carry labels, descriptions, aliases or types to `observe`.
Memory is bounded: counts and texts are written to SQLite every FLUSH_EVERY distinct ids.
"""

from __future__ import annotations

import re
from collections import Counter

import pyoxigraph as ox

from kb_dumps.label_memory import KIND_RANK, LabelMemory
from kb_dumps.profiles import KBProfile

FLUSH_EVERY = 200_000  # distinct ids held in memory before the collector writes them out

# subject IRI, predicate IRI, object IRI (empty for a literal or blank node) of an N-Triples line.
_TRIPLE_RE = re.compile(rb"^<([^>]*)>[ \t]+<([^>]*)>[ \t]+(?:<([^>]*)>)?", re.M)
_BNODE_LINE_RE = re.compile(rb"^[ \t]*_:[^\n]*$", re.M)


def _unescape_iri(raw: bytes) -> str:
    """IRIs as they appear in N-Triples; the rare one with a \\u escape is unescaped by the parser."""
    if b"\\" not in raw:
        return raw.decode("utf-8", "replace")
    try:
        return next(iter(ox.parse(b"<" + raw + b"> <http://x/p> <http://x/o> .\n",
                                  format=ox.RdfFormat.N_TRIPLES))).subject.value
    except (SyntaxError, StopIteration):
        return raw.decode("utf-8", "replace")


class LabelCollector:
    """Collects labels/aliases/descriptions/kinds/popularity and writes them in bounded batches."""

    def __init__(self, profile: KBProfile, memory: LabelMemory, generation: int, languages: tuple[str, ...]):
        self.profile, self.memory, self.generation = profile, memory, generation
        self.languages = languages
        self.label_preds = set(profile.label_predicates)
        self.desc_preds = set(profile.description_predicates)
        self.alias_preds = set(profile.alias_predicates)
        self.type_pred = profile.type_predicate
        self.subclass_pred = profile.subclass_predicate
        self.property_types = set(profile.property_types)
        self.class_types = set(profile.class_types)
        self.texts: dict[str, dict] = {}
        self.popularity: dict[str, int] = {}
        self.popularity_b: Counter[bytes] = Counter()  # from the byte scanner; decoded at flush
        self.pred_counts_b: Counter[bytes] = Counter()
        self._special_markers = [b"<" + p.encode() + b">" for p in (*self.label_preds, *self.desc_preds, *self.alias_preds,
                                                      self.type_pred, self.subclass_pred)]
        self.pid_cache: dict[str, str] = {}
        self.rows_touched = 0
        self.statements = 0  # statements seen by scan_block

    # ---- quads ---------------------------------------------------------------------------
    def _lang_rank(self, lit: ox.Literal) -> int | None:
        """0 = first asked language, …; untagged literals rank after asked ones; others are ignored."""
        lang = lit.language
        if not lang:
            return len(self.languages)
        base = lang.split("-")[0]
        for i, wanted in enumerate(self.languages):
            if lang == wanted or base == wanted:
                return i
        return None

    def _text(self, iri: str) -> dict:
        t = self.texts.get(iri)
        if t is None:
            t = self.texts[iri] = {"label": None, "label_rank": 99, "aliases": [], "description": None,
                                   "desc_rank": 99, "kind": None}
        return t

    def _kind(self, iri: str, kind: str) -> None:
        t = self._text(iri)
        if t["kind"] is None or KIND_RANK[kind] > KIND_RANK[t["kind"]]:
            t["kind"] = kind

    def _pid(self, predicate: str) -> str:
        pid = self.pid_cache.get(predicate)
        if pid is None:
            pid = self.pid_cache[predicate] = self.profile.property_entity(predicate)
            self._kind(pid, "property")
        return pid

    def observe(self, quad: ox.Quad) -> None:
        s, p, o = quad.subject, quad.predicate.value, quad.object
        if not isinstance(s, ox.NamedNode):
            return
        sv = s.value
        if isinstance(o, ox.Literal) and (p in self.label_preds or p in self.desc_preds or p in self.alias_preds):
            self._observe_text(sv, p, o)
            return
        pop = self.popularity
        pop[sv] = pop.get(sv, 0) + 1
        pid = self._pid(p)
        pop[pid] = pop.get(pid, 0) + 1
        if isinstance(o, ox.NamedNode):
            ov = o.value
            pop[ov] = pop.get(ov, 0) + 1
            if p == self.type_pred:
                self._kind(ov, "class")
                if ov in self.property_types:
                    self._kind(sv, "property")
                elif ov in self.class_types:
                    self._kind(sv, "class")
            elif p == self.subclass_pred:
                self._kind(ov, "class")
                self._kind(sv, "class")
        if len(pop) + len(self.texts) > FLUSH_EVERY:
            self.flush()

    def _observe_text(self, sv: str, p: str, o: ox.Literal) -> None:
        rank = self._lang_rank(o)
        if rank is None:
            return
        t = self._text(sv)
        if p in self.desc_preds:
            if t["description"] is None or rank < t["desc_rank"]:
                t["description"], t["desc_rank"] = o.value, rank
        elif p in self.label_preds:
            if t["label"] is None or rank < t["label_rank"]:
                if t["label"] is not None:
                    t["aliases"].append(t["label"])
                t["label"], t["label_rank"] = o.value, rank
            else:
                t["aliases"].append(o.value)
        else:
            t["aliases"].append(o.value)

    # ---- N-Triples / N-Quads lines -----------------------------------------------------------
    def _special_lines(self, block: bytes) -> list[bytes]:
        """Lines whose predicate carries text (labels…) or typing (kinds), found with C-level finds."""
        lines: dict[int, bytes] = {}
        for marker in self._special_markers:
            pos = block.find(marker)
            while pos >= 0:
                start = block.rfind(b"\n", 0, pos) + 1
                end = block.find(b"\n", pos)
                end = len(block) if end < 0 else end
                lines[start] = block[start:end]
                pos = block.find(marker, end)
        return [lines[k] for k in sorted(lines)]

    def scan_block(self, block: bytes, fmt: ox.RdfFormat) -> None:
        """Count the IRIs of complete N-Triples/N-Quads lines; the loader checks the syntax.

        The loops run in C (re.findall, zip, Counter.update): a Python statement per line
        would make this the slowest part of ingestion.
        """
        triples = _TRIPLE_RE.findall(block)
        bnode_lines = block.startswith(b"_:") + block.count(b"\n_:")
        self.statements += len(triples) + bnode_lines
        if triples:
            subjects, preds, objects = zip(*triples, strict=True)
            self.popularity_b.update(subjects)
            self.popularity_b.update(objects)
            self.pred_counts_b.update(preds)
        special = [line for line in self._special_lines(block) if line[:1] == b"<"]
        if special:
            self._observe_special(special, fmt)
        if bnode_lines:
            self._observe_line(b"\n".join(_BNODE_LINE_RE.findall(block)), fmt)
        if len(self.popularity_b) + len(self.popularity) + len(self.texts) > FLUSH_EVERY:
            self.flush()

    def _observe_special(self, lines: list[bytes], fmt: ox.RdfFormat) -> None:
        """Text and typing lines were counted by the bulk pass: undo those counts, then `observe`
        them (which skips text triples and counts typing triples itself)."""
        joined = b"\n".join(lines)
        for s, p, o in _TRIPLE_RE.findall(joined):
            self.popularity_b[s] -= 1
            self.popularity_b[o] -= 1
            self.pred_counts_b[p] -= 1
        self._observe_line(joined, fmt)

    def _observe_line(self, lines: bytes, fmt: ox.RdfFormat) -> None:
        try:
            for q in ox.parse(lines + b"\n", format=fmt):
                self.observe(q)
        except SyntaxError:
            # The bulk loader reports the error with its absolute line; here, observe the
            # lines that do parse, one by one.
            for line in lines.split(b"\n"):
                try:
                    for q in ox.parse(line + b"\n", format=fmt):
                        self.observe(q)
                except SyntaxError:
                    continue

    # ---- writing -------------------------------------------------------------------------------
    def flush(self) -> None:
        pop = self.popularity
        for key, n in self.popularity_b.items():
            if key and n > 0:
                iri = _unescape_iri(key)
                pop[iri] = pop.get(iri, 0) + n
        for pred, n in self.pred_counts_b.items():
            if n > 0:
                pid = self._pid(_unescape_iri(pred))
                pop[pid] = pop.get(pid, 0) + n
        if self.texts:
            hinted = {}
            for iri, t in self.texts.items():
                kind = t["kind"] or self.profile.kind_hint(iri)
                hinted[iri] = {"label": t["label"], "aliases": t["aliases"], "description": t["description"],
                               "kind": kind}
            self.memory.merge_texts(hinted, self.generation)
            self.rows_touched += len(hinted)
        if pop:
            self.memory.add_popularity(pop, self.generation)
        self.texts, self.popularity, self.popularity_b, self.pred_counts_b = {}, {}, Counter(), Counter()
        # Properties seen once stay known: re-mark them as properties after the texts were written.
        for pid in set(self.pid_cache.values()):
            self._kind(pid, "property")
