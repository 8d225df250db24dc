"""The compact vector store (grounding/vector_compact.py) and the streamed lexicon (grounding/lexical_build.py):
real indexes built from the fixture label memory, compared with the hnsw store and with exact float search."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from test_grounding import WD, add_rows, make_store

import grounding.lexical_build as lexical_build
import grounding.vector_compact as vector_compact
from grounding.build import build_index, index_dir, read_meta
from grounding.embedder import get_embedder, row_texts
from grounding.ground import Grounder
from grounding.lexical_index import _FILES, LexicalIndex
from kb_dumps.label_memory import LabelMemory
from kb_dumps.stage_errors import KBQAError

# (label, description, kind): labels, an alias, typos, a description only, kinds
QUERIES = [("Albert Einstein", None, None), ("City of Light", None, None), ("nationality", None, "property"),
           ("Berlim", None, None), ("place of brith", None, None), ("country", None, "class"),
           ("Paris", "city in Texas", None), ("Mercury", "planet of the solar system", None),
           ("", "most specific known birth location of a person", "property"), ("USA", None, None)]


@pytest.fixture(scope="module")
def embedder():
    return get_embedder()


def ranked(root: Path, embedder, k: int = 5) -> list[list[str]]:  # noqa: ANN001
    g = Grounder(root, embedder=embedder)
    try:
        return [[c.id for c in g.search(lab, desc, kind, k).candidates] for lab, desc, kind in QUERIES]
    finally:
        g.close()


def fixture_words() -> list[str]:
    data = json.loads((Path(__file__).parent / "fixtures" / "grounding" / "wikidata_tiny.json").read_text())
    return sorted({w for r in data["rows"] for w in f"{r['label']} {r.get('description', '')}".split() if w.isalpha()})


def generated_rows(n: int) -> list[dict]:
    """Entity rows whose labels and descriptions are made of the fixture's words (enough rows to cluster)."""
    rng, words = random.Random(3), fixture_words()
    return [{"id": WD + f"Q9{i:05d}", "kind": "entity", "label": " ".join(rng.sample(words, rng.randint(1, 3))),
             "description": " ".join(rng.sample(words, rng.randint(2, 5))), "popularity": rng.randint(0, 9)}
            for i in range(n)]


def test_flat_compact_ranks_as_hnsw(tmp_path, embedder):
    """Up to FLAT_ROWS vectors a kind is one list read whole: int8 cosines rank the fixture's queries as hnsw."""
    hnsw = make_store(tmp_path / "hnsw", "wikidata_tiny.json")
    build_index(hnsw, progress=False)
    compact = make_store(tmp_path / "compact", "wikidata_tiny.json")
    stats = build_index(compact, progress=False, vector_store="compact")
    assert read_meta(compact)["vector_store"] == "compact" and stats.vectors >= stats.rows
    assert not list(index_dir(compact).glob("vectors-*.hnsw"))
    assert ranked(compact, embedder) == ranked(hnsw, embedder)


def test_quantized_cosine_is_close():
    rng = np.random.default_rng(0)
    v = rng.normal(size=(50, 256)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    codes, scales = vector_compact.quantize(v)
    approx = (codes.astype(np.float32) * scales[:, None]) @ v[0]
    assert codes.dtype == np.int8 and np.abs(approx - v @ v[0]).max() < 0.01


@pytest.fixture()
def clustered(monkeypatch, tmp_path, embedder):  # noqa: ANN201
    """The fixture store plus 1,500 generated rows, indexed with the lists small enough to cluster them."""
    monkeypatch.setattr(vector_compact, "FLAT_ROWS", 256)
    monkeypatch.setattr(vector_compact, "LIST_ROWS", 64)
    root = make_store(tmp_path / "s", "wikidata_tiny.json", generated_rows(1500))
    build_index(root, progress=False, vector_store="compact")
    return root


def test_inverted_lists_recall(clustered, embedder):
    """Exhaustive int8 search = exact float search; reading a quarter of the lists keeps >= 0.8 of the top 10."""
    g = Grounder(clustered, embedder=embedder)
    try:
        seg = g.vectors.segments["entity"]["main"]
        assert len(seg.lists) - 1 >= 20 and np.all(np.diff(seg.lists) >= 0)
        assert seg.lists[-1] == len(seg.rowids) == g.vectors.state["entity"].live
        # the exact top 10 from float vectors of every entity text (label and aliases)
        mem = LabelMemory(clustered / "labels.sqlite", readonly=True)
        texts, owners = [], []
        for r in mem.iter_rows():
            if r.kind == "entity":
                for t in row_texts(r.label, r.description, r.aliases):
                    texts.append(t)
                    owners.append(int(r.rowid))
        mem.close()
        vecs, owners = embedder.encode(texts), np.asarray(owners)
        queries = [f"{a} {b}" for a, b in zip(fixture_words()[::3], fixture_words()[1::3], strict=False)][:40]
        exact_overlap, ivf_overlap = [], []
        for q in queries:
            v = embedder.encode_one(q)
            sims = vecs @ v
            best: dict[int, float] = {}
            for i in np.argsort(-sims)[:60].tolist():
                best.setdefault(int(owners[i]), float(sims[i]))
            exact = set(sorted(best, key=lambda r: -best[r])[:10])
            g.vectors.scan_rows = 1 << 40
            full = {h.rowid for h in g.vectors.search(v, 10, "entity")}
            g.vectors.scan_rows = seg.lists[-1] // 4
            part = {h.rowid for h in g.vectors.search(v, 10, "entity")}
            exact_overlap.append(len(full & exact) / 10)
            ivf_overlap.append(len(part & full) / 10)
        assert np.mean(exact_overlap) >= 0.95
        assert np.mean(ivf_overlap) >= 0.8
    finally:
        g.close()


def test_incremental_rows_go_to_the_tail_until_rebuild(clustered, embedder):
    new = [{"id": WD + "Q42", "kind": "entity", "label": "Douglas Adams", "aliases": ["DNA"],
            "description": "English writer and humorist", "popularity": 50},
           {"id": WD + "Q64", "kind": "entity", "label": "Berlin", "aliases": ["Spree-Athen"]}]  # a changed row
    add_rows(clustered, new)
    stats = build_index(clustered, progress=False)
    assert not stats.rebuilt and stats.embedded_rows == 2
    folder = index_dir(clustered)
    assert (folder / "compact-entity-tail.i8").is_file()
    g = Grounder(clustered, embedder=embedder)
    try:
        assert g.ground("Douglas Adams")[0].id == WD + "Q42"
        assert g.ground("", description="English humorist and writer")[0].id == WD + "Q42"
        assert g.ground("Spree-Athen")[0].id == WD + "Q64"
        assert [c.id for c in g.ground("Berlin", k=10)].count(WD + "Q64") == 1
        incremental = [[c.id for c in g.ground(q, d, kd, k=3)] for q, d, kd in QUERIES]
    finally:
        g.close()
    assert build_index(clustered, progress=False, rebuild=True).rebuilt
    assert not list(folder.glob("compact-*-tail.*"))
    g = Grounder(clustered, embedder=embedder)
    try:
        assert [[c.id for c in g.ground(q, d, kd, k=3)] for q, d, kd in QUERIES] == incremental
    finally:
        g.close()


def test_switching_store_removes_the_other_files(tmp_path):
    root = make_store(tmp_path / "s", "wikidata_tiny.json")
    build_index(root, progress=False, vector_store="compact")
    folder = index_dir(root)
    assert list(folder.glob("compact-*"))
    assert build_index(root, progress=False, vector_store="hnsw").rebuilt
    assert not list(folder.glob("compact-*")) and list(folder.glob("vectors-*.hnsw"))
    with pytest.raises(KBQAError, match="takes no target"):
        build_index(root, progress=False, vector_store="compact:/tmp/x")


def test_older_index_format_is_refused_with_the_rebuild_command(tmp_path):
    root = make_store(tmp_path / "s", "wikidata_tiny.json")
    build_index(root, progress=False, vector_store="compact")
    meta_path = index_dir(root) / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps({**meta, "format": 1}))
    with pytest.raises(KBQAError, match=r"older format \(1\); rebuild it: `kbqa index --store .* --rebuild`"):
        Grounder(root)
    assert build_index(root, progress=False).rebuilt  # `kbqa index` rebuilds it, keeping the compact store
    assert read_meta(root)["vector_store"] == "compact"


def test_streamed_lexicon_equals_the_in_memory_one(tmp_path, monkeypatch):
    """Chunks of 100 names and partitions of 500 pairs: several runs merged by key range, the same files."""
    rows = [(i + 1, r["kind"], r["label"], [r["label"].upper() + " ii"] if i % 4 == 0 else [])
            for i, r in enumerate(generated_rows(700))]
    rows.append((9999, "property", "place of birth", ["birthplace", "born in"]))
    monkeypatch.setattr(lexical_build, "PARTITION_PAIRS", 500)
    names = lexical_build.write_lexicon(iter(rows), tmp_path / "lex", chunk_names=100)
    disk, memory = LexicalIndex.load(tmp_path / "lex"), LexicalIndex.build(rows)
    assert names == len(memory) == len(disk)
    for kind, part in memory.parts.items():
        assert disk.parts[kind].blob == part.blob
        for name in _FILES:
            assert disk.parts[kind].a[name].dtype == part.a[name].dtype
            assert np.array_equal(disk.parts[kind].a[name], part.a[name]), (kind, name)
    assert not (tmp_path / "lex" / "entity" / "runs.tmp").exists()
    assert disk.search("birth place", 3, "property")[0].rowid == 9999


def test_a_large_memory_gets_the_compact_store_by_default(tmp_path, monkeypatch):
    import grounding.build

    monkeypatch.setattr(grounding.build, "AUTO_COMPACT_ROWS", 20)  # the fixture has 25 rows
    root = make_store(tmp_path / "s", "wikidata_tiny.json")
    build_index(root, progress=False)
    assert read_meta(root)["vector_store"] == "compact"
    monkeypatch.setattr(grounding.build, "AUTO_COMPACT_ROWS", 1000)
    assert build_index(root, progress=False, rebuild=True).embedded_rows == 25  # a rebuild keeps the store
    assert read_meta(root)["vector_store"] == "compact"
    small = make_store(tmp_path / "small", "wikidata_tiny.json")
    build_index(small, progress=False)
    assert read_meta(small)["vector_store"] == "hnsw"
