"""Schema names written in short (*emp fname*, *crs code*, *dob*) link to the words a question spells out,
several aggregates are proposed in one query (two attributes, or the extremes of one), and a compared number's
unit word picks the attribute it compares. Questions, paraphrases and negatives are written for these tests over a
small staff KG made here."""

from __future__ import annotations

import pytest

from kbqa.translators.explore import ExploreTranslator
from kbqa.translators.explore.link.name_match import abbrev_score, abbreviates
from kbqa.translators.explore.link.words import Link
from kbqa.translators.explore.propose.shapes import multi_target_aggs
from kbqa.translators.explore.query import Step

HR = "http://example.org/hr/"
STAFF = f"""@prefix hr: <{HR}> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
hr:e1 a hr:employee ; hr:emp_fname "Ada" ; hr:emp_lname "Byron" ; hr:emp_salary 5100 ; hr:emp_bonus 300 ; hr:emp_dob "1990-01-02"^^xsd:date .
hr:e2 a hr:employee ; hr:emp_fname "Alan" ; hr:emp_lname "Turing" ; hr:emp_salary 4700 ; hr:emp_bonus 500 ; hr:emp_dob "1985-06-23"^^xsd:date .
hr:e3 a hr:employee ; hr:emp_fname "Grace" ; hr:emp_lname "Hopper" ; hr:emp_salary 6200 ; hr:emp_bonus 100 ; hr:emp_dob "1979-12-09"^^xsd:date .
hr:d1 a hr:department ; hr:dept_name "Research" ; hr:dept_code "RS" .
hr:d2 a hr:department ; hr:dept_name "Sales" ; hr:dept_code "SL" .
"""


@pytest.fixture(scope="module")
def staff(tmp_path_factory: pytest.TempPathFactory, ingest_dumps) -> ExploreTranslator:
    ttl = tmp_path_factory.mktemp("kg") / "staff.ttl"
    ttl.write_text(STAFF, encoding="utf-8")
    tr = ExploreTranslator(ingest_dumps([ttl], "staff"))
    yield tr
    tr.close()


@pytest.mark.parametrize(("short", "word"), [("emp", "employee"), ("crs", "course"), ("dept", "department"),
                                             ("qty", "quantity"), ("prof", "professor")])
def test_a_shortening_of_a_word(short: str, word: str) -> None:
    assert abbreviates(short, word)


@pytest.mark.parametrize(("short", "word"), [("age", "average"), ("name", "nickname"), ("id", "identifier"),
                                             ("emp", "emp"), ("cat", "dog")])
def test_not_a_shortening(short: str, word: str) -> None:
    assert not abbreviates(short, word)


def test_a_span_spelt_in_short_scores_by_how_much_it_explains() -> None:
    assert abbrev_score(["first", "name"], ["fname"]) == 0.92  # initials, then the last word
    assert abbrev_score(["course", "code"], ["crs", "code"]) == 0.84
    assert abbrev_score(["date", "of", "birth"], ["dob"], frozenset({"of"})) == 0.9
    # the same words written out are the name itself (scored elsewhere), a word left over is no match, and
    # initials ending on a function word are chance ("every ant there" is no *eat*)
    assert abbrev_score(["first", "name"], ["first", "name"]) == 0.0
    assert abbrev_score(["first", "name", "list"], ["fname"]) == 0.0
    assert abbrev_score(["every", "ant", "there"], ["eat"], frozenset({"there"})) == 0.0


def _preds(tr: ExploreTranslator, question: str) -> list[tuple[str, float]]:
    anchors, _ranked, _info = tr.search(question)
    return [(lk.iri.removeprefix(HR), lk.score) for lk in anchors.predicates]


@pytest.mark.parametrize("q", ["List the first names of all employees.", "Which first name does each employee have?"])
def test_a_spelt_out_name_links_the_short_predicate(staff: ExploreTranslator, q: str) -> None:
    preds = _preds(staff, q)
    assert preds and preds[0] == ("emp_fname", 0.92)
    anchors, ranked, _info = staff.search(q)
    shown = {t.get("value") for g in ranked[:3] for row in (g.result.rows if g.result else []) for t in row if t}
    assert {"Ada", "Alan", "Grace"} <= shown


def test_the_other_name_links_its_own_predicate(staff: ExploreTranslator) -> None:
    preds = dict(_preds(staff, "List the last names of all employees."))
    assert preds.get("emp_lname", 0) > preds.get("emp_fname", 0)


def test_a_date_of_birth_links_dob(staff: ExploreTranslator) -> None:
    assert ("emp_dob", 0.9) in _preds(staff, "When is the date of birth of Ada?")
    assert "emp_dob" not in dict(_preds(staff, "When did Ada start?"))


def _multi(tr: ExploreTranslator, question: str) -> list:
    _a, ranked, _info = tr.search(question)
    return [g for g in ranked if len(g.aggs) >= 2]


def _aggs(g) -> set[tuple[str, str]]:
    return {(fn, path[-1].pred.removeprefix(HR)) for fn, path in g.aggs if path}


@pytest.mark.parametrize("q", ["What are the mean salary and bonus of the employees?",
                               "Give the average bonus and salary over all employees."])
def test_one_aggregate_of_two_attributes(staff: ExploreTranslator, q: str) -> None:
    got = [g for g in _multi(staff, q) if _aggs(g) == {("AVG", "emp_salary"), ("AVG", "emp_bonus")}]
    assert got
    values = sorted(float(t["value"]) for t in got[0].result.rows[0])
    assert values[0] == 300.0 and abs(values[1] - 16000 / 3) < 1e-6


@pytest.mark.parametrize("q", ["What are the highest and lowest salaries of the employees?",
                               "Show the range of employee salary: its top and bottom."])
def test_the_extremes_of_one_attribute(staff: ExploreTranslator, q: str) -> None:
    got = [g for g in _multi(staff, q) if _aggs(g) == {("MIN", "emp_salary"), ("MAX", "emp_salary")}]
    assert got and got[0].features.get("multi_agg") == 1.0
    assert sorted(float(t["value"]) for t in got[0].result.rows[0]) == [4700.0, 6200.0]


def test_no_numeric_attribute_no_several_aggregates(staff: ExploreTranslator) -> None:
    assert not [g for g in _multi(staff, "List the first names of all employees.") if g.features.get("multi_agg")]


def _attr(pred: str, start: int) -> tuple:
    return ((Step(pred),), Link("predicate", pred, 1.0, (start, start + 4), pred))


def test_aggregate_words_pair_with_attributes_in_order_of_mention() -> None:
    price, rating = _attr("price", 20), _attr("rating", 40)
    assert multi_target_aggs(["AVG"], [rating, price]) == [[("AVG", price[0]), ("AVG", rating[0])]]
    got = multi_target_aggs(["MAX", "AVG"], [price, rating])
    assert [("MAX", price[0]), ("AVG", rating[0])] in got and len(got) == 3
    assert multi_target_aggs(["AVG"], [price]) == [] and multi_target_aggs([], [price, rating]) == []


def _cmp(g) -> set[tuple[str, str, str]]:
    return {(c.path[-1].pred.removeprefix(HR), c.op, c.value.value) for c in g.conds if c.value is not None and c.path}


@pytest.mark.parametrize("q", ["Which employees have at least 4000 salary and at least 200 bonus?",
                               "List employees having at least 4000 salary plus at least 200 bonus."])
def test_the_word_after_a_compared_number_is_its_attribute(staff: ExploreTranslator, q: str) -> None:
    # the second "at least" stands nearer *salary* (before it) than *bonus*; the number's unit word decides
    _a, ranked, _info = staff.search(q)
    want = {("emp_salary", ">=", "4000"), ("emp_bonus", ">=", "200")}
    got = [g for g in ranked if _cmp(g) == want]
    assert got and got[0].features.get("cmp") == 1.0  # the first reading, not the fallback one
    assert not [g for g in ranked if ("emp_salary", ">=", "200") in _cmp(g) and g.features.get("cmp") == 1.0]


def test_without_a_unit_word_the_nearest_attribute_is_compared(staff: ExploreTranslator) -> None:
    _a, ranked, _info = staff.search("Which employees have a salary of at least 4000 and a bonus of at least 200?")
    assert [g for g in ranked if _cmp(g) == {("emp_salary", ">=", "4000"), ("emp_bonus", ">=", "200")}]
