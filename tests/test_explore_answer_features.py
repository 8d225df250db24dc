"""The listwise answer features of explore's rank stage (features/answers.py): candidates whose answers agree
share them, another projection of the same items shares a column, an answer that only repeats the query's own
constant is marked, and a lone or empty answer gets nothing."""

from __future__ import annotations

from kb_dumps.store_types import QueryResult
from kbqa.translators.explore.features.answers import add_answer_features, answer_key
from kbqa.translators.explore.query import Cond, Graph, Step, Term

EX = "http://example.org/"


def _uri(name: str) -> dict[str, str]:
    return {"type": "uri", "value": EX + name}


def _lit(text: str) -> dict[str, str]:
    return {"type": "literal", "value": text}


def _graph(rows: list[list[dict[str, str] | None]], conds: list[Cond] | None = None) -> Graph:
    g = Graph(family="test", focus_class=EX + "Ship", conds=conds or [])
    g.result = QueryResult(kind="select", vars=[f"v{i}" for i in range(len(rows[0]) if rows else 1)], rows=rows)
    g.rows = len(rows)
    return g


def test_agreeing_answers_share_and_a_lone_answer_does_not() -> None:
    a = _graph([[_uri("s1")], [_uri("s2")]])
    b = _graph([[_uri("s2")], [_uri("s1")]])  # the same items in another order
    lone = _graph([[_uri("s3")]])
    add_answer_features([a, b, lone])
    assert a.features["x_ans_share"] == b.features["x_ans_share"] == 0.5
    assert a.features["x_ans_same"] > 0
    assert lone.features["x_ans_share"] == 0.0 and lone.features["x_ans_same"] == 0.0
    assert answer_key(a.result) == answer_key(b.result) != answer_key(lone.result)


def test_another_projection_of_the_same_items_shares_a_column() -> None:
    items = _graph([[_uri("s1")], [_uri("s2")]])
    with_names = _graph([[_uri("s1"), _lit("Aurora")], [_uri("s2"), _lit("Borealis")]])
    other = _graph([[_uri("s9")]])
    add_answer_features([items, with_names, other])
    assert items.features["x_ans_share"] == 0.0  # not the same rows
    assert items.features["x_col_share"] == with_names.features["x_col_share"] == 0.5
    assert other.features["x_col_share"] == 0.0


def test_an_answer_repeating_the_query_constant_is_an_echo() -> None:
    named = Cond(path=(Step(EX + "name"),), op="=", value=Term("literal", "Aurora"))
    echo = _graph([[_lit("Aurora")]], conds=[named])
    answer = _graph([[_uri("s1")]], conds=[named])
    partly = _graph([[_lit("Aurora")], [_lit("Borealis")]], conds=[named])
    add_answer_features([echo, answer, partly])
    assert echo.features["x_ans_echo"] == 1.0
    assert answer.features["x_ans_echo"] == 0.0
    assert partly.features["x_ans_echo"] == 0.0


def test_ask_and_empty_results() -> None:
    yes = Graph(family="test", form="ask")
    yes.result = QueryResult(kind="ask", boolean=True)
    yes2 = Graph(family="test", form="ask")
    yes2.result = QueryResult(kind="ask", boolean=True)
    no = Graph(family="test", form="ask")
    no.result = QueryResult(kind="ask", boolean=False)
    unrun = Graph(family="test")
    add_answer_features([yes, yes2, no, unrun])
    assert yes.features["x_ans_share"] == yes2.features["x_ans_share"] == 1 / 3
    assert no.features["x_ans_share"] == 0.0
    assert unrun.features["x_ans_share"] == 0.0 and unrun.features["x_col_share"] == 0.0
    assert unrun.features["x_ans_echo"] == 0.0
