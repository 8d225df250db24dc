"""A number next to a predicate's name ("4 cylinders", "horsepower of 150") links to that predicate first."""

from __future__ import annotations

from kbqa.translators.explore_anchors import number_units
from kbqa.translators.explore_link import Link

INT = "http://www.w3.org/2001/XMLSchema#integer"


def _number(question: str, text: str, pred: str) -> Link:
    start = question.index(text)
    return Link("value", pred, 0.38, (start, start + len(text)), text, value=text, datatype=INT, label=pred)


def _pred(question: str, text: str, pred: str, score: float = 1.0) -> Link:
    start = question.index(text)
    return Link("predicate", pred, score, (start, start + len(text)), text, label=text)


def test_the_word_after_the_number_names_its_predicate() -> None:
    q = "What is the average mpg of the cars with 4 cylinders?"
    values = [_number(q, "4", "ex:id"), _number(q, "4", "ex:cylinders"), _number(q, "4", "ex:doors")]
    number_units(q, values, [_pred(q, "cylinders", "ex:cylinders"), _pred(q, "mpg", "ex:mpg", 0.9)])
    scores = {v.iri: v.score for v in values}
    assert scores["ex:cylinders"] == 1.0 and scores["ex:id"] < 0.38 and scores["ex:doors"] < 0.38


def test_the_word_before_the_number_names_its_predicate() -> None:
    q = "cars with horsepower of 150"
    values = [_number(q, "150", "ex:id"), _number(q, "150", "ex:horsepower")]
    number_units(q, values, [_pred(q, "horsepower", "ex:horsepower", 0.9)])
    assert [v.score for v in values] == [0.19, 0.9]


def test_no_named_predicate_leaves_the_readings_alike() -> None:
    q = "which cars have 4 of them"
    values = [_number(q, "4", "ex:id"), _number(q, "4", "ex:cylinders")]
    number_units(q, values, [_pred(q, "cars", "ex:cars")])  # "cars" is not next to the number
    assert [v.score for v in values] == [0.38, 0.38]


def test_an_order_key_the_question_also_lists_is_shown(tmp_path) -> None:
    # "name and weight … ordered by weight": the weight is an answer column, not only the sort key
    from pathlib import Path

    from kb_dumps.ingest import ingest
    from kbqa.pipeline import Engine
    from kbqa.translators.explore import ExploreTranslator

    zoo = Path(__file__).resolve().parent / "fixtures" / "explore" / "zoo.ttl"
    store = tmp_path / "zoo"
    ingest([zoo], store, profile="generic", progress=False)
    with Engine(store=store) as engine:
        engine.translator = ExploreTranslator(store, store=engine.store)
        listed = engine.ask("Show the name and weight of every animal ordered by weight")
        only_key = engine.ask("Show the name of every animal ordered by weight")
    assert listed.ok and only_key.ok
    weights = {"4", "5", "130", "190", "320"}
    assert any(weights <= {c.value for c in col} for col in zip(*listed.answers.rows, strict=True))
    assert not any(weights <= {c.value for c in col if c} for col in zip(*only_key.answers.rows, strict=True))


def test_a_value_right_after_a_class_word_belongs_to_that_class() -> None:
    from grounding.schema import PredicateInfo, SchemaMemory
    from kbqa.translators.explore_anchors import value_owners

    q = "the names of the singers who performed in a concert in 2014"
    start = q.index("2014")
    year = Link("value", "ex:concert_year", 0.7, (start, start + 4), "2014", value="2014")
    release = Link("value", "ex:song_release_year", 0.7, (start, start + 4), "2014", value="2014")
    concert = Link("class", "ex:Concert", 1.0, (q.index("concert"), q.index("concert") + 7), "concert")
    singer = Link("class", "ex:Singer", 1.0, (q.index("singers"), q.index("singers") + 7), "singers")
    schema = SchemaMemory({}, {"ex:concert_year": PredicateInfo("year", "year", domains={"ex:Concert": 6}),
                               "ex:song_release_year": PredicateInfo("song release year", "year",
                                                                     domains={"ex:Singer": 6})}, {}, {})
    value_owners(q, [year, release], [singer, concert], schema)
    assert year.score > 0.7 > release.score
