"""Shapes proposed whatever cue words a question uses (explore/propose/ungated.py), and predicate names found when the
question writes them with another ending or with the words joined (explore/link/name_match.py `name_score`). Questions,
paraphrases and negatives written for these tests over the zoo fixture and a tiny library KG made here."""

from __future__ import annotations

from pathlib import Path

import pytest

from kb_dumps.ingest import ingest
from kbqa.translators.explore import ExploreTranslator
from kbqa.translators.explore.link.name_match import name_score, same_root
from kbqa.translators.explore.link.words import link_schema

ROOT = Path(__file__).resolve().parents[1]
ZOO = ROOT / "tests" / "fixtures" / "explore" / "zoo.ttl"
LIB = "http://example.org/lib/"
LIBRARY = f"""@prefix ex: <{LIB}> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:Book a rdfs:Class ; rdfs:label "book" .
ex:writtenBy rdfs:label "written by" .
ex:shelfcode rdfs:label "shelfcode" .
ex:pages rdfs:label "pages" .
ex:location rdfs:label "location" .
ex:b1 ex:location "north wing" . ex:b2 ex:location "south wing" . ex:b3 ex:location "north wing" .
ex:b1 a ex:Book ; rdfs:label "Salt Roads" ; ex:writtenBy "Ines Moreau" ; ex:shelfcode "A1" ; ex:pages 320 .
ex:b2 a ex:Book ; rdfs:label "Glass Harbour" ; ex:writtenBy "Tomas Lind" ; ex:shelfcode "A1" ; ex:pages 210 .
ex:b3 a ex:Book ; rdfs:label "Quiet Orchard" ; ex:writtenBy "Ines Moreau" ; ex:shelfcode "B4" ; ex:pages 150 .
"""


@pytest.fixture(scope="module")
def zoo(ingest_dumps) -> ExploreTranslator:
    tr = ExploreTranslator(ingest_dumps([ZOO], "zoo"))
    yield tr
    tr.close()


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> ExploreTranslator:
    folder = tmp_path_factory.mktemp("ungated")
    (folder / "library.ttl").write_text(LIBRARY, encoding="utf-8")
    ingest([folder / "library.ttl"], folder / "library", profile="generic", progress=False)
    tr = ExploreTranslator(folder / "library")
    yield tr
    tr.close()


def _shapes(tr: ExploreTranslator, question: str) -> list:
    _a, ranked, _info = tr.search(question)
    return ranked


def test_an_aggregate_no_cue_word_names_is_still_proposed(zoo: ExploreTranslator) -> None:
    # "typical" is in no word list: the AVG of the linked numeric attribute is there all the same, marked ungated
    for q in ("What is the typical weight of the animals?", "Typical animal weight?"):
        got = [g for g in _shapes(zoo, q) if g.aggs and g.aggs[0][0] == "AVG"]
        assert got and all(g.features.get("ungated") == 1.0 for g in got), q
    # nothing numeric is named: no aggregate over an attribute
    assert not [g for g in _shapes(zoo, "Which enclosures are there?") if g.aggs and g.aggs[0][1]]


def test_group_by_shapes_project_their_count(zoo: ExploreTranslator) -> None:
    grouped = [g for g in _shapes(zoo, "Animals and their species, please.") if g.group and g.aggs]
    assert grouped
    from kbqa.translators.explore.lower.text import write

    sparql = write(grouped[0], zoo.schema, desq=False)
    assert "COUNT(" in sparql.split("WHERE")[0]  # the count is a column beside the group key


def test_a_cue_reading_keeps_its_features_over_the_ungated_copy(zoo: ExploreTranslator) -> None:
    counts = [g for g in _shapes(zoo, "How many animals are there?") if g.aggs == [("COUNT", None)] and not g.conds]
    assert counts and not counts[0].features.get("ungated")  # read from "how many": one candidate, the cue's


def test_same_root_and_joined_names() -> None:
    assert same_root("director", "directed") and same_root("location", "located")
    assert not same_root("dire", "direct") and not same_root("planet", "plane")
    assert name_score(["shelf", "code"], ["shelfcode"]) == 0.95
    assert name_score(["writer"], ["written"]) < 0.8  # "writ" is too short a common start


def test_predicate_names_written_another_way_are_linked(library: ExploreTranslator) -> None:
    linked = lambda q: {lk.iri for lk in link_schema(q, library.schema) if lk.kind == "predicate"}  # noqa: E731
    assert LIB + "shelfcode" in linked("List each book with its shelf code.")
    assert LIB + "shelfcode" in linked("Which shelf code holds the most books?")
    assert LIB + "location" in linked("Where is each book located?")  # one root, another ending
    assert LIB + "location" in linked("The books, and where they are located.")
    assert not linked("Show every book.") & {LIB + "shelfcode", LIB + "writtenBy"}
    # end to end: the most common shelf code, found with no cue list naming "holds the most"
    best = _shapes(library, "Which shelf code holds the most books?")
    assert any(g.group and g.order and g.limit == 1 for g in best)


def test_different_values_are_counted(library: ExploreTranslator) -> None:
    from kbqa.translators.explore.lower.text import write

    for q in ("How many different shelf codes are there?", "Number of distinct shelf codes in the library?"):
        got = [g for g in _shapes(library, q) if g.aggs and g.aggs[0][0] == "COUNT_DISTINCT"]
        assert got, q
        assert "COUNT(DISTINCT " in write(got[0], library.schema, desq=False)
        res = library.store.query(write(got[0], library.schema, desq=False))
        assert int(res.rows[0][0]["value"]) == 2  # A1 and B4
    # no attribute named: nothing to count the values of
    assert not [g for g in _shapes(library, "How many books are there?") if g.aggs and g.aggs[0][0] == "COUNT_DISTINCT"]


def test_a_name_in_another_word_order_is_linked(zoo: ExploreTranslator) -> None:
    score = lambda q: max((lk.score for lk in link_schema(q, zoo.schema)  # noqa: E731
                           if lk.iri == "http://example.org/zoo/bornYear"), default=0.0)
    assert score("What is the year of birth of Leo?") >= 0.9
    assert score("Give the year of birth for each lion.") >= 0.9
    assert score("Which year had the most visitors?") < 0.9  # one word of the name is not the name


def test_items_are_also_shown_by_their_display_column(library: ExploreTranslator, zoo: ExploreTranslator) -> None:
    from kbqa.translators.explore.propose.display import DisplayColumns

    # every text attribute of the books repeats (two writers, two shelves, two wings for three books): none names
    # the books apart
    assert DisplayColumns(library.schema, library.store).of(LIB + "Book") is None
    cols = DisplayColumns(zoo.schema, zoo.store)
    assert cols.of("http://example.org/zoo/Keeper") == "http://example.org/zoo/name"  # one name per keeper
    assert cols.of("http://example.org/zoo/Animal") is None  # species and birth years repeat
    shown = [g for g in _shapes(zoo, "Which keepers are there?") if g.features.get("display")]
    assert shown and (("http://example.org/zoo/name",) in [tuple(s.pred for s in p) for p in shown[0].answer])


def test_a_predicate_named_after_its_class_is_linked_by_its_own_words(tmp_path: Path) -> None:
    ttl = """@prefix ex: <http://example.org/fest/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:Festival a rdfs:Class ; rdfs:label "festival" .
ex:festivalName rdfs:label "festival name" .
ex:town rdfs:label "town" .
ex:f1 a ex:Festival ; ex:festivalName "Lantern Nights" ; ex:town "Ostrava" .
ex:f2 a ex:Festival ; ex:festivalName "River Jazz" ; ex:town "Brno" .
"""
    (tmp_path / "fest.ttl").write_text(ttl, encoding="utf-8")
    ingest([tmp_path / "fest.ttl"], tmp_path / "fest", profile="generic", progress=False)
    tr = ExploreTranslator(tmp_path / "fest")
    try:
        linked = lambda q: {lk.iri for lk in link_schema(q, tr.schema) if lk.kind == "predicate"}  # noqa: E731
        assert "http://example.org/fest/festivalName" in linked("What are the names and towns of festivals?")
        assert "http://example.org/fest/festivalName" in linked("Give each festival's name.")
        assert "http://example.org/fest/festivalName" not in linked("Which towns host a festival?")
    finally:
        tr.close()
