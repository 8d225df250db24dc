"""The `compact` vector store: int8 vectors on disk in inverted lists (IVF), read per query; bounded memory.

Why: hnswlib keeps float32 vectors and its graph resident (~1.3 KB a 256-d vector: 13 GB for 10M labels). Here a
vector is 256 bytes of int8 plus a float32 scale (cosine = scale · (int8 · query)); vectors are clustered by a
spherical k-means into lists of ~`LIST_ROWS` and stored list by list in one file per kind, so a query reads the
lists whose centroids are nearest (`SCAN_ROWS` vectors, a few `pread`s: nothing stays resident) and a build
holds only the per-vector ids and scales (13 bytes a vector) while the vectors wait in a temporary file.

Files per kind in the index folder (`compact-<kind>-<segment>.*`, segment `main` and `tail`):
  .i8            the vectors, int8, list by list          .scales.npy   float32 scale per vector
  .rowids.npy    label-memory rowid per vector (aliases: their row's; -1 once removed)
  .lists.npy     list start offsets (nlist + 1)           .centroids.npy  unit centroids (nlist x dim)
`main` is clustered at a fresh build; rows added by an incremental build (`ingest --append`) go to `tail`, one
list searched whole, until `kbqa index --rebuild` clusters them in.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import hnswlib
import numpy as np

from grounding.vector_index import KINDS, VectorHit, _KindState

log = logging.getLogger(__name__)

LIST_ROWS = 1024  # vectors per inverted list (on average)
FLAT_ROWS = 32_768  # up to this many vectors a segment is one list, searched whole
SCAN_ROWS = 16_384  # vectors read per query and kind: lists nearest first until this many
MIN_PROBE = 8  # lists read per query at least
TRAIN_ROWS = 64  # k-means sample: this many vectors per list (at most `TRAIN_CAP`)
TRAIN_CAP = 262_144
KMEANS_ITERS = 8
CHUNK = 65_536  # vectors per sequential read while clustering and sorting
SORT_BLOCK = 1 << 20  # vectors placed in memory per pass of the list sort (256 MB at 256-d)


def quantize(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 codes and a float32 scale per vector (symmetric: the largest |component| maps to 127)."""
    v = np.asarray(vectors, dtype=np.float32)
    peak = np.abs(v).max(axis=1)
    peak[peak == 0] = 1.0
    scale = (peak / 127.0).astype(np.float32)
    return np.rint(v / scale[:, None]).astype(np.int8), scale


def _dequantize(codes: np.ndarray, scales: np.ndarray) -> np.ndarray:
    return codes.astype(np.float32) * scales[:, None]


def _unit(x: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(x, axis=1, keepdims=True)
    n[n == 0] = 1.0
    return (x / n).astype(np.float32)


def _read_rows(f, start: int, count: int, dim: int) -> np.ndarray:  # noqa: ANN001 - an open binary file
    """Rows [start, start+count) of an int8 file, read (never memory-mapped: mapped pages would count as resident)."""
    f.seek(start * dim)
    return np.frombuffer(f.read(count * dim), dtype=np.int8).reshape(-1, dim)


@dataclass
class _Segment:
    """One kind's vectors of one segment, opened for searching: ids, scales and lists mapped, vectors read per list."""

    path: Path
    dim: int
    rowids: np.ndarray
    scales: np.ndarray
    lists: np.ndarray
    centroids: np.ndarray
    fd: int = -1
    dirty: bool = False  # rowids changed (rows removed): `save` writes them

    @classmethod
    def open(cls, stem: Path, dim: int) -> _Segment:
        # all mapped read-only: `remove_rows` works on a private copy of the rowids, written by `save`
        seg = cls(stem.with_suffix(".i8"), dim, np.load(f"{stem}.rowids.npy", mmap_mode="r"),
                  np.load(f"{stem}.scales.npy", mmap_mode="r"), np.load(f"{stem}.lists.npy"),
                  np.load(f"{stem}.centroids.npy"))
        seg.fd = os.open(seg.path, os.O_RDONLY)
        return seg

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def _read(self, start: int, end: int) -> np.ndarray:
        data = os.pread(self.fd, (end - start) * self.dim, start * self.dim)
        return np.frombuffer(data, dtype=np.int8).reshape(-1, self.dim)

    def search(self, q: np.ndarray, scan_rows: int, keep: int) -> tuple[np.ndarray, np.ndarray]:
        """(rowids, cosines) of the best `keep` vectors in the lists nearest to `q` (about `scan_rows` read)."""
        nlist = len(self.lists) - 1
        if nlist <= 0 or self.lists[-1] == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if nlist == 1:
            probe = [0]
        else:
            sims = np.einsum("ij,j->i", self.centroids, q)
            # the nearest lists until `scan_rows` vectors: a partial sort of the few hundred nearest is enough
            few = min(nlist, max(4 * MIN_PROBE, 8 * scan_rows // LIST_ROWS))
            near = np.argpartition(-sims, few - 1)[:few] if few < nlist else np.arange(nlist)
            near = near[np.argsort(-sims[near], kind="stable")]
            sizes = np.diff(self.lists)[near]
            n = max(MIN_PROBE, int(np.searchsorted(np.cumsum(sizes), scan_rows)) + 1)
            probe = np.sort(near[:n]).tolist()  # file order: neighbouring lists read in one go
        rowids, sims = [], []
        # neighbouring lists are read together (one pread, one product)
        runs: list[list[int]] = []
        for li in probe:
            a, b = int(self.lists[li]), int(self.lists[li + 1])
            if runs and runs[-1][1] == a and b - runs[-1][0] <= CHUNK:
                runs[-1][1] = b
            else:
                runs.append([a, b])
        for a, b in runs:
            for lo in range(a, b, CHUNK):  # a long list (a tail, an exhaustive scan) in pieces: bounded memory
                hi = min(lo + CHUNK, b)
                # einsum on the int8 codes: no float copy, and no BLAS threads (they only wait on a busy machine)
                sims.append(np.einsum("ij,j->i", self._read(lo, hi), q) * self.scales[lo:hi])
                rowids.append(np.asarray(self.rowids[lo:hi]))
        if not rowids:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        r, s = np.concatenate(rowids), np.concatenate(sims)
        if len(s) > keep:  # only the best few can be among the best k rows (a row has a few vectors at most)
            top = np.argpartition(-s, keep)[:keep]
            r, s = r[top], s[top]
        return r, s

    def vector_of(self, rowid: int) -> np.ndarray | None:
        """The first vector of a row (its label vector: added before its aliases'), found by a scan: for a tail."""
        pos = np.nonzero(np.asarray(self.rowids) == rowid)[0]
        if not len(pos):
            return None
        p = int(pos[0])
        return self._read(p, p + 1)[0].astype(np.float32) * float(self.scales[p])


class CompactVectors:
    """The VectorBackend of grounding/vector_stores.py over int8 inverted lists; see the module doc."""

    def __init__(self, folder: Path, dim: int):
        self.folder = Path(folder)
        self.dim = dim
        self._state: dict[str, _KindState] = {}
        self.segments: dict[str, dict[str, _Segment]] = {}  # kind -> segment name -> opened segment
        self.main_index: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # kind -> (sorted main rowids, positions)
        # vectors added since the store was started or opened: kind -> temporary int8 file, rowids, scales
        self._pending: dict[str, tuple[Path, list[np.ndarray], list[np.ndarray]]] = {}
        self._fresh = True
        self.scan_rows = SCAN_ROWS

    @property
    def state(self) -> dict[str, _KindState]:
        return self._state

    # ---- opening ----------------------------------------------------------------------------
    @classmethod
    def open(cls, folder: Path) -> CompactVectors:
        saved = json.loads((Path(folder) / "vectors.json").read_text(encoding="utf-8"))
        cv = cls(folder, int(saved["dim"]))
        cv._fresh = False
        for kind, live in saved["live"].items():
            cv._state[kind] = _KindState(live=int(live))
            for seg in saved["segments"].get(kind, []):
                cv.segments.setdefault(kind, {})[seg] = _Segment.open(cv._stem(kind, seg), cv.dim)
            stem = cv._stem(kind, "main")
            if "main" in cv.segments.get(kind, {}):
                cv.main_index[kind] = (np.load(f"{stem}.main_rowids.npy", mmap_mode="r"),
                                       np.load(f"{stem}.main_pos.npy", mmap_mode="r"))
        return cv

    def _stem(self, kind: str, segment: str) -> Path:
        return self.folder / f"compact-{kind}-{segment}"

    def close(self) -> None:
        for segs in self.segments.values():
            for seg in segs.values():
                seg.close()

    # ---- building ---------------------------------------------------------------------------
    def add(self, kind: str, rowids: np.ndarray, vectors: np.ndarray, is_alias: np.ndarray) -> None:
        """Append vectors of one kind to a temporary file (clustered and sorted into lists by `save`)."""
        del is_alias  # an alias vector carries its row's rowid; the row's label vector comes first
        if not len(rowids):
            return
        if kind not in self._pending:
            fd, name = tempfile.mkstemp(prefix=f"compact-{kind}-", suffix=".i8.tmp", dir=self.folder)
            os.close(fd)
            self._pending[kind] = (Path(name), [], [])
        path, ids, scales = self._pending[kind]
        codes, scale = quantize(vectors)
        with open(path, "ab") as f:
            f.write(codes.tobytes())
        ids.append(np.asarray(rowids, dtype=np.int64))
        scales.append(scale)
        self._state.setdefault(kind, _KindState()).live += len(rowids)

    def remove_rows(self, rowids: np.ndarray) -> None:
        """Mark every vector of these rows removed (rowid -1) in the saved segments (before their new vectors)."""
        if not len(rowids):
            return
        for kind, segs in self.segments.items():
            for seg in segs.values():
                gone = np.isin(seg.rowids, rowids)
                n = int(gone.sum())
                if n:
                    seg.rowids = np.array(seg.rowids)  # a private copy, saved by `save`
                    seg.rowids[gone] = -1
                    seg.dirty = True
                    self._state[kind].live -= n

    def save(self, folder: Path) -> None:
        """Cluster and write what was added: the `main` segment at a fresh build, else appended to `tail`. Each
        file is written aside and renamed over the old one (a query process may have the old one open)."""
        folder = Path(folder)
        for kind in KINDS:
            segs = self.segments.get(kind, {})
            pending = self._pending.pop(kind, None)
            if pending is not None:
                path, ids, scales = pending
                rowids, scale = np.concatenate(ids), np.concatenate(scales)
                if self._fresh:
                    self._write_main(kind, path, rowids, scale)
                else:
                    self._append_tail(kind, segs.pop("tail", None), path, rowids, scale)
                path.unlink(missing_ok=True)
            for name, seg in segs.items():  # removals in segments not rewritten above
                if seg.dirty:
                    _save(f"{self._stem(kind, name)}.rowids.npy", seg.rowids)
                    seg.dirty = False
        if self._fresh:  # a rebuild: what an older index left (tails, kinds now empty) is stale
            for kind in KINDS:
                for seg in ("main", "tail"):
                    if seg == "tail" or kind not in self._state:
                        for p in folder.glob(f"compact-{kind}-{seg}.*"):
                            p.unlink(missing_ok=True)
        saved = {"dim": self.dim, "layout": "compact-ivf-int8", "live": {}, "segments": {}, "lists": {}}
        for kind in KINDS:
            present = [s for s in ("main", "tail") if Path(f"{self._stem(kind, s)}.rowids.npy").is_file()]
            if present:
                saved["live"][kind] = self._state[kind].live if kind in self._state else 0
                saved["segments"][kind] = present
                saved["lists"][kind] = (len(np.load(f"{self._stem(kind, 'main')}.lists.npy")) - 1
                                        if "main" in present else 0)
        _replace_text(folder / "vectors.json", json.dumps(saved, indent=1))

    def _write_main(self, kind: str, tmp: Path, rowids: np.ndarray, scales: np.ndarray) -> None:
        n = len(rowids)
        centroids = self._train(tmp, scales, n)
        assign = self._assign(tmp, scales, n, centroids)
        order = np.argsort(assign, kind="stable")
        lists = np.zeros(len(centroids) + 1, dtype=np.int64)
        np.cumsum(np.bincount(assign, minlength=len(centroids)), out=lists[1:])
        dest = np.empty(n, dtype=np.int64)
        dest[order] = np.arange(n, dtype=np.int64)
        del order
        stem = self._stem(kind, "main")
        out_path = stem.with_suffix(".i8.new")
        # place the vectors list by list: each pass reads the temporary file in order and fills one block
        with open(tmp, "rb") as src, open(out_path, "wb") as out:
            for lo in range(0, n, SORT_BLOCK):
                hi = min(lo + SORT_BLOCK, n)
                block = np.empty((hi - lo, self.dim), dtype=np.int8)
                for start in range(0, n, CHUNK):
                    d = dest[start:start + CHUNK]
                    sel = np.nonzero((d >= lo) & (d < hi))[0]
                    if len(sel):
                        block[d[sel] - lo] = _read_rows(src, start, len(d), self.dim)[sel]
                out.write(block.tobytes())
        out_path.replace(stem.with_suffix(".i8"))
        final_rowids = np.empty(n, dtype=np.int64)
        final_rowids[dest] = rowids
        final_scales = np.empty(n, dtype=np.float32)
        final_scales[dest] = scales
        _save(f"{stem}.rowids.npy", final_rowids)
        _save(f"{stem}.scales.npy", final_scales)
        _save(f"{stem}.lists.npy", lists)
        _save(f"{stem}.centroids.npy", centroids)
        # a row's label vector (the first one added for it) by rowid, for `similarities`
        uniq, first = np.unique(rowids, return_index=True)
        _save(f"{stem}.main_rowids.npy", uniq)
        _save(f"{stem}.main_pos.npy", dest[first])

    def _sample(self, tmp: Path, scales: np.ndarray, n: int, size: int) -> np.ndarray:
        """An evenly strided sample of the vectors, read in order."""
        step = max(1, n // size)
        rows = []
        with open(tmp, "rb") as f:
            for start in range(0, n, CHUNK):
                codes = _read_rows(f, start, min(CHUNK, n - start), self.dim)
                first = (-start) % step
                rows.append(_dequantize(codes[first::step], scales[start + first:start + len(codes):step]))
        return np.concatenate(rows)[:size]

    def _train(self, tmp: Path, scales: np.ndarray, n: int) -> np.ndarray:
        """Unit centroids of a spherical k-means on a sample (hnswlib finds each point's nearest centroid)."""
        if n <= FLAT_ROWS:
            return np.zeros((1, self.dim), dtype=np.float32)
        nlist = max(2, n // LIST_ROWS)
        sample = _unit(self._sample(tmp, scales, n, min(TRAIN_CAP, TRAIN_ROWS * nlist)))
        nlist = min(nlist, len(sample) // 4)
        rng = np.random.default_rng(0)
        centroids = sample[rng.choice(len(sample), nlist, replace=False)]
        for _ in range(KMEANS_ITERS):
            assign = _nearest(centroids, sample)
            sums = np.zeros_like(centroids)
            np.add.at(sums, assign, sample)
            counts = np.bincount(assign, minlength=nlist)
            empty = counts == 0
            sums[empty] = sample[rng.choice(len(sample), int(empty.sum()), replace=False)]
            centroids = _unit(sums)
        return centroids

    def _assign(self, tmp: Path, scales: np.ndarray, n: int, centroids: np.ndarray) -> np.ndarray:
        if len(centroids) == 1:
            return np.zeros(n, dtype=np.int64)
        out = np.empty(n, dtype=np.int64)
        index = _centroid_index(centroids)
        with open(tmp, "rb") as f:
            for start in range(0, n, CHUNK):
                codes = _read_rows(f, start, min(CHUNK, n - start), self.dim)
                out[start:start + len(codes)] = index.knn_query(
                    _unit(_dequantize(codes, scales[start:start + len(codes)])), k=1)[0][:, 0]
        return out

    def _append_tail(self, kind: str, old: _Segment | None, tmp: Path, rowids: np.ndarray,
                     scales: np.ndarray) -> None:
        """Rows of an incremental build: the old tail (its live vectors) and the new ones, one flat list."""
        stem = self._stem(kind, "tail")
        codes = np.fromfile(tmp, dtype=np.int8).reshape(-1, self.dim)
        if old is not None:
            keep = np.asarray(old.rowids) >= 0
            codes = np.concatenate([old._read(0, len(old.rowids))[keep], codes])
            rowids = np.concatenate([np.asarray(old.rowids)[keep], rowids])
            scales = np.concatenate([np.asarray(old.scales)[keep], scales])
            old.close()
        tmp_out = stem.with_suffix(".i8.new")
        codes.tofile(tmp_out)
        tmp_out.replace(stem.with_suffix(".i8"))
        _save(f"{stem}.rowids.npy", rowids)
        _save(f"{stem}.scales.npy", scales)
        _save(f"{stem}.lists.npy", np.asarray([0, len(rowids)], dtype=np.int64))
        _save(f"{stem}.centroids.npy", np.zeros((1, self.dim), dtype=np.float32))
        main = self.segments.get(kind, {}).get("main")
        if main is not None and len(rowids) > max(FLAT_ROWS, len(main.rowids) // 10):
            log.warning("%d %s vectors were added since the index was clustered; `kbqa index --rebuild` "
                        "clusters them (searches read all of them until then)", len(rowids), kind)

    # ---- searching --------------------------------------------------------------------------
    def search(self, vector: np.ndarray, k: int, kind: str | None = None, ef: int | None = None) -> list[VectorHit]:
        """Nearest rows to a unit vector, best cosine per row, across the requested kind(s). `ef` (hnsw's breadth)
        widens the scan in proportion."""
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        scan = self.scan_rows if ef is None else max(self.scan_rows, self.scan_rows * ef // 64)
        rowids, sims = [], []
        for kd in ([kind] if kind else KINDS):
            for seg in self.segments.get(kd, {}).values():
                r, s = seg.search(q, scan, 8 * k)
                rowids.append(r)
                sims.append(s)
        if not rowids:
            return []
        r, s = np.concatenate(rowids), np.concatenate(sims)
        live = r >= 0
        r, s = r[live], s[live]
        order = np.argsort(-s, kind="stable")
        r, s = r[order], s[order]
        _, first = np.unique(r, return_index=True)  # best vector per row
        first = np.sort(first)[:k]
        return [VectorHit(int(r[i]), float(s[i])) for i in first.tolist()]

    def similarities(self, vector: np.ndarray, rows: dict[int, str]) -> dict[int, float]:
        """Cosine of `vector` with the label vector of some rows ({rowid: kind}); rows not indexed are left out."""
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        out: dict[int, float] = {}
        for rowid, kind in rows.items():
            segs = self.segments.get(kind, {})
            vec = segs["tail"].vector_of(rowid) if "tail" in segs else None
            if vec is None and kind in self.main_index and "main" in segs:
                ids, pos = self.main_index[kind]
                i = int(np.searchsorted(ids, rowid))
                if i < len(ids) and int(ids[i]) == rowid:
                    p, main = int(pos[i]), segs["main"]
                    if int(main.rowids[p]) == rowid:  # not removed since
                        vec = main._read(p, p + 1)[0].astype(np.float32) * float(main.scales[p])
            if vec is not None:
                out[rowid] = float(vec @ q)
        return out


def _save(path: str, array: np.ndarray) -> None:
    tmp = f"{path}.new.npy"
    np.save(tmp, array)
    os.replace(tmp, path)


def _replace_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".new")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _centroid_index(centroids: np.ndarray) -> hnswlib.Index:
    index = hnswlib.Index(space="ip", dim=centroids.shape[1])
    index.init_index(max_elements=len(centroids), ef_construction=100, M=16)
    index.add_items(centroids)
    index.set_ef(32)
    return index


def _nearest(centroids: np.ndarray, points: np.ndarray) -> np.ndarray:
    if len(centroids) <= 256:
        return np.argmax(points @ centroids.T, axis=1)
    return _centroid_index(centroids).knn_query(points, k=1)[0][:, 0].astype(np.int64)


def make(folder: Path, dim: int, target: str, fresh: bool) -> CompactVectors:
    """The registry's factory (grounding/vector_stores.py)."""
    from kb_dumps.stage_errors import KBQAError

    if target:
        raise KBQAError(f"the compact vector store lives in the index folder; it takes no target (got {target!r})",
                        stage="usage")
    if fresh:
        cv = CompactVectors(Path(folder), dim)
        Path(folder).mkdir(parents=True, exist_ok=True)
        return cv
    return CompactVectors.open(Path(folder))
