"""Role words (explore/features/roles.py): the question's words next to each part a candidate uses, by the part's
role. A tiny racing KG written for these tests; questions, paraphrases and negatives written for them."""

from __future__ import annotations

import pytest

from kbqa.training.ranker_fit import vocabulary
from kbqa.translators.explore import ExploreTranslator
from kbqa.translators.explore.features.roles import words_after, words_before

NS = "http://example.org/race/"
RACERS = f"""@prefix r: <{NS}racer#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
<{NS}racer> a rdfs:Class ; rdfs:label "racer" .
<{NS}racer/1> a <{NS}racer> ; r:racer_name "Ada" ; r:speed 210 ; r:height 170 ; r:team "Comets" .
<{NS}racer/2> a <{NS}racer> ; r:racer_name "Bo" ; r:speed 180 ; r:height 190 ; r:team "Falcons" .
<{NS}racer/3> a <{NS}racer> ; r:racer_name "Cy" ; r:speed 250 ; r:height 160 ; r:team "Comets" .
<{NS}racer/4> a <{NS}racer> ; r:racer_name "Di" ; r:speed 195 ; r:height 175 ; r:team "Falcons" .
"""


@pytest.fixture(scope="module")
def racers(ingest_turtle) -> ExploreTranslator:
    tr = ExploreTranslator(ingest_turtle(RACERS, "racers"), fallback="never")
    yield tr
    tr.close()


def _pred(path) -> str:
    return path[-1].pred.rsplit("#", 1)[-1] if path else ""


def _roles(f: dict[str, float], prefix: str) -> set[str]:
    return {k for k in f if k.startswith(prefix)}


def test_words_either_side_of_a_span() -> None:
    q = "Which team has the racer with the greatest speed?"
    start = q.index("speed")
    assert words_before(q, start) == ["the", "greatest"]
    assert words_after(q, q.index("team") + 4) == ["has", "the"]
    assert words_before(q, 0) == [] and words_after(q, len(q)) == []


@pytest.mark.parametrize("question, word", [
    ("Which team has the racer with the greatest speed?", "greatest"),
    ("Tell me the team of the racer having the top speed.", "top"),
])
def test_the_order_key_carries_the_words_before_its_name(racers: ExploreTranslator, question: str, word: str) -> None:
    _a, ranked, _info = racers.search(question)
    by_speed = [g for g in ranked if g.order and g.order[0] and _pred(g.order[0]) == "speed"]
    assert by_speed
    for g in by_speed:
        role = "order_desc" if g.order[1] else "order_asc"
        assert g.features[f"rw:{role}:{word}"] == 1.0
        assert g.features["r_order_named"] == 1.0 and "r_order_unnamed" not in g.features
    # ordered by an attribute no word names: marked so, and a shown *speed* carries the superlative as a show word
    by_height = [g for g in ranked if g.order and g.order[0] and _pred(g.order[0]) == "height"]
    assert by_height
    for g in by_height:
        assert g.features["r_order_unnamed"] == 1.0
        assert not _roles(g.features, "rw:order_")
        if any(_pred(p) == "speed" for p in g.answer):
            assert g.features[f"rw:show:{word}"] == 1.0


@pytest.mark.parametrize("question", ["How many racers have a speed of more than 200?",
                                      "Count the racers whose speed is over 200."])
def test_a_compared_number_carries_its_words_by_operator(racers: ExploreTranslator, question: str) -> None:
    _a, ranked, _info = racers.search(question)
    compared = [g for g in ranked if any(c.op in ("<", ">", "<=", ">=") and c.value is not None for c in g.conds)]
    assert compared
    before = question.split(" 200")[0].split()[-1]
    names = {">": "gt", "<": "lt", ">=": "ge", "<=": "le"}
    for g in compared:
        op = next(c.op for c in g.conds if c.op in names)
        assert g.features[f"rw:cmp_{names[op]}:{before}"] == 1.0, op
        # another operator's words are not this candidate's
        assert not any(k.startswith(f"rw:cmp_{o}:") for o in set(names.values()) - {names[op]} for k in g.features)


def test_role_words_are_only_those_of_the_parts_a_candidate_uses(racers: ExploreTranslator) -> None:
    _a, ranked, _info = racers.search("List the names of the racers.")
    assert ranked
    for g in ranked:
        # no number: nothing compared; an ORDER BY the schema allows carries the words it stands after, which
        # here are no superlative (the trees learn that "list the" does not ask for an order)
        assert not _roles(g.features, "rw:cmp_") and not _roles(g.features, "ra:")
        if g.order is None:
            assert not _roles(g.features, "rw:order_")
        elif g.order[0] and _pred(g.order[0]) == "racer_name":
            assert _roles(g.features, "rw:order_") <= {f"rw:order_{d}:{w}" for d in ("asc", "desc")
                                                       for w in ("list", "the")}
    # each attribute the question names counts once for each candidate that uses it nowhere
    _a, ranked, _info = racers.search("List the names and teams of the racers.")
    assert ranked
    for g in ranked:
        used = {_pred(p) for p in [*g.answer, *(p for _, p in g.aggs), *(c.path for c in g.conds),
                                  *([g.order[0]] if g.order else [])] if p}
        assert g.features["r_named_unused"] == len({"racer_name", "team"} - used)
    assert {g.features["r_named_unused"] for g in ranked} >= {0.0, 1.0}


def test_role_words_are_kept_only_when_enough_questions_have_them() -> None:
    def row(i: int, words: list[str]) -> dict:
        return {"id": str(i), "kg": "k", "text": "q",
                "candidates": [{"features": {f"rw:order_desc:{w}": 1.0 for w in words}, "f1": 1.0},
                               {"features": {"r_order_unnamed": 1.0}, "f1": 0.0}]}

    rows = [row(i, ["most"] + (["rarest"] if i == 0 else [])) for i in range(5)]
    names = vocabulary(rows, min_word_count=3)
    assert "rw:order_desc:most" in names and "r_order_unnamed" in names
    assert "rw:order_desc:rarest" not in names
