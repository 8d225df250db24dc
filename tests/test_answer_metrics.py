"""Answer-level metrics on hand-computed cases: set P/R/F1, empty answers (QALD-style vs strict), ASK,
multi-column assignment, value normalisation, macro averages."""

from __future__ import annotations

import json

import pytest
from metric_checks import close

from eval.answer_metrics import (
    XSD,
    AnswerScore,
    AnswerSummary,
    as_answers,
    macro_average,
    score_question,
    term_key,
)
from eval.records import Record
from kb_dumps.store_types import QueryResult

WD = "http://www.wikidata.org/entity/"


def lit(value: str, datatype: str | None = None, lang: str | None = None) -> dict:
    t = {"type": "literal", "value": value}
    if datatype:
        t["datatype"] = XSD + datatype
    if lang:
        t["xml:lang"] = lang
    return t


def test_set_precision_recall():
    s = score_question(["wd:Q1", "wd:Q2"], ["wd:Q1", "wd:Q3", "wd:Q4"])
    close(s.qald, 1 / 3, 1 / 2, 0.4)
    assert s.strict == s.qald and not s.both_empty


def test_duplicates_and_unbound_rows_do_not_count():
    gold = [[{"type": "uri", "value": WD + "Q1"}]]
    pred = {"kind": "select", "vars": ["x"], "rows": [[{"type": "uri", "value": WD + "Q1"}],
                                                      [{"type": "uri", "value": WD + "Q1"}], [None]]}
    close(score_question(gold, pred).qald, 1, 1, 1)


def test_both_empty_qald_style_vs_strict():
    gold_q = "SELECT ?x WHERE { ?x wdt:P31 wd:Q5 . ?x wdt:P19 wd:Q90 }"
    same = "SELECT ?p WHERE { ?p wdt:P19 wd:Q90 . ?p wdt:P31 wd:Q5 }"
    other = "SELECT ?p WHERE { ?p wdt:P19 wd:Q64 }"
    s = score_question([], [], gold_sparql=gold_q, pred_sparql=same)
    assert s.both_empty and s.query_match
    close(s.qald, 1, 1, 1)
    close(s.strict, 1, 1, 1)
    s = score_question([], [], gold_sparql=gold_q, pred_sparql=other)
    assert s.both_empty and s.query_match is False
    close(s.qald, 1, 1, 1)  # GERBIL: gold and prediction both empty -> 1
    close(s.strict, 0, 0, 0)  # strict: an empty result from the wrong query earns nothing
    s = score_question([], None, gold_sparql=gold_q, pred_sparql=None)  # no prediction at all
    close(s.qald, 1, 1, 1)
    close(s.strict, 0, 0, 0)
    # An unanswerable question (no gold query, RuBQ "no-answer") declined by the predictor.
    s = score_question([], None)
    close(s.strict, 1, 1, 1)


def test_one_side_empty():
    s = score_question([], ["wd:Q1"])
    close(s.qald, 0, 0, 0)
    close(s.strict, 0, 0, 0)
    s = score_question(["wd:Q1"], [])
    close(s.qald, 1, 0, 0)  # GERBIL: an empty answer means "could not answer": P = 1, R = 0
    assert s.note == "no answer given"


def test_ask_by_equality():
    close(score_question(True, True).qald, 1, 1, 1)
    close(score_question(True, False).qald, 0, 0, 0)
    close(score_question(False, False).strict, 1, 1, 1)  # a boolean is never "empty"
    ask = QueryResult(kind="ask", boolean=True)
    close(score_question({"kind": "ask", "vars": [], "rows": [], "boolean": True}, ask).qald, 1, 1, 1)
    # BESTIARY writes some yes/no golds as SELECT (IF(..., 'True', 'False') AS ?res).
    one_cell = {"kind": "select", "vars": ["res"], "rows": [[lit("True")]]}
    close(score_question(True, one_cell).qald, 1, 1, 1)
    s = score_question(True, ["wd:Q1", "wd:Q2"])
    close(s.qald, 0, 0, 0)
    assert "not one boolean" in s.note


def test_multi_column_best_assignment():
    gold = {"kind": "select", "vars": ["x", "y"],
            "rows": [[{"type": "uri", "value": WD + "Q1"}, lit("1990-01-01T00:00:00Z", "dateTime")],
                     [{"type": "uri", "value": WD + "Q2"}, lit("1995-01-01T00:00:00Z", "dateTime")]]}
    # Columns in another order, an extra label column, and other spellings of the same values.
    pred = {"kind": "select", "vars": ["date", "item", "label"],
            "rows": [["1990-01-01", "wd:Q1", lit("A", lang="en")],
                     [lit("1995", "gYear"), "wd:Q2", lit("B", lang="en")]]}
    s = score_question(gold, pred)
    close(s.qald, 1, 1, 1)
    # One row's pairing wrong: (Q2, 1990) is not a gold row.
    pred_bad = {"kind": "select", "vars": ["item", "date"],
                "rows": [["wd:Q1", "1990-01-01"], ["wd:Q2", "1990-01-01"]]}
    close(score_question(gold, pred_bad).qald, 1 / 2, 1 / 2, 1 / 2)
    # Only one of the two gold columns predicted: P and R scaled by 1/2.
    close(score_question(gold, ["wd:Q1", "wd:Q2"]).qald, 1 / 2, 1 / 2, 1 / 2)


@pytest.mark.parametrize("a, b", [
    (lit("1990-01-01T00:00:00Z", "dateTime"), "1990-01-01"),
    (lit("1990", "gYear"), lit("1990-01-01", "date")),
    ("+1990-01-01T00:00:00Z", "1990-01-01"),
    (lit("1.0", "decimal"), "1"),
    (lit("1", "integer"), lit("1.0E0", "double")),
    (lit("679", "decimal"), 679),
    (lit("true", "boolean"), True),
    ("True", lit("1", "boolean")),
    (lit("Paris", lang="en"), lit("paris", lang="fr")),
    (lit("Paris", "string"), "Paris"),
    ("wd:Q1", {"type": "uri", "value": WD + "Q1"}),
    ("https://www.wikidata.org/entity/Q1", WD + "Q1"),
    ("ns:m.0abc", {"type": "uri", "value": "http://rdf.freebase.com/ns/m.0abc"}),
])
def test_normalisation_equal(a, b):
    assert term_key(a) == term_key(b)


@pytest.mark.parametrize("a, b", [
    (lit("1990-01-01T10:30:00Z", "dateTime"), "1990-01-01"),
    (lit("1990-01-02", "date"), lit("1990", "gYear")),
    ("1", "2"),
    (lit("1", "integer"), lit("true", "boolean")),
    ("wd:Q1", "Q1"),
    ("Paris", "Paris, France"),
])
def test_normalisation_different(a, b):
    assert term_key(a) != term_key(b)


def test_dates_and_numbers_in_scoring():
    gold = [lit("1990-01-01T00:00:00Z", "dateTime"), lit("38483957", "decimal")]
    pred = ["1990-01-01", "38483957.0"]
    close(score_question(gold, pred).qald, 1, 1, 1)


def test_answer_forms_accepted():
    qr = QueryResult(kind="select", vars=["x"], rows=[[{"type": "uri", "value": WD + "Q1"}]])
    rec = Record(id="1", questions={"en": "q"}, sparql=None, answers=[[{"type": "uri", "value": WD + "Q1"}]],
                 answer_vars=["x"])
    sparql_json = {"head": {"vars": ["x"]}, "results": {"bindings": [{"x": {"type": "uri", "value": WD + "Q1"}}]}}
    bindings = [{"x": {"type": "uri", "value": WD + "Q1"}}]
    for form in (qr, qr.to_dict(), rec.gold_result(), sparql_json, bindings, ["wd:Q1"], [[WD + "Q1"]]):
        close(score_question(rec.gold_result(), form).qald, 1, 1, 1)
    assert as_answers(None).empty and as_answers(False).as_boolean is False
    with pytest.raises(TypeError):
        as_answers(3.5)


def test_macro_averages_side_by_side():
    both_empty_wrong = score_question([], [], gold_sparql="SELECT ?x WHERE { ?x wdt:P1 wd:Q1 }",
                                      pred_sparql="SELECT ?x WHERE { ?x wdt:P2 wd:Q1 }")
    no_answer = score_question(["wd:Q1"], [])
    perfect = score_question(["wd:Q1"], ["wd:Q1"])
    summary = macro_average([both_empty_wrong, no_answer, perfect])
    assert summary.n == 3 and summary.both_empty == 1 and summary.both_empty_unmatched == 1
    # QALD-style: P = (1 + 1 + 1)/3, R = (1 + 0 + 1)/3, mean F1 = (1 + 0 + 1)/3
    assert summary.qald["precision"] == pytest.approx(1)
    assert summary.qald["recall"] == pytest.approx(2 / 3)
    assert summary.qald["f1"] == pytest.approx(2 / 3)
    assert summary.qald["f1_qald"] == pytest.approx(2 * 1 * (2 / 3) / (1 + 2 / 3))  # 0.8
    # Strict: the both-empty question scores 0: P = 2/3, R = 1/3, F1 = 1/3
    assert summary.strict["precision"] == pytest.approx(2 / 3)
    assert summary.strict["recall"] == pytest.approx(1 / 3)
    assert summary.strict["f1"] == pytest.approx(1 / 3)
    assert summary.strict["f1_qald"] == pytest.approx(2 * (2 / 3) * (1 / 3) / 1)
    assert AnswerSummary.from_dict(json.loads(json.dumps(summary.to_dict()))) == summary
    assert AnswerScore.from_dict(json.loads(json.dumps(no_answer.to_dict()))) == no_answer
    assert macro_average([]).qald["f1"] == 0.0


def test_real_gold_answers_score_perfectly_against_themselves():
    from eval.loaders import load_benchmark

    recs = [r for r in load_benchmark("wwq-dev") if r.usable]
    scores = [score_question(r.gold_result(), r.gold_result()) for r in recs]
    summary = macro_average(scores)
    assert summary.n == 454 and summary.qald["f1"] == pytest.approx(1.0) and summary.strict["f1"] == pytest.approx(1.0)


def test_numbers_beyond_the_decimal_range_compare_without_overflow():
    """A store may hold "1E+999999" (a double's lexical form has no bound): compared in scientific form, equal
    to the same number written differently, never expanded digit by digit."""
    from eval.answer_metrics import term_key

    big = {"type": "literal", "value": "1E+999999", "datatype": "http://www.w3.org/2001/XMLSchema#double"}
    same = {"type": "literal", "value": "1.0e+999999", "datatype": "http://www.w3.org/2001/XMLSchema#double"}
    other = {"type": "literal", "value": "2E+999999", "datatype": "http://www.w3.org/2001/XMLSchema#double"}
    assert term_key(big) == term_key(same) != term_key(other)
    assert len(term_key(big)[1]) < 40
