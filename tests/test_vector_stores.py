"""Vector stores (grounding/vector_stores.py): hnsw and milvus (Milvus Lite, and a Milvus URI served by milvus-lite
on loopback) ground real label queries alike; the meta records the store and grounding reopens it from there."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from test_grounding import WD, add_rows, make_store

from grounding.build import build_index
from grounding.embedder import get_embedder
from grounding.ground import Grounder
from grounding.vector_stores import VECTOR_STORES, canonical_spec, parse_spec
from kb_dumps.stage_errors import KBQAError

pytest.importorskip("pymilvus")
pytest.importorskip("milvus_lite")

# (label, description, kind): real labels, aliases, typos, a description-only query, kind off
QUERIES = [("Albert Einstein", None, None), ("City of Light", None, None), ("nationality", None, "property"),
           ("Berlim", None, None), ("place of brith", None, None), ("country", None, "class"),
           ("country", None, "property"), ("Paris", "city in Texas", None), ("Paris", "capital of France", None),
           ("mercury", "chemical element, a liquid metal", None), ("Mercury", "planet of the solar system", None),
           ("", "most specific known birth location of a person", "property"), ("date_of_birth", None, "property"),
           ("brother", None, "property"), ("USA", None, None)]


def ranked(g: Grounder) -> list[list[str]]:
    return [[c.id for c in g.search(lab, desc, kind, 5).candidates] for lab, desc, kind in QUERIES]


@pytest.fixture(scope="module")
def embedder():
    return get_embedder()


@pytest.fixture(scope="module")
def hnsw_ranking(tmp_path_factory, embedder) -> list[list[str]]:
    root = make_store(tmp_path_factory.mktemp("hnsw") / "store", "wikidata_tiny.json")
    build_index(root, progress=False)
    g = Grounder(root, embedder=embedder)
    try:
        return ranked(g)
    finally:
        g.close()


def test_specs() -> None:
    assert VECTOR_STORES.names() == ("hnsw", "compact", "milvus")
    assert parse_spec(None) == ("hnsw", "") and parse_spec("milvus:http://h:19530") == ("milvus", "http://h:19530")
    assert canonical_spec("milvus:rel/v.db") == f"milvus:{Path('rel/v.db').resolve()}"
    with pytest.raises(KBQAError, match="unknown vector store 'qdrant'"):
        parse_spec("qdrant:x")


def test_milvus_lite_grounds_like_hnsw(tmp_path: Path, embedder, hnsw_ranking) -> None:  # noqa: ANN001
    root = make_store(tmp_path / "store", "wikidata_tiny.json")
    stats = build_index(root, progress=False, vector_store="milvus")
    index = root / "index"
    meta = json.loads((index / "meta.json").read_text())
    assert meta["vector_store"] == "milvus" and (index / "vectors.milvus.db").exists()
    assert not list(index.glob("vectors-*.hnsw")) and stats.vectors == meta["vectors"] > 25  # aliases too
    g = Grounder(root, embedder=embedder)  # opens Milvus Lite from the meta
    try:
        assert type(g.vectors).__name__ == "MilvusVectors"
        got = ranked(g)
        assert got == hnsw_ranking
        assert got[0][0] == WD + "Q937" and got[1][0] == WD + "Q90" and got[7][0] == WD + "Q830149"
    finally:
        g.close()
    # an incremental update re-embeds only the new rows, in the same collection
    add_rows(root, [{"id": WD + "Q1726", "kind": "entity", "label": "Munich", "aliases": ["München"],
                     "description": "capital of Bavaria, Germany"}])
    again = build_index(root, progress=False)
    assert not again.rebuilt and again.embedded_rows == 1 and again.vectors == stats.vectors + 2
    g = Grounder(root, embedder=embedder)
    try:
        assert g.ground("München")[0].id == WD + "Q1726"
        assert g.ground("", description="capital of Bavaria, Germany")[0].id == WD + "Q1726"
    finally:
        g.close()
    # back to hnsw: a different store rebuilds, and the Milvus Lite files go
    assert build_index(root, progress=False, vector_store="hnsw").rebuilt
    assert not (index / "vectors.milvus.db").exists() and list(index.glob("vectors-*.hnsw"))


def test_query_path_imports_pymilvus_only_for_a_milvus_index(tmp_path: Path) -> None:
    root = make_store(tmp_path / "store", "wikidata_tiny.json")
    build_index(root, progress=False)
    code = ("import sys; from grounding.ground import Grounder; g = Grounder(sys.argv[1]); "
            "g.ground('Berlin'); print('pymilvus' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def milvus_server(tmp_path: Path):
    """milvus-lite's own gRPC server (`milvus-lite server`), on a loopback port, stopped after the test."""
    port = _free_port()
    log = tmp_path / "milvus.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "milvus_lite", "server", "--data-dir", str(tmp_path / "milvus"),
                                 "--host", "127.0.0.1", "--port", str(port)], stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"milvus-lite server did not start: {log.read_text()[-2000:]}") from None
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_milvus_uri_grounds_like_hnsw(tmp_path: Path, embedder, hnsw_ranking, milvus_server) -> None:  # noqa: ANN001
    root = make_store(tmp_path / "store", "wikidata_tiny.json")
    build_index(root, progress=False, vector_store=f"milvus:{milvus_server}")
    meta = json.loads((root / "index" / "meta.json").read_text())
    assert meta["vector_store"] == f"milvus:{milvus_server}"
    g = Grounder(root, embedder=embedder)
    try:
        assert ranked(g) == hnsw_ranking
        sims = g.vectors.similarities(g.encode_query("Albert Einstein"), {1: "entity"})
        assert set(sims) <= {1} and all(-1.0 <= s <= 1.0001 for s in sims.values())
    finally:
        g.close()


def test_a_missing_milvus_server_is_a_store_error(tmp_path: Path) -> None:
    root = make_store(tmp_path / "store", "wikidata_tiny.json")
    with pytest.raises(KBQAError) as e:
        build_index(root, progress=False, vector_store=f"milvus:http://127.0.0.1:{_free_port()}")
    assert e.value.info.stage == "store" and "cannot open the Milvus vector store" in str(e.value)


def test_a_sharded_index_is_refused_with_what_to_run(tmp_path: Path) -> None:
    root = make_store(tmp_path / "store", "wikidata_tiny.json")
    build_index(root, progress=False)
    (root / "index" / "vectors.json").write_text(json.dumps({"dim": 8, "shard_rows": 5, "shards": []}))
    with pytest.raises(KBQAError, match="sharded, a layout no longer read; rebuild it"):
        Grounder(root)
    assert np.isfinite(build_index(root, progress=False, rebuild=True).seconds)
    Grounder(root).close()


def test_kbqa_index_vector_store_flag(tmp_path: Path, run_cli) -> None:  # noqa: ANN001
    root = make_store(tmp_path / "store", "wikidata_tiny.json")
    code, out, err = run_cli("index", "--store", root, "--vector-store", "milvus", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["rebuilt"] and json.loads((root / "index" / "meta.json").read_text())["vector_store"] == "milvus"
    code, out, err = run_cli("index", "--store", root, "--format", "json")  # keeps the store: nothing to do
    assert code == 0 and not json.loads(out)["rebuilt"], err
    code, out, err = run_cli("ground", "Albert Einstein", "--store", root, "--format", "json")
    assert code == 0 and WD + "Q937" in out, err
