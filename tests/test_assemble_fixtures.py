"""The 30 hand-written DeSQ texts for real benchmark questions: compiled answers equal the gold query's answers.

Stores: the bundled `bestiary` and `wikidata-mini` samples (session fixtures) and `qualifier.nt` (a few
p:/ps:/pq: statements: the samples keep only truthy wdt: triples). Embedding a whole sample's label
memory takes minutes, so grounding runs on a *slice*: the same pyoxigraph store (so gold and compiled
queries see the same triples) with a label memory cut to the rows whose label or alias matches a
fixture label, plus every Nth row as distractors, and the real Grounder (lexical + vector) over it.
About half of the fixtures guess no URI, so grounding does the work; `bench/assembly.py` runs the same
fixtures on the fully indexed stores.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from eval.answer_metrics import as_answers
from grounding.build import build_index
from grounding.embedder import get_embedder
from grounding.ground import Grounder
from kb_dumps.ingest import ingest
from kb_dumps.label_memory import LabelMemory
from kb_dumps.layout import StoreLayout
from kb_dumps.store import LocalStore
from kbqa.frontends.desq import parse_desq
from kbqa.pipeline import Engine

FIXTURES = Path(__file__).parent / "fixtures" / "desq_real"
SPEC = json.loads((FIXTURES / "fixtures.json").read_text(encoding="utf-8"))["fixtures"]
REQUIRED = {"OPTIONAL", "MINUS", "UNION", "COUNT", "ASK", "ORDER BY", "LIMIT", "QUALIFIER", "PATH"}


def _fixture_labels(store: str) -> tuple[set[str], set[str]]:
    labels, uris = set(), set()
    for f in SPEC:
        if f["store"] != store:
            continue
        for g in parse_desq((FIXTURES / f["file"]).read_text(encoding="utf-8")).grounding:
            labels.add(g.label.lower())
            if g.uri:
                uris.add(g.uri)
    return labels, uris


_STOP = {"has", "the", "of", "and", "language", "value", "can", "a", "an"}


def slice_store(src: Path, dest: Path, labels: set[str], uris: set[str], every: int, words: bool = False) -> Path:
    """A store sharing `src`'s triples, with a label memory cut to the rows a fixture could match: a label
    or alias equal to a fixture label or starting with it (`words`: sharing a word with one), a guessed
    URI, and every `every`-th row as distractors."""
    vocabulary = {w for lab in labels for w in lab.split() if len(w) > 2 and w not in _STOP}
    layout = StoreLayout.of(src)
    dest.mkdir(parents=True)
    (dest / "oxigraph").symlink_to(layout.oxigraph, target_is_directory=True)
    shutil.copy(layout.manifest_path, dest / "manifest.json")
    src_mem = LabelMemory(layout.labels, readonly=True)
    keep: dict[str, object] = {}
    for row in src_mem.iter_rows():
        names = [row.label.lower(), *(a.lower() for a in row.aliases)]
        if words:
            related = any(w in vocabulary for n in names for w in n.split())
        else:
            related = any(n == lab or n.startswith(lab + " ") or lab.startswith(n + " ") for n in names if n
                          for lab in labels)
        wikidata_prop = "/entity/P" in row.id and row.id.replace("/entity/", "/prop/direct/") in uris
        if related or row.id in uris or wikidata_prop or (row.rowid or 0) % every == 0:
            keep[row.id] = row
    src_mem.close()
    mem = LabelMemory(dest / "labels.sqlite")
    gen = mem.begin_generation()
    mem.merge_texts({i: {"label": r.label, "aliases": r.aliases, "description": r.description, "kind": r.kind}
                     for i, r in keep.items()}, gen)
    mem.add_popularity({i: r.popularity for i, r in keep.items()}, gen)
    mem.commit()
    mem.close()
    build_index(dest, progress=False)
    return dest


@pytest.fixture(scope="module")
def engines(wikidata_mini_store: Path, bestiary_store: Path, tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("desq_real")
    qualifier = root / "qualifier"
    ingest([FIXTURES / "qualifier.nt"], qualifier, profile="wikidata", progress=False)
    dirs = {"wikidata-mini": slice_store(wikidata_mini_store, root / "wdm", *_fixture_labels("wikidata-mini"), 200),
            "bestiary": slice_store(bestiary_store, root / "best", *_fixture_labels("bestiary"), 8,
                                     words=True),
            "qualifier": qualifier}  # no index: its guessed URIs are checked against the label memory
    out = {}
    for name, path in dirs.items():
        grounder = None
        if name != "qualifier":
            grounder = Grounder(path, embedder=get_embedder())
        out[name] = (Engine(path, grounder=grounder, timeout_s=30), LocalStore(path, timeout_s=30))
    yield out
    for engine, store in out.values():
        engine.close()
        store.close()


def test_fixtures_cover_the_required_constructs() -> None:
    assert len(SPEC) == 30
    features = {f for spec in SPEC for f in spec["features"]}
    assert REQUIRED <= features, REQUIRED - features
    no_guess = [s for s in SPEC if not any(g.uri for g in parse_desq((FIXTURES / s["file"]).read_text()).grounding)]
    assert len(no_guess) >= 12  # grounding does the work for these


@pytest.mark.parametrize("spec", SPEC, ids=[s["file"].removesuffix(".desq") for s in SPEC])
def test_fixture_answers_equal_gold(spec: dict, engines: dict) -> None:
    engine, store = engines[spec["store"]]
    result = engine.compile((FIXTURES / spec["file"]).read_text(encoding="utf-8"))
    grounding = {g.name: [(c.id.rsplit("/", 1)[-1], c.score) for c in g.candidates[:3]] for g in result.grounding}
    assert result.status == "ok", ([str(e) for e in result.errors], grounding)
    gold = as_answers(store.query(spec["gold_sparql"]))
    assert not gold.empty and (gold.kind == "ask" or gold.rows)
    got = as_answers(result.answers.to_result_dict())
    if gold.kind == "ask":
        assert got.boolean == gold.boolean
    else:
        assert got.rows == gold.rows, result.sparql
    assert json.loads(json.dumps(result.to_dict()))["sparql"] == result.sparql
