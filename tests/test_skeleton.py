"""eval/skeleton.py: typed slots, variables in order, one skeleton for spellings of one query, fill as its inverse."""

from __future__ import annotations

import pytest

from eval.skeleton import SkeletonError, coarse, fill, lcquad_intermediate_skeleton, skeleton


def test_ids_literals_and_variables_become_typed_slots() -> None:
    s = skeleton("SELECT ?film WHERE { ?film wdt:P57 wd:Q42 . ?film wdt:P577 ?date FILTER(YEAR(?date) = 1999) }")
    assert s.text == "SELECT ?v0 WHERE { ?v0 wdt:R1 E1 . ?v0 wdt:R2 ?v1 FILTER ( YEAR ( ?v1 ) = NUM1 ) }"
    assert [(x.name, x.kind, x.value) for x in s.slots] == [
        ("R1", "property", "P57"), ("E1", "entity", "wd:Q42"), ("R2", "property", "P577"), ("NUM1", "literal", "1999")]


def test_statement_roles_share_one_property_slot() -> None:
    s = skeleton("SELECT ?when WHERE { wd:Q7 p:P166 ?st . ?st ps:P166 wd:Q9 . ?st pq:P585 ?when }")
    assert s.text == "SELECT ?v0 WHERE { E1 p:R1 ?v1 . ?v1 ps:R1 E2 . ?v1 pq:R2 ?v0 }"
    assert s.slot("R1").roles == ("p", "ps")
    assert s.slot("R2").roles == ("pq",)


def test_full_iris_prefixes_spacing_and_case_give_one_skeleton() -> None:
    a = skeleton("PREFIX wd: <http://www.wikidata.org/entity/> SELECT DISTINCT ?x WHERE { wd:Q64 wdt:P17 ?x . }")
    b = skeleton("select distinct ?country where {<http://www.wikidata.org/entity/Q64> "
                 "<http://www.wikidata.org/prop/direct/P17> ?country}")
    assert a.text == b.text == "SELECT DISTINCT ?v0 WHERE { E1 wdt:R1 ?v0 }"
    assert b.slot("E1").value == "wd:Q64" and b.slot("R1").value == "P17"


def test_literal_types_date_lang_string_and_signed_number() -> None:
    s = skeleton("SELECT ?x ?l WHERE { ?x wdt:P31 wd:Q5 ; rdfs:label ?l ; wdt:P569 ?b . "
                 "FILTER(lang(?l) = 'en') FILTER(CONTAINS(?l, 'ann')) "
                 "FILTER(?b > \"1950-01-01T00:00:00Z\"^^xsd:dateTime) FILTER(?b != -4) }")
    types = {x.name: x.type for x in s.slots if x.kind == "literal"}
    assert types == {"LANG1": "lang", "STR1": "str", "DATE1": "date", "NUM1": "num"}
    assert s.slot("NUM1").value == "-4"
    assert "^^" not in s.text  # the datatype is part of the DATE slot's type


def test_same_id_twice_is_one_slot_and_different_ids_are_two() -> None:
    same = skeleton("ASK { wd:Q3 wdt:P26 wd:Q4 . wd:Q3 wdt:P26 wd:Q5 }")
    assert same.text == "ASK { E1 wdt:R1 E2 . E1 wdt:R1 E3 }"
    other = skeleton("ASK { wd:Q3 wdt:P26 wd:Q4 . wd:Q3 wdt:P40 wd:Q5 }")
    assert other.text != same.text


def test_a_property_standing_as_an_entity_keeps_the_wd_role() -> None:
    s = skeleton("SELECT ?p WHERE { ?p wdt:P1647 wd:P361 }")
    assert s.text == "SELECT ?v0 WHERE { ?v0 wdt:R1 wd:R2 }"
    assert s.slot("R2").roles == ("wd",)


def test_fill_is_the_inverse_up_to_names_and_spacing() -> None:
    from eval.query_metrics import score_query

    gold = ("SELECT ?v WHERE { wd:Q1 p:P39 ?s . ?s ps:P39 wd:Q2 . ?s pq:P580 ?v "
            "FILTER(?v < \"2001-05-03\"^^xsd:dateTime) FILTER(CONTAINS(STR(?v), '20')) }")
    s = skeleton(gold)
    written = fill(s.text, {x.name: x.value for x in s.slots})
    assert score_query(written, gold).exact_match
    # a missing slot is not guessed: the text keeps the slot name and does not parse as the gold query
    partial = fill(s.text, {x.name: x.value for x in s.slots if x.name != "E2"})
    assert "E2" in partial and not score_query(partial, gold).exact_match


def test_coarse_agrees_with_lcquad_intermediate_form() -> None:
    gold = "SELECT (COUNT(?obj) AS ?value ) { wd:Q10 wdt:P150 ?obj }"
    inter = "SELECT ( COUNT ( ?obj ) AS ?value ) { @@ent@@ @@pred@@ ?obj }"
    assert coarse(skeleton(gold).text) == lcquad_intermediate_skeleton(inter)
    assert coarse(skeleton("ASK { wd:Q1 wdt:P2 wd:Q3 }").text) != lcquad_intermediate_skeleton(inter)


def test_text_the_lexer_refuses_is_a_skeleton_error() -> None:
    with pytest.raises(SkeletonError):
        skeleton("SELECT ?x WHERE { ?x wdt:P1 'unterminated }")


def test_fill_writes_a_bare_year_in_a_date_slot_as_a_valid_datetime() -> None:
    text = fill("ASK { E1 wdt:R1 ?v0 FILTER ( ?v0 > DATE1 ) }", {"E1": "Q3", "R1": "P571", "DATE1": "1908"})
    assert "'1908-01-01T00:00:00Z'^^xsd:dateTime" in text
    kept = fill("ASK { E1 wdt:R1 ?v0 FILTER ( ?v0 > DATE1 ) }", {"E1": "Q3", "R1": "P571", "DATE1": "1908-05-02"})
    assert "'1908-05-02'^^xsd:dateTime" in kept  # a full date is written as given
