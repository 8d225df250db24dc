"""The sharded vector index: searched together it finds what one index finds; rows never straddle shards;
built and searched with one shard in memory; `kbqa index --shard-rows` grounds the same as one index."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from grounding.build import build_index
from grounding.embedder import get_embedder
from grounding.ground import Grounder
from grounding.vector_index import ALIAS_BASE, VectorIndex
from grounding.vector_shards import ShardedVectorIndex, load_vectors
from kb_dumps.ingest import ingest

FIXTURES = Path(__file__).parent / "fixtures" / "desq_real"
DIM, ROWS = 32, 3000


def _data(seed: int = 7) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unit vectors for ROWS rows (rowids 1..ROWS), every fifth row with an alias vector too."""
    rng = np.random.default_rng(seed)
    rowids = np.arange(1, ROWS + 1, dtype=np.int64)
    alias_rows = rowids[::5]
    all_rows = np.concatenate([rowids, alias_rows])
    is_alias = np.concatenate([np.zeros(len(rowids), bool), np.ones(len(alias_rows), bool)])
    order = np.argsort(all_rows, kind="stable")  # a row's vectors arrive together, as embed_rows gives them
    vecs = rng.normal(size=(len(all_rows), DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return all_rows[order], vecs[order], is_alias[order]


def _exact(rows: np.ndarray, vecs: np.ndarray, q: np.ndarray, k: int) -> list[int]:
    sims = vecs @ q
    best: dict[int, float] = {}
    for r, s in zip(rows.tolist(), sims.tolist(), strict=True):
        best[r] = max(best.get(r, -2.0), s)
    return [r for r, _ in sorted(best.items(), key=lambda kv: -kv[1])[:k]]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):
    rows, vecs, alias = _data()
    folder = tmp_path_factory.mktemp("shards")
    sharded = ShardedVectorIndex.start(folder, DIM, shard_rows=700)
    one = VectorIndex(dim=DIM)
    for start in range(0, len(rows), 512):  # in chunks, as build.py adds them
        sl = slice(start, start + 512)
        sharded.add("entity", rows[sl], vecs[sl], alias[sl])
        one.add("entity", rows[sl], vecs[sl], alias[sl])
        assert len(sharded._loaded) <= 1  # building holds the shard being filled only
    sharded.save(folder)
    return folder, one, rows, vecs


def test_shards_split_rows_and_keep_aliases_with_their_row(built) -> None:  # noqa: ANN001
    folder, _, _, _ = built
    meta = json.loads((folder / "vectors.json").read_text())
    assert [s["rows"] for s in meta["shards"]] == [700, 700, 700, 700, 200]
    seen: dict[int, int] = {}
    for i, s in enumerate(meta["shards"]):
        vi = VectorIndex.load(folder / "shards" / s["name"])
        labels = vi.indexes["entity"].get_ids_list()
        for lab in labels:
            row = lab if lab < ALIAS_BASE else int(vi.alias_rowids[lab - ALIAS_BASE])
            assert seen.setdefault(row, i) == i
    assert len(seen) == ROWS
    assert sum(s.live for s in load_vectors(folder, resident=False).state.values()) == ROWS + ROWS // 5


@pytest.mark.parametrize("resident", [True, False])
def test_search_across_shards_equals_exact_search(built, resident: bool) -> None:  # noqa: ANN001
    folder, one, rows, vecs = built
    sharded = load_vectors(folder, resident=resident)
    assert isinstance(sharded, ShardedVectorIndex)
    rng = np.random.default_rng(1)
    recall_sharded = recall_one = 0.0
    for _ in range(40):
        q = rng.normal(size=DIM).astype(np.float32)
        q /= np.linalg.norm(q)
        exact = _exact(rows, vecs, q, 10)
        got = [h.rowid for h in sharded.search(q, 10)]
        recall_sharded += len(set(got) & set(exact)) / 10
        recall_one += len({h.rowid for h in one.search(q, 10)} & set(exact)) / 10
        assert got[0] == exact[0]
        if not resident:
            assert len(sharded._loaded) == 0  # each shard was dropped after its search
    assert recall_sharded / 40 >= 0.98 and recall_sharded >= recall_one - 0.4
    sims = sharded.similarities(vecs[0], {int(rows[0]): "entity", 2999: "entity"})
    assert sims[int(rows[0])] == pytest.approx(1.0, abs=1e-5) and 2999 in sims


def test_removed_rows_disappear_and_come_back_in_the_last_shard(tmp_path: Path) -> None:
    rows, vecs, alias = _data(3)
    idx = ShardedVectorIndex.start(tmp_path, DIM, shard_rows=1000)
    idx.add("entity", rows, vecs, alias)
    idx.save(tmp_path)
    idx = load_vectors(tmp_path, resident=False)
    target = vecs[np.nonzero(rows == 10)[0][0]]
    assert idx.search(target, 1)[0].rowid == 10
    idx.remove_rows(np.asarray([10], dtype=np.int64))
    assert all(h.rowid != 10 for h in idx.search(target, 5))
    idx.add("entity", np.asarray([10]), target.reshape(1, -1), np.zeros(1, bool))
    idx.save(tmp_path)
    again = load_vectors(tmp_path)
    assert again.search(target, 1)[0].rowid == 10 and [s["rows"] for s in again.shards] == [1000, 1000, 1000, 1]


def test_kbqa_index_with_shards_grounds_like_one_index(tmp_path: Path, run_cli) -> None:  # noqa: ANN001
    store = tmp_path / "kb"
    ingest([FIXTURES / "assemble_kb.nt"], store, profile="wikidata", progress=False)
    build_index(store, progress=False)
    embedder = get_embedder()
    queries = [("capital", "property"), ("Atlantis", None), ("population", None), ("country", None)]
    g = Grounder(store, embedder=embedder)
    expected = [[c.id for c in g.search(lab, None, kind, 5).candidates] for lab, kind in queries]
    g.close()
    code, out, err = run_cli("index", "--store", store, "--shard-rows", "5", "--format", "json")
    assert code == 0, err
    stats = json.loads(out)
    assert stats["rebuilt"] and stats["vectors"] > 0
    index = store / "current" / "index"
    assert json.loads((index / "meta.json").read_text())["shard_rows"] == 5
    assert len(list((index / "shards").iterdir())) >= 3 and not list(index.glob("vectors-*.hnsw"))
    for resident in (True, False):
        g = Grounder(store, embedder=embedder, resident_shards=resident)
        assert [[c.id for c in g.search(lab, None, kind, 5).candidates] for lab, kind in queries] == expected
        g.close()
    code, out, _ = run_cli("index", "--store", store, "--format", "json")  # keeps the shards: nothing to do
    assert code == 0 and not json.loads(out)["rebuilt"]
    assert run_cli("index", "--store", store, "--shard-rows", "0")[0] == 0  # back to one index
    assert not (index / "shards").exists() and list(index.glob("vectors-*.hnsw"))
