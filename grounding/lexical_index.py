"""The lexical index: normalised exact lookup plus trigram blocking, then rapidfuzz on a few hundred names.

A query never scans every label. Layout per kind, all numpy arrays memory-mapped on load:
  names.bin / names_off.npy   the normalised names (labels and aliases), UTF-8, concatenated
  names_rowid.npy             label-memory rowid of each name; names_alias.npy: 1 for an alias
  exact_hash.npy / exact_nid.npy   sorted 63-bit hashes of the names -> name id (exact lookup)
  gram_keys.npy / gram_off.npy / gram_post.npy   CSR inverted lists: trigram -> sorted name ids
  name_grams.npy              distinct trigram count per name (for the overlap estimate)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rapidfuzz import fuzz, process

from grounding.text import normalize, text_hash, trigram_keys, trigram_pairs

KINDS = ("entity", "property", "class")
_FILES = ("names_off", "names_rowid", "names_alias", "exact_hash", "exact_nid", "gram_keys", "gram_off",
          "gram_post", "name_grams")
_MAPPED = {"gram_post", "exact_hash", "exact_nid"}
# Postings read per query: the rarest trigrams first until this many ids are gathered — at least POSTING_BUDGET,
# and one for every NAMES_PER_POSTING names of the kind: a trigram's list grows with the names, and a fixed budget
# stops before the lists a misspelt name still shares with its row (10M rows: hybrid top-10 recall 0.905 with a
# fixed 40,000, 0.975 with 160,000, lexical p50 4.7 -> 10.8 ms; BENCHMARKS.md, issue 25).
POSTING_BUDGET = 40_000
NAMES_PER_POSTING = 64
# Names scored with rapidfuzz per query after blocking.
POOL = 300


def posting_budget(names: int) -> int:
    """Postings one query reads in a lexicon of `names` names (see POSTING_BUDGET)."""
    return max(POSTING_BUDGET, names // NAMES_PER_POSTING)


@dataclass
class LexicalHit:
    rowid: int
    score: float  # rapidfuzz ratio of the best name of the row, in [0, 1]; 1.0 only for an exact match
    name: str  # the normalised name that matched
    alias: bool


class KindLexicon:
    """The lexical index of one kind."""

    def __init__(self, arrays: dict[str, np.ndarray], blob: bytes):
        self.a = arrays
        self.blob = blob

    def __len__(self) -> int:
        return len(self.a["names_rowid"])

    def name(self, nid: int) -> str:
        off = self.a["names_off"]
        return self.blob[int(off[nid]):int(off[nid + 1])].decode("utf-8")

    # ---- building -------------------------------------------------------------------------
    @classmethod
    def build(cls, norms: list[str], rowids: list[int], alias: list[bool]) -> KindLexicon:
        encoded = [n.encode("utf-8") for n in norms]
        off = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(e) for e in encoded], out=off[1:])
        hashes = np.fromiter((text_hash(n) for n in norms), dtype=np.int64, count=len(norms))
        order = np.argsort(hashes, kind="stable")
        keys, owners = trigram_pairs(norms)
        # owners ascend, so a stable sort by trigram keeps each list sorted; then drop repeated pairs
        order_g = np.argsort(keys, kind="stable")
        keys, owners = keys[order_g], owners[order_g]
        dup = np.zeros(len(keys), dtype=bool)
        dup[1:] = (keys[1:] == keys[:-1]) & (owners[1:] == owners[:-1])
        keys, owners = keys[~dup], owners[~dup]
        gram_keys, starts = np.unique(keys, return_index=True)
        gram_off = np.append(starts, len(keys)).astype(np.int64)
        arrays = {
            "names_off": off,
            "names_rowid": np.asarray(rowids, dtype=np.int64),
            "names_alias": np.asarray(alias, dtype=np.uint8),
            "exact_hash": hashes[order],
            "exact_nid": order.astype(np.int64),
            "gram_keys": gram_keys.astype(np.int64),
            "gram_off": gram_off,
            "gram_post": owners.astype(np.int32),
            "name_grams": np.bincount(owners, minlength=len(norms)).astype(np.int32),
        }
        return cls(arrays, b"".join(encoded))

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for name in _FILES:
            np.save(folder / f"{name}.npy", self.a[name])
        (folder / "names.bin").write_bytes(self.blob)

    @classmethod
    def load(cls, folder: Path) -> KindLexicon:
        # per-name arrays and the names are read into memory (element access on a memmap is slow in
        # Python); the big posting lists stay memory-mapped
        arrays = {name: np.load(folder / f"{name}.npy", mmap_mode="r" if name in _MAPPED else None)
                  for name in _FILES}
        return cls(arrays, (folder / "names.bin").read_bytes())

    # ---- searching ------------------------------------------------------------------------
    def exact(self, norm: str) -> list[int]:
        """Name ids whose normalised name is exactly `norm`."""
        h = text_hash(norm)
        hs = self.a["exact_hash"]
        lo, hi = np.searchsorted(hs, h, side="left"), np.searchsorted(hs, h, side="right")
        return [int(n) for n in self.a["exact_nid"][lo:hi] if self.name(int(n)) == norm]

    def block(self, norm: str, pool: int = POOL) -> np.ndarray:
        """Up to `pool` name ids sharing the most trigrams with `norm`, reading the rarest lists first (as many
        postings as `posting_budget` allows for this kind's size)."""
        qkeys = trigram_keys(norm)
        keys, goff = self.a["gram_keys"], self.a["gram_off"]
        if not len(qkeys) or not len(keys):
            return np.zeros(0, dtype=np.int64)
        pos = np.minimum(np.searchsorted(keys, qkeys), len(keys) - 1)
        pos = pos[keys[pos] == qkeys]
        if not len(pos):
            return np.zeros(0, dtype=np.int64)
        starts, ends = goff[pos], goff[pos + 1]
        order = np.argsort(ends - starts, kind="stable")
        budget = posting_budget(len(self))
        lists, total = [], 0
        for i in order.tolist():
            n = int(ends[i] - starts[i])
            if lists and total + n > budget:
                break
            lists.append(self.a["gram_post"][int(starts[i]):int(starts[i]) + min(n, budget)])
            total += n
        ids, counts = np.unique(np.concatenate(lists), return_counts=True)
        if len(ids) > pool:
            # overlap relative to the name's own trigram count: a long name sharing a few grams ranks lower
            est = counts / (len(qkeys) + self.a["name_grams"][ids] - counts)
            keep = np.argpartition(-est, pool)[:pool]
            ids = ids[keep]
        return ids.astype(np.int64)

    def search(self, norm: str, n: int, pool: int = POOL) -> list[LexicalHit]:
        """The best `n` rows by fuzzy similarity of their best name, exact matches first."""
        exact = self.exact(norm)
        cand = np.unique(np.concatenate([np.asarray(exact, dtype=np.int64), self.block(norm, pool)]))
        if not len(cand):
            return []
        off, blob = self.a["names_off"], self.blob
        names = [blob[a:b].decode("utf-8") for a, b in zip(off[cand].tolist(), off[cand + 1].tolist(), strict=True)]
        ratio = process.cdist([norm], names, scorer=fuzz.ratio, workers=1)[0]
        tsort = process.cdist([norm], names, scorer=fuzz.token_sort_ratio, workers=1)[0]
        scores = np.minimum(np.maximum(ratio, 0.95 * tsort) / 100.0, 0.99)
        is_alias = self.a["names_alias"][cand].astype(bool)
        scores = np.where(is_alias, 0.97 * scores, scores)
        if exact:
            hit = np.isin(cand, exact)
            scores[hit] = np.where(is_alias[hit], 0.97, 1.0)
        # best name per row, vectorised: sort by score, keep each row's first occurrence
        order = np.argsort(-scores, kind="stable")
        rowids = self.a["names_rowid"][cand][order]
        _, first = np.unique(rowids, return_index=True)
        keep = order[np.sort(first)][:n]
        return [LexicalHit(int(self.a["names_rowid"][cand[i]]), float(scores[i]), names[i], bool(is_alias[i]))
                for i in keep.tolist()]


class LexicalIndex:
    """Kind-partitioned lexical indexes under `<store>/index/lexical/<kind>/`."""

    def __init__(self, parts: dict[str, KindLexicon]):
        self.parts = parts

    @classmethod
    def build(cls, rows: list[tuple[int, str, str, list[str]]]) -> LexicalIndex:
        """From (rowid, kind, label, aliases) tuples."""
        acc: dict[str, tuple[list[str], list[int], list[bool]]] = {k: ([], [], []) for k in KINDS}
        for rowid, kind, label, aliases in rows:
            norms, rids, alias = acc.get(kind, acc["entity"])
            seen = set()
            for i, name in enumerate([label, *aliases]):
                nm = normalize(name) if name else ""
                if nm and nm not in seen:
                    seen.add(nm)
                    norms.append(nm)
                    rids.append(rowid)
                    alias.append(i > 0)
        return cls({k: KindLexicon.build(*v) for k, v in acc.items()})

    def save(self, folder: Path) -> None:
        for kind, part in self.parts.items():
            part.save(folder / kind)

    @classmethod
    def load(cls, folder: Path) -> LexicalIndex:
        return cls({k: KindLexicon.load(folder / k) for k in KINDS if (folder / k / "gram_keys.npy").exists()})

    def search(self, query: str, n: int = 50, kind: str | None = None) -> list[LexicalHit]:
        norm = normalize(query)
        if not norm:
            return []
        hits: list[LexicalHit] = []
        for kd in ([kind] if kind else KINDS):
            if kd in self.parts and len(self.parts[kd]):
                hits.extend(self.parts[kd].search(norm, n))
        return sorted(hits, key=lambda h: -h.score)[:n]

    def __len__(self) -> int:
        return sum(len(p) for p in self.parts.values())
