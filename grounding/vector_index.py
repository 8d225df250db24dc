"""The vector index: one hnswlib cosine index per kind, hnsw label = label-memory rowid (aliases mapped).

Why one index per kind: a kind filter is then free and exact (hnswlib's filter callback runs in
Python per visited node), and the small property/class indexes are searched exhaustively enough
to be near-exact. A row's main vector (`label: description`) has the row's rowid as its hnsw
label; each alias vector gets `ALIAS_BASE + n`, `n` an index into `alias_rowids`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import hnswlib
import numpy as np

KINDS = ("entity", "property", "class")
ALIAS_BASE = 1 << 40  # far above any SQLite rowid a label memory will reach
_M, _EF_CONSTRUCTION, _EF_SEARCH = 16, 100, 64


@dataclass
class VectorHit:
    rowid: int
    similarity: float  # cosine in [-1, 1]


@dataclass
class _KindState:
    live: int = 0  # vectors not marked deleted (hnswlib has no call that reports it)


@dataclass
class VectorIndex:
    """Per-kind hnswlib indexes plus the alias map, saved under `<store>/index/`."""

    dim: int
    indexes: dict[str, hnswlib.Index] = field(default_factory=dict)
    alias_rowids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    alias_kinds: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int8))
    state: dict[str, _KindState] = field(default_factory=dict)

    # ---- building -------------------------------------------------------------------------
    def _index(self, kind: str, extra: int) -> hnswlib.Index:
        idx = self.indexes.get(kind)
        if idx is None:
            idx = hnswlib.Index(space="cosine", dim=self.dim)
            idx.init_index(max_elements=max(extra, 16), ef_construction=_EF_CONSTRUCTION, M=_M)
            idx.set_ef(_EF_SEARCH)
            self.indexes[kind] = idx
            self.state[kind] = _KindState()
        elif idx.element_count + extra > idx.get_max_elements():
            idx.resize_index(max(idx.element_count + extra, int(idx.get_max_elements() * 1.5)))
        return idx

    def remove_rows(self, rowids: np.ndarray) -> None:
        """Mark deleted every vector of these rows (before their new vectors are added)."""
        if not len(rowids):
            return
        for kind, idx in self.indexes.items():
            present = set(idx.get_ids_list()) if len(rowids) > 1000 else None
            for r in rowids.tolist():
                if present is not None and r not in present:
                    continue
                try:
                    idx.mark_deleted(r)
                    self.state[kind].live -= 1
                except RuntimeError:
                    pass  # not in this kind's index (or already deleted)
        gone = np.nonzero(np.isin(self.alias_rowids, rowids))[0]
        for n in gone.tolist():
            kind = KINDS[int(self.alias_kinds[n])]
            try:
                self.indexes[kind].mark_deleted(ALIAS_BASE + n)
                self.state[kind].live -= 1
            except (RuntimeError, KeyError):
                pass
        self.alias_rowids[gone] = -1

    def add(self, kind: str, rowids: np.ndarray, vectors: np.ndarray, is_alias: np.ndarray) -> None:
        """Add vectors of one kind: main vectors under their rowid, alias vectors under new alias labels.

        A main vector whose rowid is already there (even marked deleted) is replaced in place.
        """
        if not len(rowids):
            return
        idx = self._index(kind, len(rowids))
        labels = rowids.astype(np.int64).copy()
        alias_pos = np.nonzero(is_alias)[0]
        if len(alias_pos):
            start = len(self.alias_rowids)
            self.alias_rowids = np.concatenate([self.alias_rowids, rowids[alias_pos].astype(np.int64)])
            self.alias_kinds = np.concatenate(
                [self.alias_kinds, np.full(len(alias_pos), KINDS.index(kind), dtype=np.int8)])
            labels[alias_pos] = ALIAS_BASE + start + np.arange(len(alias_pos), dtype=np.int64)
        idx.add_items(vectors, labels)
        self.state[kind].live += len(labels)

    # ---- searching ------------------------------------------------------------------------
    def search(self, vector: np.ndarray, k: int, kind: str | None = None, ef: int | None = None) -> list[VectorHit]:
        """Nearest rows to a unit vector, best cosine per row, across the requested kind(s)."""
        best: dict[int, float] = {}
        for kd in ([kind] if kind else KINDS):
            idx = self.indexes.get(kd)
            live = self.state[kd].live if idx is not None else 0
            if idx is None or live <= 0:
                continue
            # over-fetch: alias vectors of one row would otherwise crowd out other rows
            n = min(live, k * 2)
            idx.set_ef(max(ef or _EF_SEARCH, n))
            try:
                labels, dists = idx.knn_query(vector.reshape(1, -1), k=n)
            except RuntimeError:  # too many deleted neighbours for a contiguous result
                labels, dists = idx.knn_query(vector.reshape(1, -1), k=max(1, n // 2))
            for lab, dist in zip(labels[0].tolist(), dists[0].tolist(), strict=True):
                rowid = lab if lab < ALIAS_BASE else int(self.alias_rowids[lab - ALIAS_BASE])
                if rowid < 0:
                    continue
                sim = 1.0 - dist
                if sim > best.get(rowid, -2.0):
                    best[rowid] = sim
        hits = sorted((VectorHit(r, s) for r, s in best.items()), key=lambda h: -h.similarity)
        return hits[:k]

    def similarities(self, vector: np.ndarray, rows: dict[int, str]) -> dict[int, float]:
        """Cosine of `vector` with the main vectors of some rows ({rowid: kind}); rows not indexed are left out."""
        out: dict[int, float] = {}
        by_kind: dict[str, list[int]] = {}
        for rowid, kind in rows.items():
            by_kind.setdefault(kind, []).append(rowid)
        for kind, ids in by_kind.items():
            idx = self.indexes.get(kind)
            if idx is None:
                continue
            for rowid in ids:
                try:
                    vec = np.asarray(idx.get_items([rowid])[0], dtype=np.float32)
                except RuntimeError:
                    continue
                out[rowid] = float(vec @ vector)
        return out

    # ---- persistence ----------------------------------------------------------------------
    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for kind, idx in self.indexes.items():
            tmp = folder / f"vectors-{kind}.hnsw.tmp"
            idx.save_index(str(tmp))
            tmp.replace(folder / f"vectors-{kind}.hnsw")
        np.save(folder / "alias_rowids.npy", self.alias_rowids)
        np.save(folder / "alias_kinds.npy", self.alias_kinds)
        meta = {"dim": self.dim, "live": {k: s.live for k, s in self.state.items()},
                "capacity": {k: i.get_max_elements() for k, i in self.indexes.items()}}
        (folder / "vectors.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")

    @classmethod
    def load(cls, folder: Path) -> VectorIndex:
        meta = json.loads((folder / "vectors.json").read_text(encoding="utf-8"))
        vi = cls(dim=int(meta["dim"]))
        for kind, live in meta["live"].items():
            idx = hnswlib.Index(space="cosine", dim=vi.dim)
            idx.load_index(str(folder / f"vectors-{kind}.hnsw"), max_elements=int(meta["capacity"][kind]))
            idx.set_ef(_EF_SEARCH)
            vi.indexes[kind] = idx
            vi.state[kind] = _KindState(live=int(live))
        vi.alias_rowids = np.load(folder / "alias_rowids.npy")
        vi.alias_kinds = np.load(folder / "alias_kinds.npy")
        return vi

    @staticmethod
    def exists(folder: Path) -> bool:
        return (folder / "vectors.json").is_file()
