"""Text normalisation, character trigrams and fuzzy label similarity shared by both indexes."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable

import numpy as np
from rapidfuzz import fuzz

_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)


def normalize(text: str) -> str:
    """NFKD, accents stripped, casefolded, punctuation and `_` collapsed to single spaces.

    `Saša Vujačić` -> `sasa vujacic`, `place_of_birth` -> `place of birth`.
    """
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return _NON_WORD.sub(" ", stripped.casefold()).strip()


def text_hash(norm: str) -> int:
    """A stable 63-bit hash of a normalised string (Python's hash() is salted per process)."""
    return int.from_bytes(hashlib.blake2b(norm.encode("utf-8"), digest_size=8).digest(), "little") >> 1


def padded(norm: str) -> str:
    """Pad with a space on each side so that word starts and ends make their own trigrams."""
    return f" {norm} "


def trigram_keys(norm: str) -> np.ndarray:
    """The distinct trigram keys of one normalised string, as int64 (three 21-bit code points)."""
    codes = np.frombuffer(padded(norm).encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
    if len(codes) < 3:
        return np.zeros(0, dtype=np.int64)
    keys = (codes[:-2] << 42) | (codes[1:-1] << 21) | codes[2:]
    return np.unique(keys)


def trigram_pairs(norms: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(keys, name ids) of every trigram of every string, computed without a Python loop per trigram."""
    pads = [padded(n) for n in norms]
    lengths = np.fromiter((len(p) for p in pads), dtype=np.int64, count=len(pads))
    if not len(pads):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    codes = np.frombuffer("".join(pads).encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
    owner = np.repeat(np.arange(len(pads), dtype=np.int64), lengths)
    # a trigram starting at j is valid when j and j+2 belong to the same string
    valid = owner[:-2] == owner[2:]
    keys = ((codes[:-2] << 42) | (codes[1:-1] << 21) | codes[2:])[valid]
    return keys, owner[:-2][valid]


def similarity(query_norm: str, name_norm: str) -> float:
    """Fuzzy similarity in [0, 1] of two normalised strings: edit ratio, word order forgiven a little."""
    if not query_norm or not name_norm:
        return 0.0
    if query_norm == name_norm:
        return 1.0
    score = max(fuzz.ratio(query_norm, name_norm), 0.95 * fuzz.token_sort_ratio(query_norm, name_norm))
    return min(score / 100.0, 0.99)  # only an exact match scores 1


def best_similarity(query_norm: str, label: str, aliases: Iterable[str]) -> tuple[float, str]:
    """The best similarity over a row's label and aliases, and the name that gave it.

    An alias match counts slightly less than the same match on the preferred label, so that
    the entity whose *label* is the query wins a tie against one that only has it as an alias.
    """
    best, name = similarity(query_norm, normalize(label)), label
    for alias in aliases:
        s = 0.97 * similarity(query_norm, normalize(alias))
        if s > best:
            best, name = s, alias
    return best, name
