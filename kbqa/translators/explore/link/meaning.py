"""Predicates a question names by another word of the same meaning.

`link_schema` and `partial_links` link a predicate by its own words ("the age of each singer" / *age*); a question
often says it otherwise: "the gender of the student" for *sex*, "where is the club located" for *clublocation*,
"how many countries are swimmers from" for *nationality*. A content word that no class, predicate or value link
reads is compared, with the default static embedder, to the labels of the predicates of the classes the question
names; the nearest one close enough links, weaker than any name link, so a proposal that uses it competes with
the others and the ranker weighs it (`Link.meaning`). The threshold is set on Spider4SPARQL train questions (links
against the predicates of their gold queries: `bench/meaning_links.py`; BENCHMARKS.md "Words of like meaning"),
never on dev questions. The same closeness decides which one-letter code links stand (`meant_codes`): "female" for
the *F* of *sex*, not "first".
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from grounding.schema import SchemaMemory
from kbqa.translators.explore.link.words import Link, is_letter_code, overlaps
from kbqa.translators.language import LanguageProfile

if TYPE_CHECKING:
    import numpy as np

MIN_COSINE = 0.4  # a word and a predicate label at least this close (static embedder, unit vectors)
MIN_OWNER_SCORE = 0.8  # the classes whose predicates a word may name
MAX_MEANING_LINKS = 2  # per question, the closest first
MEANING_SCORE = 0.6  # the link score at MIN_COSINE; below partial names (0.75) and whole names (>= 0.8)
# a one-letter code's word and its predicate's label at least this close ("female" / *sex* 0.23, "female" / *gender*
# 0.62; "first" / *sex*, "attended" / *qualification*, "alphabetical" / *ihsaa class* lower): set on the train KGs'
# one-letter code links against the values their gold queries use (BENCHMARKS.md, issue 22 seventeenth pass)
CODE_MIN_COSINE = 0.2
_WORD = re.compile(r"[A-Za-z][A-Za-z-]{2,}")


class MeaningLinker:
    """Links by meaning, for one store's schema; caches the predicates' label vectors."""

    def __init__(self, schema: SchemaMemory, lang: LanguageProfile):
        self.schema, self.lang = schema, lang
        self._vecs: dict[str, np.ndarray] = {}
        self._embedder: object | None = None  # None: not loaded yet; False: none loads (no meaning links)
        self._classes: set[str] | None = None  # every class name's words
        self._positions: dict[str, int] | None = None  # each predicate's place in the schema

    def links(self, question: str, classes: list[Link], links: list[Link]) -> list[Link]:
        """Predicate links by meaning for the words of `question` that none of `links` (class, predicate and value
        links) reads; at most one per word, `MAX_MEANING_LINKS` in all, none to a predicate already linked."""
        owners = {c.iri for c in classes if c.score >= MIN_OWNER_SCORE}
        words = self._free_words(question, links) if owners else []
        if not words:
            return []
        have = {lk.iri for lk in links if lk.kind in ("predicate", "value")}  # a value link names its predicate
        # the named classes' own predicates, in the schema's order (equal labels: the first one wins)
        preds = sorted({p for c in owners for p in self.schema.predicates_of(c)
                        if p not in have and self.schema.predicates[p].literal}, key=self._position().__getitem__)
        emb = self._encoder()
        if not preds or emb is None:
            return []
        import numpy as np

        self._cache(emb, [p for p in preds if p not in self._vecs])
        matrix = np.stack([self._vecs[p] for p in preds])
        word_vecs = emb.encode([w for _s, _e, w in words], progress=False)
        found: list[Link] = []
        for (s, e, w), sims in zip(words, np.asarray(word_vecs @ matrix.T).tolist(), strict=True):
            best = max(range(len(preds)), key=sims.__getitem__)
            if sims[best] >= MIN_COSINE:
                score = MEANING_SCORE + 0.2 * (sims[best] - MIN_COSINE)
                found.append(Link("predicate", preds[best], round(min(score, 0.7), 4), (s, e), w,
                                  label=self.schema.predicates[preds[best]].label, meaning=True))
        found.sort(key=lambda lk: -lk.score)
        out: list[Link] = []
        for lk in found:
            if all(lk.iri != o.iri for o in out):
                out.append(lk)
        return out[:MAX_MEANING_LINKS]

    def meant_codes(self, values: list[Link]) -> list[Link]:
        """The value links less the one-letter codes whose word is far in meaning from the code's predicate: a
        code of one letter is named by any word that starts with it ("first", "members", "attended" for *F*, *M*,
        *A*), and on the train KGs 9 in 10 such links name nothing the gold query uses. Where no embedder loads,
        every link stays."""
        if not any(is_letter_code(lk) for lk in values) or self._encoder() is None:
            return values
        return [lk for lk in values if not is_letter_code(lk)
                or self.cosine(self.lang.singular(lk.text.lower()), lk.iri) >= CODE_MIN_COSINE]

    def cosine(self, text: str, pred: str) -> float:
        """How close `text` is to the predicate's label (0.0 where no embedder loads)."""
        emb = self._encoder()
        if emb is None:
            return 0.0
        self._cache(emb, [pred] if pred not in self._vecs else [])
        return float(emb.encode_one(text) @ self._vecs[pred])

    def _free_words(self, question: str, links: list[Link]) -> list[tuple[int, int, str]]:
        """Content words no link reads, less a class's own name words, a word another link reads elsewhere in the
        question ("the name and weight … by weight": one *weight*), identifier words (link/words.py links ids), and
        the comparison words, whose implied attribute the comparison reads ("older than" / *age*); a superlative
        may name a column its implied noun does not ("the longest trip" / *duration*)."""
        lang = self.lang
        stop = lang.function_words | set(lang.aggregate_words) | self._cue_words()
        linked = {w for lk in links for w in lang.stems(lk.text)}
        out = []
        for m in _WORD.finditer(question):
            w = m.group(0).lower()
            if w in stop or any(overlaps((m.start(), m.end()), lk.span) for lk in links):
                continue
            stem = lang.singular(w)
            if stem in linked or stem in self._class_words() or w in lang.identifier_words:
                continue
            out.append((m.start(), m.end(), w))
        return out

    def _cue_words(self) -> set[str]:
        return {w for phrase, _op in self.lang.comparisons for w in phrase.split()}

    def _position(self) -> dict[str, int]:
        if self._positions is None:
            self._positions = {p: i for i, p in enumerate(self.schema.predicates)}
        return self._positions

    def _class_words(self) -> set[str]:
        if self._classes is None:
            self._classes = {w for c in self.schema.classes for w in self.lang.stems(self.schema.class_label(c))}
        return self._classes

    def _encoder(self):  # noqa: ANN202 - grounding.embedder.Embedder, imported lazily
        if self._embedder is None:
            try:
                from grounding.embedder import get_embedder

                self._embedder = get_embedder(None)  # the static default: the threshold was set with it
            except Exception:  # noqa: BLE001 - no embedder loads: no meaning links, the name links stay
                self._embedder = False
        return self._embedder or None

    def _cache(self, emb: object, todo: list[str]) -> None:
        if not todo:
            return
        texts = [self._label_text(p) for p in todo]
        for p, v in zip(todo, emb.encode(texts, progress=False), strict=True):  # type: ignore[attr-defined]
            self._vecs[p] = v

    def _label_text(self, pred: str) -> str:
        """The predicate's label, a class name written into it split off ("clublocation" of *club*: "club
        location"), since a word-piece embedder reads a run-together name as other pieces."""
        info = self.schema.predicates[pred]
        words = []
        prefixes = sorted({w for d in info.domains for w in self.lang.stems(self.schema.class_label(d))},
                          key=len, reverse=True)
        for w in info.label.lower().split():
            head = next((p for p in prefixes if len(p) >= 3 and w.startswith(p) and len(w) - len(p) >= 3), None)
            words += [head, w[len(head):]] if head else [w]
        return " ".join(words)
