"""A sharded vector index: the label memory's vectors in several hnswlib indexes, searched together.

Why: one HNSW index must fit in memory whole (vectors + graph, ~2 KB per 384-d vector, BENCHMARKS.md
"Remote endpoints"), so a KB of 100M labels cannot be one index on one machine. Here each shard holds
the vectors of at most `shard_rows` label-memory rows (a row's aliases stay with it), in its own
folder `index/shards/NNN/` with the same files as an unsharded index (grounding/vector_index.py).
A search asks every shard for its top hits and merges them by similarity (best per row).

Two ways to hold it, a memory/speed trade-off:
- resident (default): every shard loaded once; a search costs one HNSW search per shard.
- not resident (`resident=False`): one shard in memory at a time, loaded from disk for each search;
  memory is one shard, but every search reads every shard file (seconds per search at 1M rows a
  shard): for batch jobs on a small machine, not for interactive use.
Building never holds more than the shard being filled: a full shard is written and dropped.
The interface (`add`, `remove_rows`, `search`, `similarities`, `save`, `state`) is `VectorIndex`'s, so
a vector database can stand in for either by implementing the same five methods (grounding/README.md).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Protocol

import numpy as np

from grounding.vector_index import VectorHit, VectorIndex, _KindState

SHARDS_DIR = "shards"


class VectorBackend(Protocol):
    """What grounding needs from a vector index: `VectorIndex` (one hnswlib index per kind),
    `ShardedVectorIndex`, or an adapter to a vector database (grounding/README.md "Vector database")."""

    dim: int

    @property
    def state(self) -> dict[str, _KindState]: ...  # live vectors per kind

    def add(self, kind: str, rowids: np.ndarray, vectors: np.ndarray, is_alias: np.ndarray) -> None: ...

    def remove_rows(self, rowids: np.ndarray) -> None: ...

    def search(self, vector: np.ndarray, k: int, kind: str | None = None,
               ef: int | None = None) -> list[VectorHit]: ...

    def similarities(self, vector: np.ndarray, rows: dict[int, str]) -> dict[int, float]: ...

    def save(self, folder: Path) -> None: ...


class ShardedVectorIndex:
    """Shards of at most `shard_rows` rows each, under `<folder>/shards/`."""

    def __init__(self, dim: int, shard_rows: int, folder: Path, resident: bool = True):
        if shard_rows < 1:
            raise ValueError("shard_rows must be at least 1")
        self.dim, self.shard_rows, self.folder, self.resident = dim, shard_rows, Path(folder), resident
        self.shards: list[dict] = []  # per shard: {"name", "rows", "live": {kind: n}}
        self._loaded: dict[int, VectorIndex] = {}
        self._dirty: set[int] = set()

    # ---- shards on disk and in memory ------------------------------------------------------
    def _path(self, i: int) -> Path:
        return self.folder / SHARDS_DIR / self.shards[i]["name"]

    def _get(self, i: int) -> VectorIndex:
        vi = self._loaded.get(i)
        if vi is None:
            path = self._path(i)
            vi = VectorIndex.load(path) if VectorIndex.exists(path) else VectorIndex(dim=self.dim)
            self._loaded[i] = vi
        return vi

    def _release(self, i: int) -> None:
        """Write a changed shard and, when not resident, drop it from memory."""
        vi = self._loaded.get(i)
        if vi is None:
            return
        if i in self._dirty:
            vi.save(self._path(i))
            self.shards[i]["live"] = {k: s.live for k, s in vi.state.items()}
            self._dirty.discard(i)
        if not self.resident:
            del self._loaded[i]

    def _new_shard(self) -> int:
        self.shards.append({"name": f"{len(self.shards):03d}", "rows": 0, "live": {}})
        return len(self.shards) - 1

    # ---- the VectorIndex interface -------------------------------------------------------------
    @property
    def state(self) -> dict[str, _KindState]:
        live: dict[str, int] = {}
        for i, meta in enumerate(self.shards):
            counts = {k: s.live for k, s in self._loaded[i].state.items()} if i in self._loaded else meta["live"]
            for kind, n in counts.items():
                live[kind] = live.get(kind, 0) + int(n)
        return {k: _KindState(live=n) for k, n in live.items()}

    def add(self, kind: str, rowids: np.ndarray, vectors: np.ndarray, is_alias: np.ndarray) -> None:
        """Add vectors to the last shard, starting a new one when it has `shard_rows` rows; the
        vectors of one row (main and aliases) never straddle two shards."""
        if not len(rowids):
            return
        _, first = np.unique(rowids, return_index=True)
        order = rowids[np.sort(first)]  # distinct rows in arrival order
        pos = 0
        while pos < len(order):
            i = len(self.shards) - 1 if self.shards and self.shards[-1]["rows"] < self.shard_rows else -1
            if i < 0:
                if self.shards:
                    self._release(len(self.shards) - 1)
                i = self._new_shard()
            take = order[pos:pos + self.shard_rows - self.shards[i]["rows"]]
            m = np.isin(rowids, take)
            self._get(i).add(kind, rowids[m], vectors[m], is_alias[m])
            self.shards[i]["rows"] += len(take)
            self._dirty.add(i)
            pos += len(take)

    def remove_rows(self, rowids: np.ndarray) -> None:
        if not len(rowids):
            return
        for i in range(len(self.shards)):
            self._get(i).remove_rows(rowids)
            self._dirty.add(i)
            if i != len(self.shards) - 1:
                self._release(i)

    def search(self, vector: np.ndarray, k: int, kind: str | None = None, ef: int | None = None) -> list[VectorHit]:
        best: dict[int, float] = {}
        for i in range(len(self.shards)):
            for h in self._get(i).search(vector, k, kind, ef):
                if h.similarity > best.get(h.rowid, -2.0):
                    best[h.rowid] = h.similarity
            if not self.resident and i not in self._dirty:
                self._loaded.pop(i, None)
        hits = sorted((VectorHit(r, s) for r, s in best.items()), key=lambda h: -h.similarity)
        return hits[:k]

    def similarities(self, vector: np.ndarray, rows: dict[int, str]) -> dict[int, float]:
        out: dict[int, float] = {}
        for i in range(len(self.shards)):
            missing = {r: kd for r, kd in rows.items() if r not in out}
            if not missing:
                break
            out.update(self._get(i).similarities(vector, missing))
            if not self.resident and i not in self._dirty:
                self._loaded.pop(i, None)
        return out

    # ---- persistence ----------------------------------------------------------------------
    def save(self, folder: Path) -> None:
        if Path(folder) != self.folder:
            raise ValueError("a sharded index is saved where its shards are written")
        for i in range(len(self.shards)):
            self._release(i)
        meta = {"dim": self.dim, "shard_rows": self.shard_rows, "shards": self.shards}
        tmp = self.folder / "vectors.json.tmp"
        tmp.write_text(json.dumps(meta, indent=1), encoding="utf-8")
        tmp.replace(self.folder / "vectors.json")

    @classmethod
    def load(cls, folder: Path, resident: bool = True) -> ShardedVectorIndex:
        meta = json.loads((Path(folder) / "vectors.json").read_text(encoding="utf-8"))
        vi = cls(int(meta["dim"]), int(meta["shard_rows"]), Path(folder), resident)
        vi.shards = list(meta["shards"])
        if resident:
            for i in range(len(vi.shards)):
                vi._get(i)
        return vi

    @staticmethod
    def start(folder: Path, dim: int, shard_rows: int, resident: bool = False) -> ShardedVectorIndex:
        """A new, empty sharded index in `folder` (old shards there are removed)."""
        shutil.rmtree(Path(folder) / SHARDS_DIR, ignore_errors=True)
        return ShardedVectorIndex(dim, shard_rows, Path(folder), resident)


def load_vectors(folder: Path, resident: bool = True) -> VectorBackend:
    """The vector index saved in `folder`, sharded or not (`resident` applies to a sharded one). The one
    place that chooses a backend from `vectors.json`: a vector-database adapter is dispatched here."""
    meta = json.loads((Path(folder) / "vectors.json").read_text(encoding="utf-8"))
    if "shards" in meta:
        return ShardedVectorIndex.load(folder, resident)
    return VectorIndex.load(folder)
