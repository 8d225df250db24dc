"""Readings the search proposes however the question is worded: an attribute named around its class's word ("the
names of shops"), two numbers no comparison word reads taken as a range, comparisons joined by "or" as one
condition, a quote that an apostrophe inside a word does not open, and a quoted part of a value looked for in the
predicate the question names. Questions, paraphrases and negatives written for these tests over a tiny shop KG."""

from __future__ import annotations

import pytest

from kb_dumps.ingest import ingest
from kbqa.translators.explore import ExploreTranslator
from kbqa.translators.explore.link.words import read_cues
from kbqa.translators.explore.propose.search import Search

SHOP = "http://example.org/shop/"
SHOPS = f"""@prefix ex: <{SHOP}> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:Shop a rdfs:Class ; rdfs:label "shop" .
ex:shopName rdfs:label "shop name" .
ex:openYear rdfs:label "open year" .
ex:area rdfs:label "area" .
ex:town rdfs:label "town" .
ex:s1 a ex:Shop ; ex:shopName "Corner Deli" ; ex:openYear 1985 ; ex:area 120 ; ex:town "Lakeside" .
ex:s2 a ex:Shop ; ex:shopName "Tin Lantern" ; ex:openYear 2001 ; ex:area 340 ; ex:town "Hollow Bay" .
ex:s3 a ex:Shop ; ex:shopName "Moss and Pine" ; ex:openYear 2015 ; ex:area 90 ; ex:town "Oakridge" .
ex:s4 a ex:Shop ; ex:shopName "Old Kettle" ; ex:openYear 1999 ; ex:area 210 ; ex:town "Lakeside" .
"""


@pytest.fixture(scope="module")
def shops(tmp_path_factory: pytest.TempPathFactory) -> ExploreTranslator:
    folder = tmp_path_factory.mktemp("readings")
    (folder / "shops.ttl").write_text(SHOPS, encoding="utf-8")
    ingest([folder / "shops.ttl"], folder / "shops", profile="generic", progress=False)
    tr = ExploreTranslator(folder / "shops", fallback="never")
    yield tr
    tr.close()


def _answers(tr: ExploreTranslator, question: str, keep) -> list[set[str]]:
    """The answer values of each ranked candidate that `keep` accepts."""
    _a, ranked, _info = tr.search(question)
    out = []
    for g in ranked:
        if keep(g) and g.result is not None:
            out.append({cell["value"] for row in g.result.rows for cell in row if cell})
    return out


def _shows(g, pred: str) -> bool:
    return any(p and p[-1].pred == SHOP + pred for p in g.answer)


@pytest.mark.parametrize("question", ["What are the names of shops in the order of their open year?",
                                      "Give the names of shops sorted by open year."])
def test_an_attribute_named_around_its_class_word_is_shown(shops: ExploreTranslator, question: str) -> None:
    _a, ranked, _info = shops.search(question)
    assert any(g.focus_class == SHOP + "Shop" and _shows(g, "shopName") for g in ranked), question


def test_a_reading_reaches_beyond_a_used_span_only_with_a_content_word(shops: ExploreTranslator) -> None:
    q = "names of shops in town"
    a = shops.anchors(q)
    cls = (q.index("shops"), q.index("shops") + len("shops"))
    assert Search._reads_beyond(a, (0, cls[1]), [cls])  # "names of shops": *names* is its own
    assert not Search._reads_beyond(a, (cls[0], q.index(" town")), [cls])  # "shops in": only a function word
    assert not Search._reads_beyond(a, (cls[0] + 1, cls[1] + 3), [cls])  # cuts the class word


@pytest.mark.parametrize("question", ["Which shops have an area in the span of 100 and 250?",
                                      "Shops whose area lies within 100 and 250?"])
def test_two_numbers_no_word_reads_are_a_range(shops: ExploreTranslator, question: str) -> None:
    ranges = _answers(shops, question, lambda g: g.features.get("uncued_range") == 1.0 and not g.aggs)
    assert ranges and any({"Corner Deli", "Old Kettle"} <= got and "Tin Lantern" not in got and
                          "Moss and Pine" not in got for got in ranges), question


def test_one_number_gives_no_range(shops: ExploreTranslator) -> None:
    _a, ranked, _info = shops.search("Which shops have an area of 120?")
    assert not any(g.features.get("uncued_range") for g in ranked)


@pytest.mark.parametrize("question", ["Which shops opened before 1990 or after 2010?",
                                      "List the shops with an open year below 1990 or above 2010."])
def test_comparisons_joined_by_or_are_one_condition(shops: ExploreTranslator, question: str) -> None:
    either = _answers(shops, question, lambda g: any(c.op == "either" for c in g.conds) and not g.aggs)
    assert either and any({SHOP + "s1", SHOP + "s3"} <= got and SHOP + "s2" not in got for got in either), question


def test_comparisons_joined_by_and_stay_two(shops: ExploreTranslator) -> None:
    _a, ranked, _info = shops.search("Which shops opened after 1990 and before 2010?")
    assert ranked and not any(c.op == "either" for g in ranked for c in g.conds)


def test_an_apostrophe_inside_a_word_opens_no_quote() -> None:
    assert [t for t, _s, _e in read_cues("Which shop's name holds the letters 'Ke'?").quoted] == ["Ke"]
    assert [t for t, _s, _e in read_cues("What is the store's name with 'Ke' in it?").quoted] == ["Ke"]
    assert read_cues("What are the owner's and the manager's towns?").quoted == []


@pytest.mark.parametrize("question", ["Which shops have 'o' in their town?", "Shops whose town holds an 'o'?"])
def test_a_quoted_part_is_looked_for_in_the_named_predicate_first(shops: ExploreTranslator, question: str) -> None:
    contains = [lk for lk in shops.anchors(question).values if lk.op == "contains"]
    assert contains and contains[0].iri == SHOP + "town", question
