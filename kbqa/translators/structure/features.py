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


def mention_features(mentions: list[Any]) -> list[str]:
    """How many entities the question names: non-overlapping mentions whose learned prior passes 0.2 / 0.5."""
    from kbqa.translators.mentions import choose

    out = []
    for tag, th in (("e2", 0.2), ("e5", 0.5)):
        k = len(choose([m for m in mentions if m.prior >= th], 4))
        out.append(f"{tag}:{k}")
    return out


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
