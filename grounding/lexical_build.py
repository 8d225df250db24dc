"""Write the lexical index (grounding/lexical_index.py's files) from streamed rows in bounded memory.

`KindLexicon.build` holds every name and every (trigram, name) pair at once: ~20 pairs a name, sorted with
copies, several GB at 10M names. Here names arrive in chunks of `CHUNK_NAMES`; each chunk's names are appended
to `names.bin`, its per-name arrays kept (21 bytes a name), and its (trigram, name id) pairs sorted and written
as a run file. The runs are then merged by key range (an external sort): each of a few partitions reads its
slice of every run, sorts it and appends it to `gram_post`. Peak memory is about one chunk's pairs or one
partition's, whichever is larger, whatever the number of names. The files are the same as `KindLexicon.build`
writes (a test compares them), so the index format does not change.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from grounding.lexical_index import KINDS
from grounding.text import normalize, text_hash, trigram_pairs

CHUNK_NAMES = 250_000  # names per run (~20 trigram pairs each)
PARTITION_PAIRS = 12_000_000  # (trigram, name) pairs sorted at once while merging the runs
_SAMPLE_EVERY = 512  # run keys kept to choose the partition boundaries


class _KindWriter:
    """One kind's lexicon under `folder`, fed names in order."""

    def __init__(self, folder: Path, chunk_names: int):
        self.folder = folder
        self.runs_dir = folder / "runs.tmp"
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        self.blob = open(folder / "names.bin", "wb")  # noqa: SIM115 - closed in finish()
        self.chunk_names = chunk_names
        self.norms: list[str] = []
        self.rowids: list[int] = []
        self.alias: list[bool] = []
        self.done = 0  # names written in earlier chunks
        self.parts: dict[str, list[np.ndarray]] = {k: [] for k in ("len", "rowid", "alias", "hash", "grams")}
        self.runs: list[tuple[Path, Path, int]] = []  # (keys file, owners file, pairs)
        self.sample: list[np.ndarray] = []

    def add(self, norm: str, rowid: int, alias: bool) -> None:
        self.norms.append(norm)
        self.rowids.append(rowid)
        self.alias.append(alias)
        if len(self.norms) >= self.chunk_names:
            self._flush()

    def _flush(self) -> None:
        if not self.norms:
            return
        encoded = [n.encode("utf-8") for n in self.norms]
        self.blob.write(b"".join(encoded))
        n = len(self.norms)
        self.parts["len"].append(np.fromiter((len(e) for e in encoded), dtype=np.int64, count=n))
        self.parts["rowid"].append(np.asarray(self.rowids, dtype=np.int64))
        self.parts["alias"].append(np.asarray(self.alias, dtype=np.uint8))
        self.parts["hash"].append(np.fromiter((text_hash(x) for x in self.norms), dtype=np.int64, count=n))
        keys, owners = trigram_pairs(self.norms)
        order = np.argsort(keys, kind="stable")  # owners ascend, so each key's owners stay sorted
        keys, owners = keys[order], owners[order]
        dup = np.zeros(len(keys), dtype=bool)
        dup[1:] = (keys[1:] == keys[:-1]) & (owners[1:] == owners[:-1])
        keys, owners = keys[~dup], owners[~dup]
        self.parts["grams"].append(np.bincount(owners, minlength=n).astype(np.int32))
        i = len(self.runs)
        kpath, opath = self.runs_dir / f"{i}.keys", self.runs_dir / f"{i}.owners"
        keys.tofile(kpath)
        (owners + self.done).astype(np.int32).tofile(opath)
        self.runs.append((kpath, opath, len(keys)))
        self.sample.append(keys[::_SAMPLE_EVERY].copy())
        self.done += n
        self.norms, self.rowids, self.alias = [], [], []

    def finish(self) -> int:
        self._flush()
        self.blob.close()
        total = self.done
        cat = {k: (np.concatenate(v) if v else np.zeros(0, dtype=np.int64)) for k, v in self.parts.items()}
        self.parts = {}
        off = np.zeros(total + 1, dtype=np.int64)
        np.cumsum(cat.pop("len"), out=off[1:])
        hashes = cat.pop("hash")
        order = np.argsort(hashes, kind="stable")
        arrays = {"names_off": off, "names_rowid": cat["rowid"].astype(np.int64),
                  "names_alias": cat["alias"].astype(np.uint8), "exact_hash": hashes[order],
                  "exact_nid": order.astype(np.int64), "name_grams": cat["grams"].astype(np.int32)}
        for name, arr in arrays.items():
            np.save(self.folder / f"{name}.npy", arr)
        del arrays, cat, hashes, order, off
        gram_keys, gram_off = self._merge_runs()
        np.save(self.folder / "gram_keys.npy", gram_keys)
        np.save(self.folder / "gram_off.npy", gram_off)
        shutil.rmtree(self.runs_dir, ignore_errors=True)
        return total

    def _merge_runs(self) -> tuple[np.ndarray, np.ndarray]:
        """Merge the sorted runs into the CSR lists, one key range at a time; gram_post.npy is written as it goes."""
        total = sum(r[2] for r in self.runs)
        sample = np.unique(np.concatenate(self.sample)) if self.sample else np.zeros(0, dtype=np.int64)
        parts = max(1, -(-total // PARTITION_PAIRS))
        # boundaries: keys of the sample at even quantiles; a partition is [bounds[i], bounds[i+1])
        inner = sample[np.linspace(0, len(sample), parts + 1, dtype=np.int64)[1:-1]] if len(sample) else []
        bounds = [None, *np.unique(np.asarray(inner, dtype=np.int64)).tolist(), None]
        # where each boundary falls in each run (a binary search over the run's keys file)
        cuts = []
        for kpath, _, n in self.runs:
            keys = np.memmap(kpath, dtype=np.int64, mode="r", shape=(n,)) if n else np.zeros(0, dtype=np.int64)
            cuts.append([0, *np.searchsorted(keys, bounds[1:-1]).tolist(), n])
            del keys
        out_keys, out_off = [], [np.zeros(1, dtype=np.int64)]
        written = 0
        with open(self.folder / "gram_post.npy", "wb") as post:
            np.lib.format.write_array_header_1_0(post, {"descr": np.dtype(np.int32).str, "fortran_order": False,
                                                        "shape": (total,)})
            for p in range(len(bounds) - 1):
                ks, os_ = [], []
                for (kpath, opath, _), cut in zip(self.runs, cuts, strict=True):
                    a, b = cut[p], cut[p + 1]
                    if b > a:
                        ks.append(np.fromfile(kpath, dtype=np.int64, count=b - a, offset=a * 8))
                        os_.append(np.fromfile(opath, dtype=np.int32, count=b - a, offset=a * 4))
                if not ks:
                    continue
                keys, owners = np.concatenate(ks), np.concatenate(os_)
                del ks, os_
                order = np.argsort(keys, kind="stable")  # runs are in name order: owners stay sorted per key
                keys, owners = keys[order], owners[order]
                del order
                uniq, starts = np.unique(keys, return_index=True)
                out_keys.append(uniq)
                out_off.append((np.append(starts[1:], len(keys)) + written).astype(np.int64))
                post.write(owners.tobytes())
                written += len(keys)
        return (np.concatenate(out_keys) if out_keys else np.zeros(0, dtype=np.int64),
                np.concatenate(out_off))


def write_lexicon(rows: Iterable[tuple[int, str, str, list[str]]], folder: Path,
                  chunk_names: int = CHUNK_NAMES) -> int:
    """Write the kind-partitioned lexical index of (rowid, kind, label, aliases) rows into `folder` (as
    `LexicalIndex.save` would); returns the number of names."""
    writers = {k: _KindWriter(folder / k, chunk_names) for k in KINDS}
    for rowid, kind, label, aliases in rows:
        w = writers.get(kind, writers["entity"])
        seen: set[str] = set()
        for i, name in enumerate([label, *aliases]):
            nm = normalize(name) if name else ""
            if nm and nm not in seen:
                seen.add(nm)
                w.add(nm, rowid, i > 0)
    return sum(w.finish() for w in writers.values())
