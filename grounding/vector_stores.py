"""Vector stores: where a grounding index keeps its vectors. `VECTOR_STORES` is the one list.

A store is named by a spec, `NAME` or `NAME:TARGET` (`kbqa index --vector-store`): `hnsw` (the default:
hnswlib files in the index folder, grounding/vector_index.py), `compact` (int8 inverted lists in the index
folder, read per query: bounded memory for large KBs, grounding/vector_compact.py), `milvus` (a Milvus Lite database in the index
folder), `milvus:PATH.db` (a Milvus Lite database there) or `milvus:http://host:19530` (a Milvus server or
cluster; grounding/vector_milvus.py). `meta.json` records the spec and `vectors.json` what the store needs to
reopen it, so a query process opens the store the index was built with, and imports pymilvus only then.

A factory is `make(folder, dim, target, fresh) -> VectorBackend`: `fresh` starts an empty store (a rebuild),
otherwise the one saved in `folder` is opened for searching or for an incremental update.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Protocol

import numpy as np

from grounding.vector_index import VectorHit, VectorIndex, _KindState
from kb_dumps.registry import Registry
from kb_dumps.stage_errors import KBQAError

DEFAULT_VECTOR_STORE = "hnsw"
LOCAL_MILVUS_DB = "vectors.milvus.db"  # `milvus` with no target: a Milvus Lite database in the index folder


class VectorBackend(Protocol):
    """What grounding needs from a vector store; rowids (label-memory rows) are the join key."""

    dim: int

    @property
    def state(self) -> dict[str, _KindState]: ...  # live vectors per kind

    def add(self, kind: str, rowids: np.ndarray, vectors: np.ndarray, is_alias: np.ndarray) -> None: ...

    def remove_rows(self, rowids: np.ndarray) -> None: ...

    def search(self, vector: np.ndarray, k: int, kind: str | None = None,
               ef: int | None = None) -> list[VectorHit]: ...  # best cosine per row, best first

    def similarities(self, vector: np.ndarray, rows: dict[int, str]) -> dict[int, float]: ...

    def save(self, folder: Path) -> None: ...


def _hnsw(folder: Path, dim: int, target: str, fresh: bool) -> VectorIndex:
    if target:
        raise KBQAError(f"the hnsw vector store lives in the index folder; it takes no target (got {target!r})",
                        stage="usage")
    return VectorIndex(dim=dim) if fresh else VectorIndex.load(folder)


VECTOR_STORES = Registry("vector store")
VECTOR_STORES.add("hnsw", "hnswlib files in the index folder, in memory while searching (the default; up to a few "
                  "million vectors on one machine)", _hnsw)
VECTOR_STORES.add("compact", "int8 vectors in inverted lists in the index folder, read per query (bounded memory: "
                  "~270 bytes a vector on disk, next to nothing resident; millions to tens of millions of labels)",
                  "grounding.vector_compact:make")
VECTOR_STORES.add("milvus", "Milvus: `milvus` or `milvus:PATH.db` a Milvus Lite database (embedded, small KBs and "
                  "tests), `milvus:http://host:19530` a Milvus server or cluster (large KBs)",
                  "grounding.vector_milvus:make")


def parse_spec(spec: str | None) -> tuple[str, str]:
    """`NAME[:TARGET]` → (name, target); a URI target keeps its own colons. An unknown name is a usage error."""
    name, _, target = (spec or DEFAULT_VECTOR_STORE).strip().partition(":")
    VECTOR_STORES.get(name)
    return name, target.strip()


def canonical_spec(spec: str | None) -> str:
    """The spec as the meta records it: a relative Milvus Lite path made absolute (the index may be read from
    another working directory)."""
    name, target = parse_spec(spec)
    if target and "://" not in target:
        target = str(Path(target).expanduser().resolve())
    return f"{name}:{target}" if target else name


def start_vectors(folder: Path, dim: int, spec: str | None) -> VectorBackend:
    """An empty vector store for a fresh build of the index in `folder`."""
    name, target = parse_spec(spec)
    return VECTOR_STORES.get(name).make(Path(folder), dim, target, True)


def open_vectors(folder: Path, meta: dict | None = None) -> VectorBackend:
    """The vector store of the index in `folder`, as its meta names it (an index without the key: hnsw)."""
    meta = meta if meta is not None else json.loads((Path(folder) / "meta.json").read_text(encoding="utf-8"))
    saved = json.loads((Path(folder) / "vectors.json").read_text(encoding="utf-8"))
    if "shards" in saved:  # written by the sharded layout that `kbqa index --shard-rows` made until 2026-12
        raise KBQAError(f"the grounding index in {folder} is sharded, a layout no longer read; rebuild it: "
                        "`kbqa index --store DIR --rebuild` (large KBs: `--vector-store milvus:URI`)", stage="ground")
    name, target = parse_spec(meta.get("vector_store"))
    return VECTOR_STORES.get(name).make(Path(folder), int(saved["dim"]), target, False)
