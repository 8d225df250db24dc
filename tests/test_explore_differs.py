"""A negated value of the focus's own attribute read two ways (explore/propose/search.py `_differs_reading`): NOT
EXISTS (items without that value, those with no value too) and the attribute's value differing (FILTER !=, the
items that hold another value), and the negation words the language profile reads ("other than", "except",
"non-"). A tiny garden-centre KG written for these tests; questions, paraphrases and negatives written for it."""

from __future__ import annotations

import pytest

from kbqa.translators.explore import ExploreTranslator
from kbqa.translators.explore.link.words import read_cues
from kbqa.translators.explore.lower.text import write
from kbqa.translators.explore.query import Graph
from kbqa.translators.language import ENGLISH

NS = "http://example.org/garden/"
GARDEN = f"""@prefix g: <{NS}plant#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
<{NS}plant> a rdfs:Class ; rdfs:label "plant" .
<{NS}plant/1> a <{NS}plant> ; g:plant_name "Foxglove" ; g:habit "Perennial" ; g:height 120 .
<{NS}plant/2> a <{NS}plant> ; g:plant_name "Sunflower" ; g:habit "Annual" ; g:height 200 .
<{NS}plant/3> a <{NS}plant> ; g:plant_name "Lavender" ; g:habit "Shrub" ; g:height 60 .
<{NS}plant/4> a <{NS}plant> ; g:plant_name "Marigold" ; g:habit "Annual" ; g:height 30 .
<{NS}plant/5> a <{NS}plant> ; g:plant_name "Mystery seedling" ; g:height 5 .
"""


@pytest.fixture(scope="module")
def garden(ingest_turtle) -> ExploreTranslator:
    tr = ExploreTranslator(ingest_turtle(GARDEN, "garden"), fallback="never")
    yield tr
    tr.close()


def _differs(ranked: list[Graph]) -> list[Graph]:
    return [g for g in ranked if any(c.op == "!=" for c in g.conds)]


def _names(tr: ExploreTranslator, g: Graph) -> set[str]:
    return {cell["value"] for row in tr.store.query(write(g, tr.schema, desq=False)).rows for cell in row if cell}


@pytest.mark.parametrize("question", ["Which plants are not annual?", "List the plants other than the annual ones.",
                                      "Show every plant except the annual ones."])
def test_a_negated_value_also_reads_as_a_differing_value(garden: ExploreTranslator, question: str) -> None:
    assert read_cues(question, ENGLISH).negation
    _a, ranked, _info = garden.search(question)
    differ = [g for g in _differs(ranked) if not g.aggs and g.form == "select"]
    assert differ, [g.key() for g in ranked[:5]]
    g = differ[0]
    c = next(c for c in g.conds if c.op == "!=")
    assert c.value is not None and c.value.value == "Annual" and not c.negated
    assert "!=" in write(g, garden.schema, desq=False)
    names = _names(garden, g)
    # the items with another value; the seedling with no habit is left out, and no annual is in
    assert f"{NS}plant/1" in names or "Foxglove" in names
    assert not ({f"{NS}plant/5", "Mystery seedling"} & names)
    assert not ({f"{NS}plant/2", "Sunflower"} & names)
    # the NOT EXISTS reading stays beside it and keeps the seedling
    absent = [g for g in ranked if any(c.negated and c.op == "=" for c in g.conds) and not g.aggs and g.form == "select"]
    assert absent
    assert {f"{NS}plant/5", "Mystery seedling"} & _names(garden, absent[0])


@pytest.mark.parametrize("question", ["Show the non-annual plants.", "Which plants grow outside the shrub beds?"])
def test_more_negation_words(question: str) -> None:
    assert read_cues(question, ENGLISH).negation


def test_no_negation_no_differing_value(garden: ExploreTranslator) -> None:
    assert not read_cues("Which plants are annual?", ENGLISH).negation
    _a, ranked, _info = garden.search("Which plants are annual?")
    assert ranked
    assert not _differs(ranked)
