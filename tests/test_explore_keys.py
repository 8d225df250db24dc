"""Key columns and related names (explore/propose/ungated.py `key_twins`, `related_shown`) and the listwise
features (explore/features/listwise.py). A tiny shop KG written the way W3C Direct Mapping writes tables: a foreign
key both as a link (`staff#ref-shop_code`) and as its code (`staff#shop_code`), and a keyless table (`sale`) whose
link triples have blank subjects of their own, so the link never reaches its typed rows. Questions, paraphrases and
negatives written for these tests."""

from __future__ import annotations

import pytest

from kbqa.translators.explore import ExploreTranslator
from kbqa.translators.explore.features.listwise import with_list_features
from kbqa.translators.explore.propose.base import Probe
from kbqa.translators.explore.propose.ungated import key_twins
from kbqa.translators.explore.rank.trees import Tree, TreeRanker

NS = "http://example.org/dm/"
SHOPS = f"""@prefix s: <{NS}shop#> .
@prefix st: <{NS}staff#> .
@prefix sa: <{NS}sale#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
<{NS}shop> a rdfs:Class ; rdfs:label "shop" .
<{NS}staff> a rdfs:Class ; rdfs:label "staff" .
<{NS}sale> a rdfs:Class ; rdfs:label "sale" .
<{NS}shop/code=N1> a <{NS}shop> ; s:shop_code "N1" ; s:shop_name "Northgate" .
<{NS}shop/code=S2> a <{NS}shop> ; s:shop_code "S2" ; s:shop_name "Southbank" .
<{NS}shop/code=E3> a <{NS}shop> ; s:shop_code "E3" ; s:shop_name "Eastfield" .
<{NS}staff/id=1> a <{NS}staff> ; st:staff_name "Iris" ; st:wage 900 ; st:shop_code "N1" ; st:ref-shop_code <{NS}shop/code=N1> .
<{NS}staff/id=2> a <{NS}staff> ; st:staff_name "Omar" ; st:wage 700 ; st:shop_code "N1" ; st:ref-shop_code <{NS}shop/code=N1> .
<{NS}staff/id=3> a <{NS}staff> ; st:staff_name "Lena" ; st:wage 800 ; st:shop_code "S2" ; st:ref-shop_code <{NS}shop/code=S2> .
<{NS}staff/id=4> a <{NS}staff> ; st:staff_name "Paul" ; st:wage 600 ; st:shop_code "Z9" .
_:a1 a <{NS}sale> ; sa:shop_code "N1" ; sa:amount 10 .
_:a2 a <{NS}sale> ; sa:shop_code "S2" ; sa:amount 20 .
_:a3 a <{NS}sale> ; sa:shop_code "S2" ; sa:amount 30 .
_:b1 sa:ref-shop_code <{NS}shop/code=N1> .
_:b2 sa:ref-shop_code <{NS}shop/code=S2> .
_:b3 sa:ref-shop_code <{NS}shop/code=S2> .
"""


@pytest.fixture(scope="module")
def shops(ingest_turtle) -> ExploreTranslator:
    tr = ExploreTranslator(ingest_turtle(SHOPS, "shops"), fallback="never")
    yield tr
    tr.close()


def _rows(g) -> set[tuple[str, ...]]:
    return {tuple(c["value"] for c in row if c) for row in g.result.rows} if g.result is not None else set()


def _twins(tr: ExploreTranslator, question: str, focus: str) -> list[str]:
    a, _ranked, _info = tr.search(question)
    probe = Probe(tr.ctx.schema, tr.paths, tr.ctx.store)
    return [x[0][0].pred.rsplit("/", 1)[-1] for x in key_twins(probe, a, NS + focus, [])]


def test_a_foreign_key_link_has_its_code_column_as_twin(shops: ExploreTranslator) -> None:
    for q in ("How many staff work in each shop?", "Count the staff per shop."):
        assert _twins(shops, q, "staff") == ["staff#shop_code"], q
    # a keyless table: its link's subjects are untyped, the twin is found by the link's name
    assert _twins(shops, "What is the total sale amount for each shop?", "sale") == ["sale#shop_code"]
    # no other class named: no twin; and a shop holds no column that stands for its staff
    assert _twins(shops, "How many staff are there?", "staff") == []
    assert _twins(shops, "How many staff work in each shop?", "shop") == []


@pytest.mark.parametrize("question", ["How many staff work in each shop?", "Count the staff per shop."])
def test_items_are_counted_per_key_code_with_dangling_codes(shops: ExploreTranslator, question: str) -> None:
    _a, ranked, _info = shops.search(question)
    keyed = [g for g in ranked if g.features.get("key_twin") and g.group and g.aggs == [("COUNT", None)]
             and not g.order and not g.having]
    assert keyed
    # Paul's code Z9 names no shop: the key column keeps him, as the table does
    assert _rows(keyed[0]) == {("N1", "2"), ("S2", "1"), ("Z9", "1")}


def test_a_keyless_table_is_aggregated_per_code(shops: ExploreTranslator) -> None:
    _a, ranked, _info = shops.search("What is the total sale amount for each shop?")
    sums = [g for g in ranked if g.features.get("key_twin") and g.aggs and g.aggs[0][0] == "SUM"]
    assert sums and _rows(sums[0]) == {("N1", "10"), ("S2", "50")}


@pytest.mark.parametrize("question", ["How many shops do the staff work in?", "Count the different shops staff work at."])
def test_the_related_items_the_focus_rows_name_are_counted_once_each(shops: ExploreTranslator, question: str) -> None:
    _a, ranked, _info = shops.search(question)
    counted = [g for g in ranked if g.features.get("key_twin") and g.aggs and g.aggs[0][0] == "COUNT_DISTINCT"]
    # the staff name three shop codes (N1 twice; Z9 names no shop, as the table stores it)
    assert counted and _rows(counted[0]) == {("3",)}
    # no other class named: the staff's own codes are no key twin
    _a, ranked, _info = shops.search("How many staff are there?")
    assert not any(g.features.get("key_twin") and g.aggs and g.aggs[0][0] == "COUNT_DISTINCT" for g in ranked)


def test_a_related_item_is_shown_by_its_name(shops: ExploreTranslator) -> None:
    # the shop's display column is its name (a naming word beats the code that names the shops apart as well), so
    # the related-item candidate may coincide with the class family's own join and keep that one's features: the
    # behaviour checked is that some candidate shows each staff member's name beside their shop's name
    for q in ("List each staff member's name with the name of their shop.", "Staff names and their shop names?",
              "List each staff member's name with their shop."):
        _a, ranked, _info = shops.search(q)
        assert any(all(any({name, shop} <= set(r) for r in _rows(g)) for name, shop in (("Iris", "Northgate"),
                                                                                  ("Lena", "Southbank")))
                   for g in ranked), q
    # no related class named: nothing of another class is shown
    _a, ranked, _info = shops.search("List the staff names.")
    assert not any(g.features.get("related_shown") for g in ranked)


def test_listwise_features_read_each_candidate_against_the_best() -> None:
    feats = with_list_features([{"vsim": 0.2, "coverage": 1.0}, {"vsim": 0.5}, {"vsim": 0.4, "coverage": 0.5}])
    assert [f["d:vsim"] for f in feats] == pytest.approx([-0.3, 0.0, -0.1])
    assert [f["d:coverage"] for f in feats] == pytest.approx([0.0, -1.0, -0.5])
    assert "d:lex_p" not in feats[0]  # no candidate has it: left out, read as 0
    again = with_list_features(feats)  # computing twice gives the same
    assert [f["d:vsim"] for f in again] == pytest.approx([-0.3, 0.0, -0.1])


def test_trees_reading_a_listwise_feature_pick_the_best_of_each_list() -> None:
    import numpy as np

    # one stump: +1 when the candidate's vsim is the best of its question's (d:vsim > -0.01)
    tree = Tree(*(np.asarray(a) for a in ([0, -1, -1], [-0.01, 0.0, 0.0], [1, -1, -1], [2, -1, -1],
                                          [0.0, 0.0, 1.0])))
    ranker = TreeRanker(["d:vsim"], [tree])
    for level in (0.1, 0.8):  # low or high similarities alike: the list's best wins
        scores = ranker.score_dicts([{"vsim": level}, {"vsim": level + 0.05}, {"vsim": level - 0.05}])
        assert int(np.argmax(scores)) == 1


def test_explain_reads_a_candidate_against_those_it_was_ranked_with() -> None:
    import numpy as np

    from kbqa.translators.explore.query import Graph

    tree = Tree(*(np.asarray(a) for a in ([0, -1, -1], [-0.01, 0.0, 0.0], [1, -1, -1], [2, -1, -1],
                                          [0.0, 0.0, 1.0])))
    ranker = TreeRanker(["d:vsim"], [tree])
    low, high = Graph("class", features={"vsim": 0.3}), Graph("class", features={"vsim": 0.6})
    assert ranker.contributions(high, among=[low, high]) == {"d:vsim": 1.0}
    assert ranker.contributions(low, among=[low, high]) == {}  # below the best: the stump gives it nothing
    assert ranker.contributions(low) == {"d:vsim": 1.0}  # alone, it is its own best
