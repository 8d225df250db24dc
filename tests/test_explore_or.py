"""Two constraints on different attributes joined by the or-word (explore/propose/conjunctions.py `or_joined`): one
constraint that holds when either does, lowered to one FILTER with `||`. A tiny phone-shop KG written for these
tests; questions, a paraphrase and negatives written for it."""

from __future__ import annotations

import pytest

from kbqa.translators.explore import ExploreTranslator
from kbqa.translators.explore.lower.text import lower, write
from kbqa.translators.explore.query import Cond, Graph, Step, Term

NS = "http://example.org/shop/"
SHOP = f"""@prefix p: <{NS}phone#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
<{NS}phone> a rdfs:Class ; rdfs:label "phone" .
<{NS}phone/1> a <{NS}phone> ; p:model_name "Lark" ; p:maker "Acme" ; p:memory 16 ; p:storage 64 ; p:colour "red" .
<{NS}phone/2> a <{NS}phone> ; p:model_name "Wren" ; p:maker "Borealis" ; p:memory 64 ; p:storage 256 ;
    p:colour "blue" .
<{NS}phone/3> a <{NS}phone> ; p:model_name "Finch" ; p:maker "Acme" ; p:memory 64 ; p:storage 128 ;
    p:colour "green" .
<{NS}phone/4> a <{NS}phone> ; p:model_name "Robin" ; p:maker "Borealis" ; p:memory 8 ; p:storage 16 ; p:colour "blue" .
<{NS}phone/5> a <{NS}phone> ; p:model_name "Swift" ; p:maker "Corvid" ; p:memory 16 ; p:storage 64 ; p:colour "red" .
"""


@pytest.fixture(scope="module")
def shop(ingest_turtle) -> ExploreTranslator:
    tr = ExploreTranslator(ingest_turtle(SHOP, "shop"), fallback="never")
    yield tr
    tr.close()


def _either_or(ranked: list[Graph]) -> list[Graph]:
    return [g for g in ranked if any(c.op == "any" for c in g.conds)]


@pytest.mark.parametrize("question", ["Which phones are made by Acme or are blue?",
                                      "List the phones whose maker is Acme or whose colour is blue."])
def test_two_values_of_two_attributes_joined_by_or_hold_either(shop: ExploreTranslator, question: str) -> None:
    _a, ranked, _info = shop.search(question)
    joined = _either_or(ranked)
    assert joined, [g.key() for g in ranked[:5]]
    for g in joined:
        any_cond = next(c for c in g.conds if c.op == "any")
        assert len(any_cond.any_of) == 2 and any_cond.any_of[0].path != any_cond.any_of[1].path
        assert g.features["n_conds"] == len(g.flat_conds())
    # no candidate asks for a phone that is both: the conjunction of the two values is not proposed
    both = [g for g in ranked if {c.value.value for c in g.conds if c.value} >= {"Acme", "blue"}]
    assert not both
    assert "||" in write(joined[0], shop.schema, desq=False)


def test_a_value_or_a_comparison_of_another_attribute(shop: ExploreTranslator) -> None:
    _a, ranked, _info = shop.search("Which phones are made by Corvid or have a memory of more than 32?")
    joined = _either_or(ranked)
    assert joined
    ops = {d.op for g in joined for c in g.conds if c.op == "any" for d in c.any_of}
    assert ">" in ops and "=" in ops


def test_and_between_two_attributes_stays_a_conjunction(shop: ExploreTranslator) -> None:
    _a, ranked, _info = shop.search("Which phones are made by Acme and are red?")
    assert ranked
    assert not _either_or(ranked)
    assert any({c.value.value for c in g.conds if c.value} >= {"Acme", "red"} for g in ranked)


def test_one_attribute_with_two_values_is_still_a_list(shop: ExploreTranslator) -> None:
    _a, ranked, _info = shop.search("Which phones are made by Acme or Corvid?")
    assert ranked
    assert not _either_or(ranked)
    assert any(c.op == "in" for g in ranked for c in g.conds)


@pytest.mark.parametrize("question", ["How many phones have a memory of 16 or 64?",
                                      "Count the phones whose memory is 16 or 64."])
def test_two_values_one_attribute_may_hold_are_never_split_across_attributes(shop: ExploreTranslator,
                                                                             question: str) -> None:
    # 16 and 64 are values of both memory and storage: "16 or 64" lists one attribute's values, never "memory
    # 16 or storage 64"
    _a, ranked, _info = shop.search(question)
    assert ranked
    assert not _either_or(ranked)
    assert any(c.op == "in" and {t.value for t in c.values} == {"16", "64"} for g in ranked for c in g.conds)


def test_the_lowered_query_answers_either_and_says_so(shop: ExploreTranslator) -> None:
    maker, colour = Step(f"{NS}phone#maker"), Step(f"{NS}phone#colour")
    g = Graph("class", focus_class=f"{NS}phone", answer=[(), (Step(f"{NS}phone#model_name"),)],
              conds=[Cond((), "any", None, any_of=[
                  Cond((maker,), "=", Term("literal", "Corvid"), text="Corvid"),
                  Cond((colour,), "=", Term("literal", "blue"), text="blue")])])
    assert any(", or has colour" in s for s in lower(g, shop.schema).sentences), lower(g, shop.schema).sentences
    result = shop.store.query(write(g, shop.schema, desq=False))
    assert {r[-1]["value"] for r in result.rows} == {"Wren", "Robin", "Swift"}
    # the DeSQ the pipeline compiles says the same either-or
    assert "||" in write(g, shop.schema, desq=True)
