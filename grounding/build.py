"""Build or update the grounding index of a store (`kbqa index`): vectors incrementally, lexicon in full."""

from __future__ import annotations

import json
import logging
import resource
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from grounding.embedder import (
    DEFAULT_MODEL,
    Embedder,
    canonical_name,
    embedder_fingerprint,
    get_embedder,
    row_texts,
)
from grounding.lexical_build import write_lexicon
from grounding.lexical_index import LexicalIndex
from grounding.vector_index import KINDS, VectorIndex
from grounding.vector_stores import (
    LOCAL_MILVUS_DB,
    VectorBackend,
    canonical_spec,
    open_vectors,
    start_vectors,
)
from kb_dumps.dict_records import DictRecord
from kb_dumps.ingest import store_lock
from kb_dumps.label_memory import LabelMemory, LabelRow
from kb_dumps.layout import StoreLayout
from kb_dumps.stage_errors import KBQAError

# 2: the embedder's name and fingerprint in meta.json (an index is only searched with its own embedder)
INDEX_FORMAT = 2
# A first index of a label memory this large gets the compact vector store (int8 lists on disk, bounded memory)
# unless a store is asked for: hnsw holds ~1.3 KB a vector resident (BENCHMARKS.md "Grounding at scale").
AUTO_COMPACT_ROWS = 1_000_000
log = logging.getLogger(__name__)


def index_dir(store_dir: str | Path) -> Path:
    """`<store>/current/index` (or `<store>/index` for a bare store directory); see kb_dumps/layout.py."""
    return StoreLayout.of(store_dir).index_dir


def open_memory(store_dir: str | Path) -> LabelMemory:
    path = StoreLayout.of(store_dir).labels
    if not path.is_file():
        raise KBQAError(f"no label memory at {path}; build the store first with `kbqa ingest SOURCE --store "
                        f"{store_dir}`", stage="ground", file=str(path))
    return LabelMemory(path, readonly=True)


def read_meta(store_dir: str | Path) -> dict | None:
    path = index_dir(store_dir) / "meta.json"
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


@dataclass
class IndexStats(DictRecord):
    """What one `kbqa index` run did, as plain data."""

    store: str
    model: str
    generation: int  # label-memory generation the index now reflects
    rows: int  # rows in the label memory
    names: int  # labels + aliases in the lexical index
    vectors: int  # live vectors in the vector index
    embedded_rows: int  # rows (re-)embedded by this run
    embedded_texts: int
    rebuilt: bool
    seconds: float
    rows_per_s: float
    peak_rss_mb: float


def _progress(total: int, show: bool | None, desc: str):  # noqa: ANN202 - a tqdm bar or a no-op
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=" rows", unit_scale=True,
                disable=not (sys.stderr.isatty() if show is None else show))


def _chunks(rows: Iterator[LabelRow], size: int) -> Iterator[list[LabelRow]]:
    chunk: list[LabelRow] = []
    for r in rows:
        chunk.append(r)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def embed_rows(vi: VectorBackend, rows: list[LabelRow], embedder: Embedder,
               batch_size: int | None = None) -> int:
    """Embed `label: description` and each `alias: description` of some rows into the vector index."""
    texts: list[str] = []
    rowids: list[int] = []
    alias: list[bool] = []
    kinds: list[str] = []
    for r in rows:
        for i, t in enumerate(row_texts(r.label, r.description, r.aliases)):
            texts.append(t)
            rowids.append(int(r.rowid or 0))
            alias.append(i > 0 or not r.label)
            kinds.append(r.kind if r.kind in KINDS else "entity")
    if not texts:
        return 0
    # None: the embedder's own batch size (64 texts for MiniLM, thousands for the static model)
    vecs = embedder.encode(texts, progress=False) if batch_size is None else \
        embedder.encode(texts, batch_size=batch_size, progress=False)
    rid, al, kd = np.asarray(rowids, dtype=np.int64), np.asarray(alias, dtype=bool), np.asarray(kinds)
    for kind in KINDS:
        m = kd == kind
        if m.any():
            vi.add(kind, rid[m], vecs[m], al[m])
    return len(texts)


def build_lexical(memory: LabelMemory) -> LexicalIndex:
    """The lexical index in memory (a small store's, e.g. for the mention linker)."""
    return LexicalIndex.build([(int(r.rowid or 0), r.kind, r.label, r.aliases) for r in memory.iter_rows()])


def write_lexical(memory: LabelMemory, folder: Path) -> int:
    """The lexical index written into `folder` from the streamed label memory, in bounded memory; its name count."""
    return write_lexicon(((int(r.rowid or 0), r.kind, r.label, r.aliases) for r in memory.iter_rows()), folder)


def _swap_in(tmp: Path, final: Path) -> None:
    """Replace a folder atomically enough: readers memory-map the old files, so never rewrite them in place."""
    old = final.with_name(final.name + ".old")
    if old.exists():
        shutil.rmtree(old)
    if final.exists():
        final.rename(old)
    tmp.rename(final)
    if old.exists():
        shutil.rmtree(old, ignore_errors=True)


def build_index(store_dir: str | Path, *, model: str | None = None, rebuild: bool = False,
                batch_size: int | None = None,
                chunk_rows: int = 4096, progress: bool | None = None,
                on_chunk: Callable[[int], None] | None = None, vector_store: str | None = None) -> IndexStats:
    """Build `<store>/index/`, or bring it up to date: rows whose generation is newer than the index's
    are re-embedded (their old vectors marked deleted); the lexical index is rebuilt (it is cheap).

    `vector_store`: where the vectors go, a spec of grounding/vector_stores.py (`hnsw`, `compact`, `milvus`,
    `milvus:PATH.db`, `milvus:http://host:19530`); None = as the existing index is (for a new one: hnsw, or
    compact from `AUTO_COMPACT_ROWS` rows); a different one rebuilds."""
    open_memory(store_dir).close()  # a clear error for a missing store before any lock file is made
    # the writer lock: `ingest --append` copies the index into its new version and must not see half of it
    with store_lock(StoreLayout.of(store_dir).root):
        return _build(store_dir, canonical_name(model or DEFAULT_MODEL), rebuild, batch_size, chunk_rows, progress, on_chunk,
                      vector_store)


def _build(store_dir: str | Path, model: str, rebuild: bool, batch_size: int | None, chunk_rows: int,
           progress: bool | None, on_chunk: Callable[[int], None] | None, vector_store: str | None) -> IndexStats:
    t0 = time.perf_counter()
    folder = index_dir(store_dir)
    memory = open_memory(store_dir)
    try:
        meta = read_meta(store_dir)
        mem_gen = memory.generation
        store_now = canonical_spec((meta or {}).get("vector_store"))
        spec = store_now if vector_store is None else canonical_spec(vector_store)
        if vector_store is None and meta is None and len(memory) >= AUTO_COMPACT_ROWS:
            spec = "compact"  # a first index of a large memory: bounded memory (grounding/README.md "Vector stores")
        fingerprint = embedder_fingerprint(model)
        same_embedder = meta is not None and (meta.get("embedder"), meta.get("fingerprint")) == (model, fingerprint)
        fresh = (rebuild or meta is None or meta.get("format") != INDEX_FORMAT or not same_embedder
                 or not VectorIndex.exists(folder) or spec != store_now or int(meta.get("shard_rows") or 0) > 0)
        if meta is not None and not rebuild and not same_embedder:
            log.warning("the index was built with %s (%s); rebuilding it with %s (%s)", meta.get("embedder", meta.get(
                "model")), meta.get("fingerprint", "no fingerprint"), model, fingerprint)
        since = -1 if fresh else int(meta["generation"])  # type: ignore[index]
        total = memory.count_since(since)
        if not fresh and total == 0 and mem_gen == since:
            return IndexStats(str(store_dir), model, since, len(memory), int(meta.get("names", 0)),  # type: ignore[union-attr]
                              int(meta.get("vectors", 0)), 0, 0, False, time.perf_counter() - t0, 0.0,  # type: ignore[union-attr]
                              _peak_mb())
        embedder = get_embedder(model)
        folder.mkdir(parents=True, exist_ok=True)
        vi = start_vectors(folder, embedder.dim, spec) if fresh else open_vectors(folder, meta)
        embedded_texts = 0
        with _progress(total, progress, "embedding") as bar:
            for chunk in _chunks(memory.iter_rows(since), chunk_rows):
                if not fresh:
                    vi.remove_rows(np.asarray([r.rowid for r in chunk], dtype=np.int64))
                embedded_texts += embed_rows(vi, chunk, embedder, batch_size)
                bar.update(len(chunk))
                if on_chunk:
                    on_chunk(len(chunk))
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / "lexical.tmp"
        if tmp.exists():
            shutil.rmtree(tmp)
        names = write_lexical(memory, tmp)
        _swap_in(tmp, folder / "lexical")
        vi.save(folder)
        _remove_other_layout(folder, spec)
        vectors = sum(s.live for s in vi.state.values())
        new_meta = {"format": INDEX_FORMAT, "model": model, "embedder": model, "fingerprint": fingerprint,
                    "dim": vi.dim, "generation": mem_gen,
                    "rows": len(memory), "names": names, "vectors": vectors, "vector_store": spec,
                    "built_at": time.time()}
        tmp_meta = folder / "meta.json.tmp"
        tmp_meta.write_text(json.dumps(new_meta, indent=1), encoding="utf-8")
        tmp_meta.replace(folder / "meta.json")  # written last: an interrupted build is redone next time
        secs = time.perf_counter() - t0
        return IndexStats(str(store_dir), model, mem_gen, len(memory), names, vectors, total, embedded_texts,
                          fresh, secs, total / secs if secs else 0.0, _peak_mb())
    finally:
        memory.close()


def _remove_other_layout(folder: Path, spec: str) -> None:
    """After a switch of vector store, the files of the other one are stale (and a sharded index's, a layout
    no longer written)."""
    shutil.rmtree(folder / "shards", ignore_errors=True)
    if not spec.startswith("hnsw"):
        for p in [*folder.glob("vectors-*.hnsw"), folder / "alias_rowids.npy", folder / "alias_kinds.npy"]:
            p.unlink(missing_ok=True)
    if spec != "compact":
        for p in folder.glob("compact-*"):
            p.unlink(missing_ok=True)
    if spec != "milvus":
        shutil.rmtree(folder / LOCAL_MILVUS_DB, ignore_errors=True)


def _peak_mb() -> float:
    # ru_maxrss is in KiB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
