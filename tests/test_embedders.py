"""Both embedders (the static default and MiniLM) build, persist and reopen an index; a mismatched index is refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from test_grounding import make_store

from grounding.build import build_index, index_dir, read_meta
from grounding.embedder import canonical_name, get_embedder
from grounding.ground import Grounder
from grounding.static_embedder import STATIC_DIR, StaticEmbedder, fingerprint_files
from kb_dumps.label_memory import LabelMemory
from kb_dumps.stage_errors import KBQAError


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The same 25-row Wikidata fixture indexed once with each embedder."""
    base = make_store(tmp_path_factory.mktemp("emb") / "base", "wikidata_tiny.json")
    out = {}
    for name in ("minilm-static", "minilm"):
        root = base.with_name(name)
        shutil.copytree(base, root)
        stats = build_index(root, model=name, progress=False)
        assert stats.rebuilt and stats.embedded_rows == stats.rows == 25
        out[name] = root
    return out


def exact_label_queries(root: Path) -> list[tuple[str, str, str]]:
    """(label, kind, id) for every label that names exactly one row."""
    mem = LabelMemory(root / "labels.sqlite", readonly=True)
    rows = [r for r in mem.iter_rows() if r.label]
    mem.close()
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.label.lower()] = counts.get(r.label.lower(), 0) + 1
    return [(r.label, r.kind, r.id) for r in rows if counts[r.label.lower()] == 1]


def test_names_are_canonical():
    assert canonical_name(None) == canonical_name("static") == "minilm-static"
    assert canonical_name("all-MiniLM-L6-v2") == canonical_name("sentence-transformers/all-MiniLM-L6-v2") == "minilm"


def test_static_model_files_match_their_fingerprint():
    emb = StaticEmbedder()
    assert emb.fingerprint == fingerprint_files(STATIC_DIR)
    vecs = emb.encode(["place of birth", "birthplace", "chemical element", "☃☃", ""])
    assert vecs.shape == (5, emb.dim) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)  # never a zero vector (hnswlib divides)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2]  # meaning, not noise
    assert np.allclose(emb.encode_one("birthplace"), vecs[1], atol=1e-6)


@pytest.mark.parametrize("name", ["minilm-static", "minilm"])
def test_build_persist_reopen(stores: dict[str, Path], name: str):
    root = stores[name]
    meta = read_meta(root)
    assert meta["embedder"] == name and meta["fingerprint"] == get_embedder(name).fingerprint
    queries = exact_label_queries(root)
    g = Grounder(root)
    first = [g.ground(label, None, kind, k=3)[0].id for label, kind, _ in queries]
    g.close()
    assert build_index(root, model=name, progress=False).embedded_rows == 0  # up to date: nothing re-embedded
    reopened = Grounder(root)
    assert [reopened.ground(label, None, kind, k=3)[0].id for label, kind, _ in queries] == first
    reopened.close()
    assert first == [gold for _, _, gold in queries]


def test_both_embedders_agree_on_exact_labels(stores: dict[str, Path]):
    tops = {}
    for name, root in stores.items():
        g = Grounder(root)
        tops[name] = [g.ground(label, None, kind, k=1)[0].id for label, kind, _ in exact_label_queries(root)]
        g.close()
    assert tops["minilm-static"] == tops["minilm"]


def test_mismatched_embedder_is_refused(stores: dict[str, Path]):
    root = stores["minilm-static"]
    for kwargs in ({"model": "minilm"}, {"embedder": get_embedder("minilm")}):
        with pytest.raises(KBQAError) as e:
            Grounder(root, **kwargs)
        msg = e.value.info.message
        assert "\n" not in msg and f"kbqa index --store {root} --rebuild --embedder minilm" in msg


def _tampered(root: Path, tmp_path: Path, **changes) -> Path:
    copy = tmp_path / root.name
    shutil.copytree(root, copy)
    meta_path = index_dir(copy) / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta.update(changes)
    meta_path.write_text(json.dumps({k: v for k, v in meta.items() if v is not None}))
    return copy


def test_other_model_version_is_refused(stores: dict[str, Path], tmp_path: Path):
    copy = _tampered(stores["minilm-static"], tmp_path, fingerprint="sha256:0000000000000000")
    g = Grounder(copy)  # the check runs when the embedder loads (for MiniLM: not before it is needed)
    with pytest.raises(KBQAError) as e:
        g.ground("Paris")
    assert "another version of minilm-static" in e.value.info.message and "--rebuild" in e.value.info.message
    g.close()
    # `kbqa index` notices the same mismatch and rebuilds instead of mixing vectors
    assert build_index(copy, progress=False).rebuilt


def test_old_format_is_refused(stores: dict[str, Path], tmp_path: Path):
    copy = _tampered(stores["minilm-static"], tmp_path, format=1, embedder=None, fingerprint=None)
    with pytest.raises(KBQAError) as e:
        Grounder(copy)
    assert f"kbqa index --store {copy} --rebuild" in e.value.info.message
