"""Link-use features (explore/features/link_use.py): which linked values a candidate uses or drops, and whether its
classes hold the attributes the question names. A tiny harbour KG written for these tests, where boats,
sailors and crates (no link to the others) all have a `weight` and only boats have a `hull`; questions, paraphrases and negatives written for it."""

from __future__ import annotations

import pytest

from kbqa.translators.explore import ExploreTranslator
from kbqa.translators.explore.features.link_use import candidate_classes

NS = "http://example.org/harbour/"
HARBOUR = f"""@prefix b: <{NS}boat#> .
@prefix s: <{NS}sailor#> .
@prefix c: <{NS}crate#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
<{NS}boat> a rdfs:Class ; rdfs:label "boat" .
<{NS}sailor> a rdfs:Class ; rdfs:label "sailor" .
<{NS}boat/1> a <{NS}boat> ; b:boat_name "Gull" ; b:weight 900 ; b:hull "catamaran" ; b:skipper <{NS}sailor/1> .
<{NS}boat/2> a <{NS}boat> ; b:boat_name "Tern" ; b:weight 1400 ; b:hull "monohull" ; b:skipper <{NS}sailor/2> .
<{NS}boat/3> a <{NS}boat> ; b:boat_name "Skua" ; b:weight 1100 ; b:hull "catamaran" ; b:skipper <{NS}sailor/2> .
<{NS}sailor/1> a <{NS}sailor> ; s:sailor_name "Ines" ; s:weight 61 .
<{NS}sailor/2> a <{NS}sailor> ; s:sailor_name "Oleg" ; s:weight 88 .
<{NS}crate> a rdfs:Class ; rdfs:label "crate" .
<{NS}crate/1> a <{NS}crate> ; c:crate_label "nets" ; c:weight 40 .
<{NS}crate/2> a <{NS}crate> ; c:crate_label "rope" ; c:weight 25 .
"""


@pytest.fixture(scope="module")
def harbour(ingest_turtle) -> ExploreTranslator:
    tr = ExploreTranslator(ingest_turtle(HARBOUR, "harbour"), fallback="never")
    yield tr
    tr.close()


def _local(iri: str | None) -> str:
    return (iri or "").rstrip("/").rsplit("/", 1)[-1]


def _uses_value(g, value: str) -> bool:
    return any(c.value is not None and c.value.value == value for c in g.conds)


@pytest.mark.parametrize("question", ["What is the weight of the heaviest catamaran?",
                                      "Give the largest weight among catamaran boats."])
def test_a_dropped_value_is_counted_and_said_not_held_by_another_class(harbour: ExploreTranslator,
                                                                       question: str) -> None:
    _a, ranked, _info = harbour.search(question)
    with_value = [g for g in ranked if _uses_value(g, "catamaran")]
    assert with_value
    for g in with_value:
        assert g.features["lv_used"] == 1.0 and g.features["lv_unused"] == 0.0
        assert g.features["lv_unused_score"] == 0.0
    # a crate has a weight but nothing reaches a hull from it: its candidates leave the value out
    crates = [g for g in ranked if _local(g.focus_class) == "crate"]
    assert crates
    for g in crates:
        assert not _uses_value(g, "catamaran")
        assert g.features["lv_used"] == 0.0 and g.features["lv_unused"] == 1.0
        assert g.features["lv_unused_score"] > 0.0 and g.features["lv_unused_held"] == 0.0


def test_a_named_attribute_the_class_lacks_is_counted(harbour: ExploreTranslator) -> None:
    _a, ranked, _info = harbour.search("What are the hull and weight of the heaviest crate?")
    crates = [g for g in ranked if _local(g.focus_class) == "crate"]
    assert crates
    for g in crates:  # a crate holds a weight, no hull
        assert g.features["la_held"] == 1.0 and g.features["la_not_held"] == 1.0
    boats = [g for g in ranked if _local(g.focus_class) == "boat"]
    assert boats
    for g in boats:
        assert g.features["la_held"] == 2.0 and g.features["la_not_held"] == 0.0


def test_no_value_and_no_attribute_named_sets_nothing(harbour: ExploreTranslator) -> None:
    _a, ranked, _info = harbour.search("List every sailor.")
    assert ranked
    for g in ranked:
        assert not any(k.startswith(("lv_", "la_")) for k in g.features)


def test_classes_reached_by_a_path(harbour: ExploreTranslator) -> None:
    _a, ranked, _info = harbour.search("What is the name of the skipper of the boat Gull?")
    joined = [g for g in ranked if any(len(p) > 1 for p in [c.path for c in g.conds] + list(g.answer) if p)
              or any(s.pred.endswith("#skipper") for c in g.conds for s in c.path)]
    assert joined
    assert any({"boat", "sailor"} <= {_local(c) for c in candidate_classes(harbour.schema, g)} for g in joined)
