"""What the structure models read from a question: words, bigrams, surface cues, the static embedding.

Shared by fitting (kbqa/training/structure_fit.py) and answering, so both see the same features. Numbers are
written by shape (`1987` -> `0000`), so a year and a count are features and a particular value is not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import numpy as np

from grounding.text import normalize

_WORD = re.compile(r"[^\W_]+|'s\b", re.UNICODE)
_DIGIT = re.compile(r"\d")
STOP = frozenset("the a an of is was what which who whom whose where when how are were did does do in on at to for "
                 "by with and or from that this it its be has have had as into".split())


def words(question: str) -> list[str]:
    """Lower-cased words, digits written as 0 (numbers keep their shape, not their value)."""
    return [_DIGIT.sub("0", normalize(w)) or w for w in _WORD.findall(question)]


ENTITY_PRIORS = (("e2", 0.2), ("e5", 0.5))  # a mention counts as an entity when its learned prior passes these


def mention_counts(mentions: list[Any]) -> dict[str, int]:
    """How many entities the question names: non-overlapping mentions whose learned prior passes 0.2 / 0.5."""
    from kbqa.translators.mentions import choose

    return {tag: len(choose([m for m in mentions if m.prior >= th], 4)) for tag, th in ENTITY_PRIORS}


def masked_ngrams(mentions: list[Any], question: str) -> list[str]:
    """The n-grams of the question's words around its entities, each chosen mention (prior ≥ 0.2) written `ENT`
    ("what is the ENT of ENT" is one form whatever the names): masked bigrams and trigrams, the first three words
    and the last two."""
    from kbqa.translators.mentions import choose, mask

    spans = [(m.start, m.end) for m in choose([m for m in mentions if m.prior >= ENTITY_PRIORS[0][1]], 4)]
    ws = words(mask(question, spans, " ENT "))
    out = sorted({f"mb:{a}_{b}" for a, b in zip(ws, ws[1:], strict=False)} |
                 {f"mt:{a}_{b}_{c}" for a, b, c in zip(ws, ws[1:], ws[2:], strict=False)})
    return out + ([f"mf3:{'_'.join(ws[:3])}", f"ml2:{'_'.join(ws[-2:])}"] if ws else [])


def mention_features(mentions: list[Any], question: str = "") -> list[str]:
    """The chooser's features from the question's mentions: the entity counts (`e2:k`, `e5:k`) and, with
    `question`, the masked n-grams (`masked_ngrams`)."""
    out = [f"{tag}:{k}" for tag, k in mention_counts(mentions).items()]
    return out + (masked_ngrams(mentions, question) if question else [])


def sparse_features(question: str, extra: Iterable[str] = ()) -> list[str]:
    """Word, bigram and surface features of one question (the sparse part of the skeleton model's input), plus
    `extra` ones (`mention_features`)."""
    ws = words(question)
    feats = {f"w:{w}" for w in ws}
    feats |= {f"b:{a}_{b}" for a, b in zip(ws, ws[1:], strict=False)}
    if ws:
        feats.add(f"first:{ws[0]}")
        feats.add(f"first2:{'_'.join(ws[:2])}")
    q = question.strip()
    if q[:1].isupper():
        feats.add("s:capital")
    if q.endswith("?"):
        feats.add("s:qmark")
    if re.search(r"['\"“‘].+?['\"”’]", q):
        feats.add("s:quoted")
    feats.add(f"s:len{min(len(ws) // 4, 6)}")
    feats.update(extra)
    return sorted(feats)


def content_words(question: str) -> list[str]:
    """The words that may name a property: not stop words, not numbers."""
    return [w for w in words(question) if w not in STOP and not w.strip("0").strip() == "" and len(w) > 1]


def unit_rows(x: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(x, axis=1, keepdims=True)
    n[n < 1e-12] = 1.0
    return x / n


# ---- the skeleton re-ranker's view of a question and a skeleton ----------------------------------------------
_ASK_FIRST = frozenset("is was does did do are were has have can will had".split())
_SUPERLATIVE = re.compile(r"\b(most|least|highest|lowest|largest|smallest|biggest|maximum|minimum|max|min)\b|\w+est\b")
_COMPARISON = re.compile(r"\b(more|less|greater|fewer|than|over|under|above|below)\b")
_YEAR = re.compile(r"\b(1\d{3}|20\d{2})\b")
_QUOTED = re.compile(r"['\"“‘].+?['\"”’]")
_LETTER_WORDS = frozenset("letter starts start begins contains word".split())


def question_cues(question: str) -> dict[str, float]:
    """Surface cues of a question that tell skeleton families apart (yes/no, count, date, number, quote, letter,
    superlative, comparison, conjunction, length)."""
    low = question.lower().strip()
    ws = re.findall(r"[a-z0-9']+", low)
    first = ws[0] if ws else ""
    return {
        "q_ask": float(first in _ASK_FIRST),
        "q_howmany": float("how many" in low or "number of" in low or "count" in ws),
        "q_when": float(first == "when" or "what year" in low or "which year" in low or "what date" in low),
        "q_num": float(bool(_DIGIT.search(question))),
        "q_year": float(bool(_YEAR.search(question))),
        "q_quote": float(bool(_QUOTED.search(question))),
        "q_letter": float(bool(_LETTER_WORDS & set(ws))),
        "q_super": float(bool(_SUPERLATIVE.search(low))),
        "q_cmp": float(bool(_COMPARISON.search(low))),
        "q_also": float(bool(re.search(r"\b(also|and|both)\b", low))),
        "q_words": len(ws) / 20,
    }


def skeleton_shape(skeleton: str) -> dict[str, float]:
    """What kind of query a skeleton writes (form, filters, ordering, qualifiers, literal types, size)."""
    return {
        "k_ask": float(skeleton.startswith("ASK")),
        "k_count": float("COUNT" in skeleton),
        "k_filter": float("FILTER" in skeleton),
        "k_order": float("ORDER" in skeleton),
        "k_qual": float("pq:" in skeleton),
        "k_num": float("NUM" in skeleton),
        "k_date": float("DATE" in skeleton or "YEAR" in skeleton),
        "k_str": float(("STR" in skeleton and "STRSTARTS" not in skeleton) or "CONTAINS" in skeleton),
        "k_starts": float("STRSTARTS" in skeleton),
        "k_lang": float("LANG" in skeleton),
        "k_triples": skeleton.count(" . ") / 4,
        "k_minus": float("MINUS" in skeleton or "NOT EXISTS" in skeleton),
    }


# question cue x skeleton shape: the pairs where one should go with the other
CUE_SHAPE_PAIRS = (("q_ask", "k_ask"), ("q_howmany", "k_count"), ("q_when", "k_date"), ("q_num", "k_num"),
                   ("q_year", "k_date"), ("q_quote", "k_str"), ("q_letter", "k_starts"), ("q_super", "k_order"),
                   ("q_cmp", "k_filter"), ("q_when", "k_qual"), ("q_also", "k_triples"))


def cue_shape_features(question: str, skeleton: str) -> dict[str, float]:
    """The question's cues, the skeleton's shape and their products (the re-ranker is linear)."""
    q = question_cues(question)
    k = skeleton_shape(skeleton)
    out = {**q, **k}
    for a, b in CUE_SHAPE_PAIRS:
        out[f"x_{a}_{b}"] = q[a] * k[b]
    return out
