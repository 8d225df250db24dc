"""The grounding index: persistence, incremental update, lexical blocking, other KBs, and the CLI verbs."""

from __future__ import annotations

import json
import string
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_grounding import WD, add_rows, make_store

from grounding.build import build_index, read_meta
from grounding.embedder import get_embedder, resolve_model
from grounding.ground import Grounder
from grounding.lexical_index import LexicalIndex
from grounding.text import normalize
from kbqa.cli import main as kbqa_main

FB = "http://rdf.freebase.com/ns/"
BESTIARY = "http://www.semanticweb.org/bestiary/"
QUERIES = [("Albert Einstien", None, None), ("Paris", "city in Texas", None), ("country", None, "property"),
           ("nationality", None, None), ("place of birth", None, "property")]


@pytest.fixture(scope="module")
def embedder():
    return get_embedder()  # the default (static) embedder, the one build_index uses


def snapshot(g: Grounder) -> list[list[tuple[str, float]]]:
    return [[(c.id, c.score) for c in g.ground(q, d, kd, k=5)] for q, d, kd in QUERIES]


def test_bundled_model_loads_offline():
    assert Path(resolve_model("all-MiniLM-L6-v2")).is_dir()
    embedder = get_embedder("all-MiniLM-L6-v2")
    vecs = embedder.encode(["place of birth", "birthplace", "chemical element"], progress=False)
    assert vecs.shape == (3, embedder.dim)
    assert abs(float((vecs[0] ** 2).sum()) - 1.0) < 1e-4  # unit length
    assert float(vecs[0] @ vecs[1]) > float(vecs[0] @ vecs[2])
    assert get_embedder("all-MiniLM-L6-v2") is embedder  # one load per process


def test_persistence_build_reopen_same_results(tmp_path, embedder):
    root = make_store(tmp_path / "s", "wikidata_tiny.json")
    stats = build_index(root, progress=False)
    assert stats.rebuilt and stats.embedded_rows == stats.rows == 25
    assert stats.vectors >= stats.rows  # plus one vector per alias
    first = Grounder(root, embedder=embedder)
    before = snapshot(first)
    first.close()
    again = build_index(root, progress=False)  # nothing changed: nothing embedded
    assert again.embedded_rows == 0 and not again.rebuilt
    reopened = Grounder(root, embedder=embedder)
    assert snapshot(reopened) == before
    reopened.close()
    assert read_meta(root)["generation"] == 1


def test_incremental_update_after_append(tmp_path, embedder):
    root = make_store(tmp_path / "s", "wikidata_tiny.json")
    build_index(root, progress=False)
    new = [{"id": WD + "Q42", "kind": "entity", "label": "Douglas Adams", "aliases": ["DNA"],
            "description": "English writer and humorist", "popularity": 50},
           {"id": WD + "P50", "kind": "property", "label": "author", "aliases": ["writer", "written by"],
            "description": "main creator of a written work", "popularity": 30}]
    gen = add_rows(root, new)
    assert gen == 2
    stale = Grounder(root, embedder=embedder)
    assert all(c.id != WD + "Q42" for c in stale.ground("Douglas Adams"))  # not indexed yet
    stale.close()
    stats = build_index(root, progress=False)
    assert not stats.rebuilt and stats.embedded_rows == 2 and stats.generation == 2
    g = Grounder(root, embedder=embedder)
    assert g.ground("Douglas Adams")[0].id == WD + "Q42"
    assert g.ground("written by", kind="property")[0].id == WD + "P50"
    assert g.ground("", description="English humorist and writer")[0].id == WD + "Q42"
    incremental = snapshot(g)
    g.close()
    build_index(root, rebuild=True, progress=False)
    full = Grounder(root, embedder=embedder)
    assert [[c for c, _ in q] for q in snapshot(full)] == [[c for c, _ in q] for q in incremental]
    full.close()


def test_incremental_reembeds_a_changed_row(tmp_path, embedder):
    root = make_store(tmp_path / "s", "wikidata_tiny.json")
    build_index(root, progress=False)
    # a later ingest adds an alias to an existing row: its vectors are replaced, not duplicated
    add_rows(root, [{"id": WD + "Q64", "kind": "entity", "label": "Berlin", "aliases": ["Spree-Athen"]}])
    stats = build_index(root, progress=False)
    assert stats.embedded_rows == 1
    g = Grounder(root, embedder=embedder)
    hits = g.ground("Spree-Athen")
    assert hits[0].id == WD + "Q64"
    assert [c.id for c in g.ground("Berlin", k=10)].count(WD + "Q64") == 1
    g.close()


def test_missing_index_or_memory_is_a_clear_error(tmp_path):
    from kb_dumps.stage_errors import KBQAError

    with pytest.raises(KBQAError, match="kbqa ingest"):
        build_index(tmp_path / "nowhere", progress=False)
    root = make_store(tmp_path / "s", "wikidata_tiny.json")
    with pytest.raises(KBQAError, match="kbqa index"):
        Grounder(root)


def test_lexical_blocking_reads_few_names():
    rows = [(i, "entity", f"{w} {v}", []) for i, (w, v) in
            enumerate((a + b + c, d) for a in string.ascii_lowercase for b in "aeiou" for c in "nrst"
                      for d in ("river", "lake", "hill"))]
    rows.append((99_999, "entity", "Saša Vujačić", ["Sasha"]))
    lex = LexicalIndex.build(rows)
    part = lex.parts["entity"]
    assert len(part) == len(rows) + 1
    assert len(part.block(normalize("ban river"), pool=50)) <= 50  # never the whole lexicon
    hits = lex.search("Ban river", n=5)
    assert hits[0].score == 1.0 and rows[hits[0].rowid][2] == "ban river"
    assert lex.search("sasa vujacic", n=1)[0].rowid == 99_999
    typo = lex.search("Sasa Vujacc", n=1)[0]
    assert typo.rowid == 99_999 and 0.8 < typo.score < 1.0
    alias = lex.search("sasha", n=1)[0]
    assert alias.rowid == 99_999 and alias.alias
    assert lex.search("zzzzqqqq", n=5, kind="property") == []


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=40))
def test_normalize_is_idempotent_and_plain(text):
    norm = normalize(text)
    assert normalize(norm) == norm
    assert norm == norm.strip() and "  " not in norm and "_" not in norm


def test_freebase_ids(tmp_path, embedder):
    root = make_store(tmp_path / "fb", "freebase_tiny.json")
    build_index(root, progress=False)
    g = Grounder(root, embedder=embedder)
    assert g.profile.name == "freebase"
    assert g.ground("place_of_birth", kind="property")[0].id == FB + "people.person.place_of_birth"
    assert g.ground("barack obama")[0].id == FB + "m.02mjmr"
    assert g.ground("person", kind="class")[0].id == FB + "people.person"
    kept = g.correct("ns:people.person.place_of_birth", "place of birth", kind="property")
    assert (kept.action, kept.uri) == ("kept", FB + "people.person.place_of_birth")
    nat = g.search("nationality", kind="property", context={"subject": "ns:m.02mjmr"})
    assert nat.context_used and nat.candidates[0].id == FB + "people.person.nationality"
    g.close()


def test_plain_iris_with_rdfs_label(tmp_path, embedder):
    root = make_store(tmp_path / "b", "bestiary_tiny.json")
    build_index(root, progress=False)
    g = Grounder(root, embedder=embedder)
    assert g.profile.name == "generic"
    assert g.ground("red dragon")[0].id == BESTIARY + "RedDragon"
    assert g.ground("gryphon")[0].id == BESTIARY + "Griffin"
    assert g.ground("habitat", kind="property")[0].id == BESTIARY + "hasHabitat"
    lives = g.search("Mountains", kind="entity",
                     context={"subject": BESTIARY + "Griffin", "property": BESTIARY + "hasHabitat"})
    assert lives.context_used and lives.candidates[0].signals["context"] == 1.0
    g.close()


def test_cli_index_and_ground(tmp_path, capsys, embedder):
    root = make_store(tmp_path / "s", "wikidata_tiny.json")
    assert kbqa_main(["index", "--store", str(root), "--format", "json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["embedded_rows"] == 25
    assert kbqa_main(["index", "--store", str(root)]) == 0
    assert "up to date" in capsys.readouterr().out
    assert kbqa_main(["ground", "place of birth", "--kind", "property", "--store", str(root),
                      "--format", "json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["candidates"][0]["id"] == WD + "P19"
    assert kbqa_main(["ground", "Paris", "--description", "city in Texas", "--store", str(root)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[2] == "wd:Q830149"
    assert kbqa_main(["ground", "xqzv blorft", "--kind", "entity", "--store", str(root)]) == 1
    assert "no grounding" in capsys.readouterr().out
    assert kbqa_main(["ground", "   ", "--store", str(root)]) == 3
    assert "[ground]" in capsys.readouterr().err
    assert kbqa_main(["ground", "place of birth", "--guess", "wdt:P20", "--kind", "property",
                      "--store", str(root)]) == 0
    assert capsys.readouterr().out.startswith("replaced: wd:P19")


def _nt(triples: list[tuple[str, str, str]]) -> str:
    return "".join(f"<{s}> <{p}> {o} .\n" for s, p, o in triples)


def test_incremental_after_real_ingest_append(tmp_path, embedder):
    from kb_dumps.ingest import ingest

    label, desc = "http://www.w3.org/2000/01/rdf-schema#label", "http://schema.org/description"
    wdt = "http://www.wikidata.org/prop/direct/"
    first = tmp_path / "first.nt"
    first.write_text(_nt([
        (WD + "Q937", label, '"Albert Einstein"@en'), (WD + "Q937", desc, '"theoretical physicist"@en'),
        (WD + "Q3012", label, '"Ulm"@en'), (WD + "P19", label, '"place of birth"@en'),
        (WD + "Q937", wdt + "P19", f"<{WD}Q3012>")]), encoding="utf-8")
    second = tmp_path / "second.nt"
    second.write_text(_nt([
        (WD + "Q42", label, '"Douglas Adams"@en'), (WD + "Q42", desc, '"English writer"@en'),
        (WD + "Q350", label, '"Cambridge"@en'), (WD + "Q42", wdt + "P19", f"<{WD}Q350>")]), encoding="utf-8")
    store = tmp_path / "kb"
    ingest([first], store, profile="wikidata", progress=False)
    assert build_index(store, progress=False).embedded_rows >= 3
    ingest([second], store, append=True, progress=False)
    stats = build_index(store, progress=False)
    assert not stats.rebuilt and stats.generation == 2
    assert 2 <= stats.embedded_rows < stats.rows  # only the appended rows (and rows they touched)
    g = Grounder(store, embedder=embedder)
    assert g.ground("Douglas Adams")[0].id == WD + "Q42"
    assert g.ground("place_of_birth", kind="property")[0].id == WD + "P19"
    born = g.search("Cambridge", kind="entity", context={"subject": "wd:Q42", "property": "wdt:P19"})
    assert born.candidates[0].id == WD + "Q350" and born.candidates[0].signals["context"] == 1.0
    g.close()


def test_postings_read_grow_with_the_lexicon(monkeypatch):
    """A query reads at least POSTING_BUDGET postings, and more in a larger lexicon (a fixed budget stops before
    the lists a misspelt name shares with its row once the lists are long); a small lexicon reads them whole."""
    import grounding.lexical_index as lexical_index

    floor, per = lexical_index.POSTING_BUDGET, lexical_index.NAMES_PER_POSTING
    assert lexical_index.posting_budget(0) == floor
    assert lexical_index.posting_budget(floor * per) == floor
    assert lexical_index.posting_budget(10 * floor * per) == 10 * floor
    # a tiny budget still finds a misspelt name in a small lexicon: the first list is always read whole
    monkeypatch.setattr(lexical_index, "POSTING_BUDGET", 1)
    monkeypatch.setattr(lexical_index, "NAMES_PER_POSTING", 10**9)
    rows = [(i, "entity", label, []) for i, label in enumerate(["Paris Hilton", "Paris", "Hilton Head", "Parish"])]
    hits = LexicalIndex.build(rows).search("pars hiltn", 4)
    assert hits and hits[0].rowid == 0
