"""Names the question writes differently from the KG: weak entity links for `explore` beyond exact mentions.

Questions shorten and respell names: "harriet osterman" for *Harriet Quill Osterman*, "sparrows dont weep" for
*Sparrows Don't Weep*, "quiet harbour" for *Quiet Harbour: The Long Winter of …*, "tom vance" for *Thomas Vance*. None of these is an exact n-gram match, so the mention detector misses them
(its fuzzy pass runs only when no exact span looks like a name, and scores whole runs of words). Here every
content-word n-gram is looked up in the lexical index and a hit is kept when the n-gram is the name written
without its apostrophes or spaces, a run of the name's words in order (a short form or a title without its
subtitle), or a close respelling. The links are weak on purpose: the search then lets the knowledge graph
decide — an item that holds the relation the question asks about beats a better-named item that does not.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from grounding.text import normalize
from kbqa.translators.explore.link.words import Link
from kbqa.translators.language import ENGLISH, LanguageProfile
from kbqa.translators.mentions import tokenize

if TYPE_CHECKING:
    from grounding.lexical_index import KindLexicon, LexicalHit
    from kb_dumps.label_memory import LabelMemory

MAX_TOKENS = 7  # the longest n-gram looked up
MAX_LOOKUPS = 40  # lexical lookups per question (about 1 ms each)
PER_SPAN = 3  # links kept per n-gram
# Link scores by kind of match, below an exact mention's (0.2-0.6 typically): they win on relation evidence only.
SAME_LETTERS = 0.35  # the name with its apostrophes/spaces written differently (no apostrophe)
SUBSEQUENCE = 0.22  # times the share of the name's words the question writes
RESPELLING = 0.18  # times the fuzzy ratio
RESPELLING_MIN = 0.8


def _trailing(lang: LanguageProfile) -> frozenset[str]:
    """Words that never start or end a name: function words and the possessive suffix (its own token)."""
    return lang.function_words | {lang.possessive_suffix}


def _in_order(words: list[str], name: list[str]) -> bool:
    """`words` appear in `name` in the same order (gaps allowed): "harriet osterman" in "harriet quill osterman"."""
    it = iter(name)
    return all(w in it for w in words)


def name_variants(question: str, found: list[Link], lexicon: KindLexicon, memory: LabelMemory,
                  avoid: Sequence[tuple[int, int]] = (), lang: LanguageProfile = ENGLISH) -> list[Link]:
    """Weak entity links for n-grams that name an item differently from its label (see the module docstring).

    `found`: links already made (their spans are not looked up again when an exact mention covers them);
    `lexicon`: the entity part of the store's lexical index; `avoid`: spans that name a class or a predicate
    ("zoo keepers" is the class, not a respelling of the item *zoo keeper id 1*).
    """
    trailing = _trailing(lang)
    toks = tokenize(question)
    exact_spans = {lk.span for lk in found}
    known = {lk.iri for lk in found}
    spans: list[tuple[int, int]] = []
    for i in range(len(toks)):
        if toks[i][2] in trailing:  # nor the start of one
            continue
        for j in range(min(len(toks), i + MAX_TOKENS), i, -1):
            if toks[j - 1][2] in trailing:
                continue
            span = (toks[i][0], toks[j - 1][1])
            if span in exact_spans or len(" ".join(t[2] for t in toks[i:j])) < 5:
                continue
            if any(span[0] < b and a < span[1] for a, b in avoid):
                continue
            spans.append((i, j))
    # longer n-grams first: they name more specific items; the budget keeps slow questions bounded
    spans.sort(key=lambda s: -(s[1] - s[0]))
    matches: list[tuple[int, int, float, LexicalHit]] = []  # (first token, last token + 1, score, lexical hit)
    for i, j in spans[:MAX_LOOKUPS]:
        words = [t[2] for t in toks[i:j]]
        norm = " ".join(words)
        kept = []
        for h in lexicon.search(norm, 10):
            name = h.name.split()
            if norm.replace(" ", "") == h.name.replace(" ", ""):
                score = SAME_LETTERS
            elif len(words) >= 2 and _in_order(words, name):
                score = SUBSEQUENCE * len(words) / len(name) * (1.2 if name[:len(words)] == words else 1.0)
            elif h.score >= RESPELLING_MIN and len(norm) >= 6 and len(name) == len(words):
                score = RESPELLING * h.score
            else:
                continue
            kept.append((i, j, score, h))
            if len(kept) >= PER_SPAN:
                break
        matches += kept
    rows = memory.by_rowids([h.rowid for *_, h in matches]) if matches else {}  # one label lookup for all
    best: dict[str, Link] = {}
    for i, j, score, h in matches:
        row = rows.get(h.rowid)
        if row is None or row.id in known:
            continue
        if row.id not in best or best[row.id].score < score:
            start, end = toks[i][0], toks[j - 1][1]
            best[row.id] = Link("entity", row.id, score, (start, end), question[start:end],
                                label=row.label or normalize(h.name), variant=True)
    return sorted(best.values(), key=lambda lk: -lk.score)
