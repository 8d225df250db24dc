"""The query worker (timeout, row cap, SERVICE refused), `kbqa sparql`, and the bundled wikidata-mini contents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kb_dumps.ingest import ingest
from kb_dumps.label_memory import LabelMemory
from kb_dumps.layout import StoreLayout
from kb_dumps.stage_errors import QueryError
from kb_dumps.store import LocalStore, check_query_text

WD = "http://www.wikidata.org/entity/"
WDT = "http://www.wikidata.org/prop/direct/"


@pytest.fixture(scope="module")
def grid_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3,000 triples: a triple cross product over them takes far longer than a second."""
    src = tmp_path_factory.mktemp("grid") / "grid.nt"
    src.write_text("".join(f"<http://e.org/s{i}> <http://e.org/p{i % 7}> <http://e.org/o{i % 101}> .\n"
                           for i in range(3000)))
    store = src.parent / "kb"
    ingest([src], store, progress=False)
    return store


def test_slow_query_is_stopped_and_the_next_one_answers(grid_store: Path) -> None:
    with LocalStore(grid_store, timeout_s=1.0) as store:
        with pytest.raises(QueryError) as e:
            store.query("SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }")
        assert e.value.timed_out
        assert "time budget" in str(e.value)
        assert store.restarts == 1
        res = store.query("SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c }")
        assert res.rows[0][0]["value"] == "3000"


def test_row_cap_truncates(grid_store: Path) -> None:
    with LocalStore(grid_store, row_cap=10) as store:
        res = store.query("SELECT ?s WHERE { ?s ?p ?o }")
        assert len(res.rows) == 10 and res.truncated


@pytest.mark.parametrize("query", [
    "SELECT * WHERE { SERVICE <http://example.org/sparql> { ?s ?p ?o } }",
    "SELECT * WHERE { service <http://example.org/sparql> { ?s ?p ?o } }",
    "SELECT ?x WHERE { ?x ?p ?o SERVICE wikibase:label { bd:serviceParam wikibase:language \"en\" } }",
    "INSERT DATA { <http://a> <http://b> <http://c> }",
    "DROP ALL",
])
def test_service_and_updates_refused_before_running(grid_store: Path, query: str) -> None:
    with LocalStore(grid_store) as store:
        with pytest.raises(QueryError, match="refused"):
            store.query(query)
        # the check runs in the worker, under the query's deadline, before anything runs: the worker lives on
        proc = store._proc
        assert store.query("ASK { ?s ?p ?o }").boolean is True and store._proc is proc and store.restarts == 0


def test_service_inside_strings_iris_and_names_is_not_refused() -> None:
    check_query_text('SELECT ?x WHERE { ?x <http://e.org/SERVICE> "SERVICE { }" . ?x ex:SERVICE ?y } # SERVICE')


def test_bad_query_is_a_clear_error(grid_store: Path) -> None:
    with LocalStore(grid_store) as store:
        with pytest.raises(QueryError, match="does not parse"):
            store.query("SELECT ?x WHERE { ?x ")
        assert store.query("ASK { ?s ?p ?o }").boolean is True  # the worker survives


def test_inverse_simplequestions_triples_are_swapped(wikidata_mini_store: Path) -> None:
    # train_answerable: "Q12439 R19 Q6106580  who is a musician born in detroit" -> Q6106580 P19 Q12439
    with LocalStore(wikidata_mini_store) as store:
        assert store.ask(f"ASK {{ <{WD}Q6106580> <{WDT}P19> <{WD}Q12439> }}")
        assert not store.ask(f"ASK {{ <{WD}Q12439> <{WDT}P19> <{WD}Q6106580> }}")
        # and a direct one: "Q318926 P19 Q1010  where was sasha vujačić born"
        assert store.ask(f"ASK {{ <{WD}Q318926> <{WDT}P19> <{WD}Q1010> }}")


def test_wikidata_mini_label_memory_known_rows(wikidata_mini_store: Path) -> None:
    mem = LabelMemory(StoreLayout.of(wikidata_mini_store).labels, readonly=True)
    p19 = mem.get(WD + "P19")
    assert (p19.kind, p19.label) == ("property", "place of birth")
    assert "birthplace" in p19.aliases
    assert p19.description.startswith("most specific known")
    assert p19.popularity > 1000  # used as a predicate in thousands of statements
    chicago = mem.get(WD + "Q1297")
    assert (chicago.kind, chicago.label) == ("entity", "Chicago")
    assert chicago.popularity > 100
    human = mem.get(WD + "Q5")
    assert human.label == "human" and human.description.startswith("common name of Homo sapiens")
    assert mem.get(WD + "Q6106580").label  # entity of the label maps, labelled
    # entities of the LC-QuAD label map are kept even with no fact about them in the store
    with LocalStore(wikidata_mini_store) as store:
        only_label = store.query(
            "SELECT ?s WHERE { ?s <http://www.w3.org/2000/01/rdf-schema#label> \"universe\"@en }").rows
    assert only_label and mem.get(only_label[0][0]["value"]).label == "universe"
    assert len(mem) > 100_000


def test_bestiary_sample_loads(bestiary_store: Path) -> None:
    manifest = StoreLayout.of(bestiary_store).manifest()
    assert manifest["profile"] == "generic"
    assert manifest["triples"] > 90_000
    with LocalStore(bestiary_store) as store:
        res = store.query("SELECT (COUNT(*) AS ?n) WHERE { ?s <http://www.semanticweb.org/annab/ontologies/2022/3/"
                          "ontology#hasAlignment> ?o }")
        assert int(res.rows[0][0]["value"]) > 4000
    # BESTIARY has no rdfs:label: the generic profile labels ids from their IRI local names.
    mem = LabelMemory(StoreLayout.of(bestiary_store).labels, readonly=True)
    ns = "http://www.semanticweb.org/annab/ontologies/2022/3/ontology#"
    assert mem.get(ns + "chaoticGood").label == "chaotic good"
    has_alignment = mem.get(ns + "hasAlignment")
    assert (has_alignment.kind, has_alignment.label) == ("property", "has alignment")
    assert has_alignment.popularity > 4000


def test_cli_sparql_formats_and_timeout(grid_store: Path, wikidata_mini_store: Path, run_cli) -> None:  # noqa: ANN001
    code, out, err = run_cli("sparql", "SELECT ?o WHERE { wd:Q318926 wdt:P19 ?o }", "--store", wikidata_mini_store)
    assert code == 0 and "wd:Q1010" in out
    code, out, err = run_cli("sparql", "SELECT ?o WHERE { wd:Q318926 wdt:P19 ?o }", "--store", wikidata_mini_store,
                             "--format", "json")
    assert json.loads(out)["rows"] == [[{"type": "uri", "value": WD + "Q1010"}]]
    code, out, err = run_cli("sparql", "SELECT ?o WHERE { wd:Q318926 wdt:P19 ?o }", "--store", wikidata_mini_store,
                             "--format", "csv")
    assert out.splitlines() == ["o", "wd:Q1010"]
    code, out, err = run_cli("sparql", "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }",
                             "--store", grid_store, "--timeout", "1")
    assert code == 4 and "time budget" in err and "Traceback" not in err
    code, out, err = run_cli("sparql", "SELECT ?x WHERE {", "--store", grid_store)
    assert code == 3 and "does not parse" in err
    code, out, err = run_cli("sparql", "SELECT ?o WHERE { wd:Q1 wdt:P19 ?o }", "--store", wikidata_mini_store)
    assert code == 1  # a query with no answer
    code, out, err = run_cli("sparql", "SELECT * WHERE { ?s ?p ?o }", "--store", grid_store / "missing")
    assert code == 4 and "no store" in err
