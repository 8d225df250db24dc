"""The `milvus` vector store: the index's vectors in one Milvus collection, through the pymilvus client.

The same client code serves both targets: a `.db` path is Milvus Lite (pymilvus starts the embedded
`milvus-lite` engine in this process, tests and small KBs), an `http://host:19530` URI a Milvus server or
cluster. One point per embedded text, with the payload `{rowid, kind, alias}`: a kind filter and the
best-point-per-row merge give what the hnsw store gives (grounding/vector_index.py). Needs the `milvus` extra.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np

from grounding.vector_index import KINDS, VectorHit, _KindState
from grounding.vector_stores import LOCAL_MILVUS_DB
from kb_dumps.stage_errors import KBQAError

# HNSW as the hnsw store builds it (grounding/vector_index.py), so the two rank alike
_M, _EF_CONSTRUCTION, _EF_SEARCH = 16, 100, 64
_INSERT_BATCH = 2000
_IN_BATCH = 1000  # rowids per `rowid in [...]` filter


def make(folder: Path, dim: int, target: str, fresh: bool) -> MilvusVectors:
    """The registry's factory (grounding/vector_stores.py)."""
    uri = target or str(Path(folder) / LOCAL_MILVUS_DB)
    if fresh:
        return MilvusVectors.create(uri, _collection_name(folder), dim)
    saved = json.loads((Path(folder) / "vectors.json").read_text(encoding="utf-8"))
    return MilvusVectors(uri, saved["collection"], int(saved["dim"]))


def _collection_name(folder: Path) -> str:
    """One collection per store, so that several stores can share a Milvus server: the store's folder name and a
    hash of its path (a Milvus name is letters, digits and underscores)."""
    store = Path(folder).resolve().parent
    store = store.parent if re.fullmatch(r"data-\d+", store.name) else store  # kb_dumps/layout.py versions
    digest = hashlib.sha1(str(store).encode()).hexdigest()[:10]
    return f"kbqa_{re.sub(r'[^A-Za-z0-9_]', '_', store.name)[:40]}_{digest}"


def _client(uri: str):  # noqa: ANN202 - a pymilvus MilvusClient
    try:
        from pymilvus import MilvusClient
    except ImportError as e:
        raise KBQAError("the milvus vector store needs pymilvus (and milvus-lite for a .db file): "
                        "pip install 'kbqa[milvus]'", stage="ground") from e
    if "://" not in uri:
        if not uri.endswith(".db"):
            raise KBQAError(f"a Milvus Lite database is a path ending in .db, or give a server URI "
                            f"(http://host:19530); got {uri!r}", stage="usage")
        Path(uri).parent.mkdir(parents=True, exist_ok=True)
    try:
        return MilvusClient(uri)
    except Exception as e:  # pymilvus raises its own MilvusException (or a gRPC error) for an unreachable server
        raise KBQAError(f"cannot open the Milvus vector store {uri}: {e}", stage="store") from e


class MilvusVectors:
    """The `VectorBackend` of grounding/vector_stores.py over one Milvus collection."""

    def __init__(self, uri: str, collection: str, dim: int, client=None):  # noqa: ANN001
        self.uri, self.collection, self.dim = uri, collection, dim
        self.client = client or _client(uri)
        self.client.load_collection(collection)

    @classmethod
    def create(cls, uri: str, collection: str, dim: int) -> MilvusVectors:
        """A new, empty collection (an old one of that name is dropped: a fresh build)."""
        from pymilvus import DataType

        client = _client(uri)
        if client.has_collection(collection):
            client.drop_collection(collection)
        schema = client.create_schema(auto_id=True)
        schema.add_field("pk", DataType.INT64, is_primary=True)
        schema.add_field("rowid", DataType.INT64)
        schema.add_field("kind", DataType.VARCHAR, max_length=16)
        schema.add_field("alias", DataType.BOOL)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
        index = client.prepare_index_params()
        index.add_index("vector", index_type="HNSW", metric_type="COSINE",
                        params={"M": _M, "efConstruction": _EF_CONSTRUCTION})
        client.create_collection(collection, schema=schema, index_params=index)
        return cls(uri, collection, dim, client)

    # ---- building -------------------------------------------------------------------------
    def add(self, kind: str, rowids: np.ndarray, vectors: np.ndarray, is_alias: np.ndarray) -> None:
        vecs = np.asarray(vectors, dtype=np.float32)
        for start in range(0, len(rowids), _INSERT_BATCH):
            sl = slice(start, start + _INSERT_BATCH)
            self.client.insert(self.collection, [
                {"rowid": int(r), "kind": kind, "alias": bool(a), "vector": v}
                for r, a, v in zip(rowids[sl].tolist(), is_alias[sl].tolist(), vecs[sl].tolist(), strict=True)])

    def remove_rows(self, rowids: np.ndarray) -> None:
        ids = [int(r) for r in np.asarray(rowids).tolist()]
        for start in range(0, len(ids), _IN_BATCH):
            self.client.delete(self.collection, filter=f"rowid in {ids[start:start + _IN_BATCH]}")

    # ---- searching ------------------------------------------------------------------------
    def search(self, vector: np.ndarray, k: int, kind: str | None = None, ef: int | None = None) -> list[VectorHit]:
        n = k * 2  # over-fetch: alias points of one row would otherwise crowd out other rows
        res = self.client.search(
            self.collection, data=[np.asarray(vector, dtype=np.float32).tolist()], limit=n,
            filter=f'kind == "{kind}"' if kind else "", output_fields=["rowid"],
            search_params={"metric_type": "COSINE", "params": {"ef": max(ef or _EF_SEARCH, n)}})
        best: dict[int, float] = {}
        for hit in res[0]:
            rowid, sim = int(hit["entity"]["rowid"]), float(hit["distance"])  # COSINE: distance is the similarity
            if sim > best.get(rowid, -2.0):
                best[rowid] = sim
        hits = sorted((VectorHit(r, s) for r, s in best.items()), key=lambda h: -h.similarity)
        return hits[:k]

    def similarities(self, vector: np.ndarray, rows: dict[int, str]) -> dict[int, float]:
        """Cosine with each row's main vector (the `label: description` point), read back from the collection."""
        ids = list(rows)
        out: dict[int, float] = {}
        q = np.asarray(vector, dtype=np.float32)
        for start in range(0, len(ids), _IN_BATCH):
            got = self.client.query(self.collection, filter=f"rowid in {ids[start:start + _IN_BATCH]} and alias == false",
                                    output_fields=["rowid", "vector"])
            for rec in got:
                out[int(rec["rowid"])] = float(np.asarray(rec["vector"], dtype=np.float32) @ q)
        return out

    @property
    def state(self) -> dict[str, _KindState]:
        out = {}
        for kind in KINDS:
            got = self.client.query(self.collection, filter=f'kind == "{kind}"', output_fields=["count(*)"])
            n = int(got[0]["count(*)"]) if got else 0
            if n:
                out[kind] = _KindState(live=n)
        return out

    # ---- persistence ----------------------------------------------------------------------
    def save(self, folder: Path) -> None:
        """Flush the collection and write `vectors.json` naming it (the vectors stay in Milvus)."""
        self.client.flush(self.collection)
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        meta = {"backend": "milvus", "uri": self.uri, "collection": self.collection, "dim": self.dim,
                "live": {k: s.live for k, s in self.state.items()}}
        tmp = folder / "vectors.json.tmp"
        tmp.write_text(json.dumps(meta, indent=1), encoding="utf-8")
        tmp.replace(folder / "vectors.json")

    def close(self) -> None:
        self.client.close()
