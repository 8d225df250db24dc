"""A value two items share (propose/shared.py): the answer is an attribute value that one item meeting a constraint
and another item meeting a second, exclusive one both have — on the focus's own attribute, on a related item's,
and with two comparisons whose ranges do not meet — and a value no item with it meets a negated constraint for. Questions, paraphrases and negatives written for these tests
over a tiny rowing KG."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kbqa.translators.explore import ExploreTranslator
from kbqa.translators.explore.features.structure import graph_features
from kbqa.translators.explore.lower.text import write
from kbqa.translators.explore.propose.shared import _exclude
from kbqa.translators.explore.query import Cond, Graph, Step, Term

ROW = "http://example.org/rowing/"
CLUB = f"""@prefix ex: <{ROW}> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:Rower a rdfs:Class ; rdfs:label "rower" .
ex:Race a rdfs:Class ; rdfs:label "race" .
ex:rowerName rdfs:label "rower name" .
ex:town rdfs:label "town" .
ex:age rdfs:label "age" .
ex:boat rdfs:label "boat" .
ex:raceName rdfs:label "race name" .
ex:venue rdfs:label "venue" .
ex:winner rdfs:label "winner" .
ex:r1 a ex:Rower ; ex:rowerName "Ada Moss" ; ex:town "Henley" ; ex:age 19 ; ex:boat "Eight" .
ex:r2 a ex:Rower ; ex:rowerName "Ben Ash" ; ex:town "Henley" ; ex:age 44 ; ex:boat "Pair" .
ex:r3 a ex:Rower ; ex:rowerName "Cal Dee" ; ex:town "Marlow" ; ex:age 18 ; ex:boat "Eight" .
ex:r4 a ex:Rower ; ex:rowerName "Dot Fry" ; ex:town "Marlow" ; ex:age 31 ; ex:boat "Eight" .
ex:r5 a ex:Rower ; ex:rowerName "Eve Gill" ; ex:town "Putney" ; ex:age 52 ; ex:boat "Pair" .
ex:r6 a ex:Rower ; ex:rowerName "Fin Hart" ; ex:town "Putney" ; ex:age 27 ; ex:boat "Pair" .
ex:r7 a ex:Rower ; ex:rowerName "Gus Ives" ; ex:town "Wallingford" ; ex:age 17 ; ex:boat "Single" .
ex:k1 a ex:Race ; ex:raceName "Spring Head" ; ex:venue "Thames" ; ex:winner ex:r1 .
ex:k2 a ex:Race ; ex:raceName "Summer Cup" ; ex:venue "Thames" ; ex:winner ex:r5 .
ex:k3 a ex:Race ; ex:raceName "Autumn Dash" ; ex:venue "Cam" ; ex:winner ex:r3 .
ex:k4 a ex:Race ; ex:raceName "Winter Plate" ; ex:venue "Cam" ; ex:winner ex:r4 .
ex:k5 a ex:Race ; ex:raceName "May Sprint" ; ex:venue "Isis" ; ex:winner ex:r6 .
"""


@pytest.fixture(scope="module")
def rowing(ingest_turtle: Callable[[str, str], Path]) -> Iterator[ExploreTranslator]:
    tr = ExploreTranslator(ingest_turtle(CLUB, "rowing"), fallback="never")
    yield tr
    tr.close()


def _shared(tr: ExploreTranslator, question: str) -> list[Graph]:
    _a, ranked, _info = tr.search(question)
    return [g for g in ranked if any(c.shared for c in g.conds)]


def _values(g: Graph) -> set[str]:
    return {cell["value"] for row in g.result.rows for cell in row if cell} if g.result is not None else set()


@pytest.mark.parametrize("question", [
    "Which towns have both rowers in the Eight boat and rowers in the Pair boat?",
    "List the towns where one rower rows the Eight and another rows the Pair.",
])
def test_two_values_of_one_attribute_are_two_items_sharing_the_answer(rowing: ExploreTranslator,
                                                                      question: str) -> None:
    found = _shared(rowing, question)
    assert found, question
    assert {"Henley"} in [_values(g) for g in found]
    best = next(g for g in found if _values(g) == {"Henley"})
    assert best.distinct and best.answer == [(Step(ROW + "town"),)] and graph_features(best)["s_shared"] == 1.0


def test_comparisons_no_rower_meets_together_are_two_rowers(rowing: ExploreTranslator) -> None:
    found = _shared(rowing, "From which towns come both rowers older than 40 and rowers younger than 20?")
    # Henley: Ben (44) and Ada (19); Putney has a rower over 40 but none under 20, Marlow the reverse
    assert {"Henley"} in [_values(g) for g in found]


def test_a_related_items_values_share_the_focus_attribute(rowing: ExploreTranslator) -> None:
    found = _shared(rowing, "Which venues held both races won by a rower from Henley and races won by a rower "
                            "from Putney?")
    # Thames: the Spring Head (Ada, Henley) and the Summer Cup (Eve, Putney); Cam's winners are both from Marlow
    assert {"Thames"} in [_values(g) for g in found]


@pytest.mark.parametrize("question", [
    "Which towns have no rower in the Pair boat?",
    "List the towns except those where some rower rows the Pair.",
])
def test_a_negated_constraint_holds_for_no_item_with_the_value(rowing: ExploreTranslator, question: str) -> None:
    found = _shared(rowing, question)
    # Marlow's and Wallingford's rowers row the Eight and the Single; Henley has Ada in the Eight but Ben in the Pair
    assert {"Marlow", "Wallingford"} in [_values(g) for g in found], question
    g = next(g for g in found if _values(g) == {"Marlow", "Wallingford"})
    assert "no rower with the same town" in write(g, rowing.schema, desq=True)
    # inside NOT EXISTS the walk starts from the value bound outside, not from a scan of every boat
    inner = write(g, rowing.schema, desq=False).split("NOT EXISTS {", 1)[1].strip().splitlines()
    assert f"<{ROW}town>" in inner[0]


@pytest.mark.parametrize("question", [
    "Which towns have rowers in the Eight boat?",  # one constraint: nothing to share
    "Which towns have rowers older than 20 and younger than 40?",  # one rower can meet both: a range
])
def test_no_shared_reading_where_one_item_can_meet_the_constraints(rowing: ExploreTranslator, question: str) -> None:
    _a, ranked, _info = rowing.search(question)
    assert ranked and not _shared(rowing, question)


def test_the_shared_reading_says_which_value_is_shared(rowing: ExploreTranslator) -> None:
    g = next(g for g in _shared(rowing, "Which towns have both rowers in the Eight boat and rowers in the Pair boat?")
             if _values(g) == {"Henley"})
    text = write(g, rowing.schema, desq=True)
    assert "another rower with the same town" in text
    sparql = write(g, rowing.schema, desq=False)
    assert sparql.count(f"<{ROW}town>") == 2 and "DISTINCT" in sparql
    # the other rowers' towns once each in a sub-SELECT: a join on values, not on every pair of rowers
    assert sparql.count("SELECT DISTINCT") == 2


def _cmp(op: str, value: str) -> Cond:
    return Cond((Step(ROW + "age"),), op, Term("number", value))


@pytest.mark.parametrize("a, b, excluded", [
    (Cond((Step(ROW + "boat"),), "=", Term("literal", "Eight")), Cond((Step(ROW + "boat"),), "=",
                                                                      Term("literal", "Pair")), True),
    (Cond((Step(ROW + "boat"),), "=", Term("literal", "Eight")), Cond((Step(ROW + "boat"),), "=",
                                                                      Term("literal", "Eight")), False),
    (_cmp(">", "40"), _cmp("<", "20"), True),
    (_cmp(">", "20"), _cmp("<", "40"), False),
    (_cmp(">=", "5"), _cmp("<=", "5"), False),  # 5 meets both
    (_cmp(">", "5"), _cmp("<=", "5"), True),
    (_cmp("=", "3"), _cmp(">", "5"), True),
    (_cmp("=", "7"), _cmp(">", "5"), False),
])
def test_which_constraints_exclude_each_other(a: Cond, b: Cond, excluded: bool) -> None:
    assert _exclude(a, b) is excluded
    assert _exclude(b, a) is excluded
