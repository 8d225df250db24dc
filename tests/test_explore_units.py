"""A number next to a predicate's name ("4 legs", "weight of 150") links to that predicate first; numbers are read with
thousands written apart ("15,000")."""

from __future__ import annotations

import pytest

from kbqa.translators.explore.link.anchors import number_units
from kbqa.translators.explore.link.words import Link

INT = "http://www.w3.org/2001/XMLSchema#integer"


def _number(question: str, text: str, pred: str) -> Link:
    start = question.index(text)
    return Link("value", pred, 0.38, (start, start + len(text)), text, value=text, datatype=INT, label=pred)


def _pred(question: str, text: str, pred: str, score: float = 1.0) -> Link:
    start = question.index(text)
    return Link("predicate", pred, score, (start, start + len(text)), text, label=text)


@pytest.mark.parametrize("q", ["What is the average weight of the animals with 4 legs?",
                               "Show the animals having 4 legs and their weight."])
def test_the_word_after_the_number_names_its_predicate(q: str) -> None:
    values = [_number(q, "4", "ex:id"), _number(q, "4", "ex:legs"), _number(q, "4", "ex:wheels")]
    number_units(q, values, [_pred(q, "legs", "ex:legs"), _pred(q, "weight", "ex:weight", 0.9)])
    scores = {v.iri: v.score for v in values}
    assert scores["ex:legs"] == 1.0 and scores["ex:id"] < 0.38 and scores["ex:wheels"] < 0.38


@pytest.mark.parametrize("q", ["animals with a weight of 150", "which animal has weight 150"])
def test_the_word_before_the_number_names_its_predicate(q: str) -> None:
    values = [_number(q, "150", "ex:id"), _number(q, "150", "ex:weight")]
    number_units(q, values, [_pred(q, "weight", "ex:weight", 0.9)])
    assert [v.score for v in values] == [0.19, 0.9]


def test_no_named_predicate_leaves_the_readings_alike() -> None:
    q = "which animals have 4 of them"
    values = [_number(q, "4", "ex:id"), _number(q, "4", "ex:legs")]
    number_units(q, values, [_pred(q, "animals", "ex:animals")])  # "animals" is not next to the number
    assert [v.score for v in values] == [0.38, 0.38]


def test_an_order_key_the_question_also_lists_is_shown(tmp_path) -> None:
    # "name and weight … ordered by weight": the weight is an answer column, not only the sort key
    from pathlib import Path

    from kb_dumps.ingest import ingest
    from kbqa.pipeline import Engine
    from kbqa.translators.explore import ExploreTranslator
    from kbqa.translators.explore.rank.rankers import DEFAULT_WEIGHTS_PATH, load_ranker

    zoo = Path(__file__).resolve().parent / "fixtures" / "explore" / "zoo.ttl"
    store = tmp_path / "zoo"
    ingest([zoo], store, profile="generic", progress=False)
    with Engine(store=store) as engine:
        # the hand-set linear ranker, a fixed reference (tests/test_explore.py says why)
        engine.translator = ExploreTranslator(store, store=engine.store, ranker=load_ranker(DEFAULT_WEIGHTS_PATH))
        listed = engine.ask("Show the name and weight of every animal ordered by weight")
        only_key = engine.ask("Show the name of every animal ordered by weight")
    assert listed.ok and only_key.ok
    weights = {"4", "5", "130", "190", "320"}
    assert any(weights <= {c.value for c in col} for col in zip(*listed.answers.rows, strict=True))
    assert not any(weights <= {c.value for c in col if c} for col in zip(*only_key.answers.rows, strict=True))


@pytest.mark.parametrize(("q", "owned"), [
    ("the names of the keepers who look after an animal from 2015", True),
    ("which keepers care for an animal from the year 2015", True),
    ("the animal names of keepers hired in 2015", False),  # the value follows a verb, not the class word
])
def test_a_value_right_after_a_class_word_belongs_to_that_class(q: str, owned: bool) -> None:
    from grounding.schema import PredicateInfo, SchemaMemory
    from kbqa.translators.explore.link.anchors import value_owners

    start = q.index("2015")
    born = Link("value", "ex:birth_year", 0.7, (start, start + 4), "2015", value="2015")
    hired = Link("value", "ex:hire_year", 0.7, (start, start + 4), "2015", value="2015")
    animal = Link("class", "ex:Animal", 1.0, (q.index("animal"), q.index("animal") + 6), "animal")
    keeper = Link("class", "ex:Keeper", 1.0, (q.index("keepers"), q.index("keepers") + 7), "keepers")
    schema = SchemaMemory({}, {"ex:birth_year": PredicateInfo("birth year", "year", domains={"ex:Animal": 6}),
                               "ex:hire_year": PredicateInfo("hire year", "year", domains={"ex:Keeper": 6})}, {}, {})
    value_owners(q, [born, hired], [keeper, animal], schema)
    if owned:
        assert born.score > 0.7 > hired.score
    else:
        assert born.score == hired.score == 0.7


@pytest.mark.parametrize(("q", "numbers", "between"), [
    ("Which towns have between 20,000 and 1,500,000 inhabitants?", [20000.0, 1500000.0], (20000.0, 1500000.0)),
    ("List the towns whose population is over 20000.", [20000.0], None),
    ("Show the rows with ids 3,4,5 only.", [3.0, 4.0, 5.0], None),  # a list, not one number
])
def test_numbers_with_thousands_written_apart(q: str, numbers: list[float], between: tuple | None) -> None:
    from kbqa.translators.explore.link.words import read_cues

    cues = read_cues(q)
    assert [n[0] for n in cues.numbers] == numbers and cues.between == between
