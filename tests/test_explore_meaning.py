"""Predicates named by a word of like meaning (explore/link/meaning.py), and readings that may be no constraint
(explore/propose/search.py `_link_readings`): the focus class's own word read as a value, a weakly named related
item. A small clubs KG written for these tests; questions, paraphrases and negatives written for them."""

from __future__ import annotations

import pytest

from kbqa.translators.explore import ExploreTranslator
from kbqa.translators.explore.link.words import Link
from kbqa.translators.explore.propose.search import Search

NS = "http://example.org/clubs/"
CLUBS = f"""@prefix c: <{NS}club#> .
@prefix m: <{NS}member#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
<{NS}club> a rdfs:Class ; rdfs:label "club" .
<{NS}member> a rdfs:Class ; rdfs:label "member" .
<{NS}club/1> a <{NS}club> ; c:clubname "Chess Circle" ; c:clublocation "Hall B" ; c:clubdesc "board games" .
<{NS}club/2> a <{NS}club> ; c:clubname "Rowing Crew" ; c:clublocation "Boathouse" ; c:clubdesc "river sport" .
<{NS}member/1> a <{NS}member> ; m:fname "Nora" ; m:lname "Quist" ; m:age 31 ; m:role "member" ;
    m:nationality "Norway" ; m:ref-club <{NS}club/1> .
<{NS}member/2> a <{NS}member> ; m:fname "Ivo" ; m:lname "Berg" ; m:age 45 ; m:role "captain" ;
    m:nationality "Norway" ; m:ref-club <{NS}club/2> .
<{NS}member/3> a <{NS}member> ; m:fname "Ada" ; m:lname "Lind" ; m:age 28 ; m:role "member" ;
    m:nationality "Sweden" ; m:ref-club <{NS}club/2> .
"""


@pytest.fixture(scope="module")
def clubs(ingest_turtle) -> ExploreTranslator:
    tr = ExploreTranslator(ingest_turtle(CLUBS, "clubs"), fallback="never")
    yield tr
    tr.close()


def _meaning(tr: ExploreTranslator, question: str) -> list[str]:
    return [lk.iri.rsplit("/", 1)[-1] for lk in tr.anchors(question).predicates if lk.meaning]


def _answers(tr: ExploreTranslator, question: str) -> list[set[str]]:
    _a, ranked, _info = tr.search(question)
    return [{c["value"] for row in g.result.rows for c in row if c} for g in ranked if g.result is not None]


@pytest.mark.parametrize(("question", "place"), [
    ("Where is the club 'Chess Circle' located?", "Hall B"),
    ("The club named 'Rowing Crew' is located where?", "Boathouse"),
])
def test_a_word_of_like_meaning_links_the_predicate(clubs: ExploreTranslator, question: str, place: str) -> None:
    assert _meaning(clubs, question) == ["club#clublocation"]
    assert {place} in _answers(clubs, question)  # a candidate shows the club's location alone


def test_a_word_of_like_meaning_reads_an_age(clubs: ExploreTranslator) -> None:
    for q in ("How old is the member Nora Quist?", "Tell me how old member Ivo Berg is."):
        assert _meaning(clubs, q) == ["member#age"], q


def test_no_meaning_link_where_the_name_is_said_or_nothing_is_near(clubs: ExploreTranslator) -> None:
    # the predicate is named by its own word: the name link reads it, no meaning link is added
    assert _meaning(clubs, "What is the clubdesc of the club 'Chess Circle'?") == []
    # no predicate of the named class is close to "weather"
    assert _meaning(clubs, "What was the weather when the club 'Chess Circle' met?") == []
    # no class named: no predicates to compare with
    assert _meaning(clubs, "Where is it located?") == []


@pytest.mark.parametrize("question", ["List the first names of the members from Norway.",
                                      "Which members come from Norway? Give their first names."])
def test_the_class_word_read_as_a_value_may_also_be_no_constraint(clubs: ExploreTranslator, question: str) -> None:
    _a, ranked, _info = clubs.search(question)
    roles = [g for g in ranked if any(c.path and c.path[-1].pred.endswith("#role") for c in g.flat_conds())]
    bare = [g for g in ranked if not any(c.path and c.path[-1].pred.endswith("#role") for c in g.flat_conds())]
    assert roles and bare  # "members" as the class alone, and as the role *member*, both proposed
    # the value on a word of its own stays a constraint in every candidate
    assert all(any(c.value is not None and c.value.value == "Norway" for c in g.flat_conds()) for g in ranked)
    # the class alone answers with every Norwegian member, whatever their role
    assert any({"Nora", "Ivo"} <= _values(g) and "Ada" not in _values(g) for g in bare)


def _values(g) -> set[str]:
    return {c["value"] for row in g.result.rows for c in row if c} if g.result is not None else set()


def test_a_weakly_named_related_item_may_be_no_constraint(clubs: ExploreTranslator) -> None:
    search = Search(clubs.schema, clubs.paths, clubs.store)
    club = f"{NS}club/1"
    weak = Link("entity", club, 0.25, (10, 20), "chess")
    strong = Link("entity", club, 0.9, (10, 20), "Chess Circle")
    weak_readings = search._link_readings(weak, f"{NS}member", [])
    strong_readings = search._link_readings(strong, f"{NS}member", [])
    assert [r[0] is None for r in weak_readings] == [False, True]  # through member#ref-club, or nothing
    assert [r[0] is None for r in strong_readings] == [False]
    assert weak_readings[0][0].path[0].pred.endswith("#ref-club")


def test_two_modifiers_of_one_noun_link_a_predicate_each(clubs: ExploreTranslator) -> None:
    from kbqa.translators.explore.link.words import coordinated_grams, link_schema
    from kbqa.translators.language import ENGLISH

    def linked(q: str) -> set[str]:
        return {lk.iri.rsplit("/", 1)[-1] for lk in link_schema(q, clubs.schema) if lk.kind == "predicate"}

    for q in ("What are the first and last names of the members?", "Give each member's first and last name."):
        assert {"member#fname", "member#lname"} <= linked(q), q
        _a, ranked, _info = clubs.search(q)
        tables = [[{c["value"] for c in row if c} for row in g.result.rows] for g in ranked if g.result]
        # a candidate shows each member's first and last name in one row
        assert any(any({"Nora", "Quist"} <= r for r in rows) and any({"Ivo", "Berg"} <= r for r in rows)
                   for rows in tables), q
    # the first modifier also reads as itself with the head noun; nothing where the words after "and" are no
    # modifier and noun
    assert coordinated_grams("the first and last names", ENGLISH) == [(4, 9, "first names")]
    assert coordinated_grams("the start and end dates of each booking", ENGLISH) == [(4, 9, "start dates")]
    assert coordinated_grams("the names and ages of the members", ENGLISH) == []
    assert coordinated_grams("names and seatings, ordered by seating", ENGLISH) == []
    # aggregates and superlatives: the shapes read them
    assert coordinated_grams("the average and total prices", ENGLISH) == []
    assert coordinated_grams("the highest and lowest prices", ENGLISH) == []
