"""QCompiler: tokenizer and parser (every grammar rule), validation errors, mutation fuzzing, lowering to SPARQL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assembler.plan import Placeholder, Query, SubQuery, Triple, Union, Var
from assembler.writer import write_sparql
from kbqa.frontends.desq import parse_desq
from kbqa.frontends.qcompiler import bind_join, parse_qcompiler
from kbqa.frontends.qcompiler_parse import AtomicQuery, DependentQuery, parse_expression, render
from kbqa.pipeline import Engine
from kbqa.translators.base import TranslateError

LEAVES = json.loads((Path(__file__).parent / "fixtures" / "multihop" / "leaves.json").read_text(encoding="utf-8"))


def shape(node) -> object:
    if isinstance(node, AtomicQuery):
        return node.text
    if isinstance(node, DependentQuery):
        return ("*", shape(node.left), shape(node.right))
    return ("+", *[shape(p) for p in node.parts])


@pytest.mark.parametrize("text, expected", [
    ("Who directed Titanic?", "Who directed Titanic?"),
    ("A + B", ("+", "A", "B")),
    ("A + B + C", ("+", "A", "B", "C")),
    ("A * B {x}", ("*", "A", "B {x}")),
    ("A × B {x}", ("*", "A", "B {x}")),
    ("A * B {x} * C {y}", ("*", ("*", "A", "B {x}"), "C {y}")),  # left-associative
    ("A + B * C {x}", ("+", "A", ("*", "B", "C {x}"))),  # * tighter than +
    ("(A + B) * C {x}", ("*", ("+", "A", "B"), "C {x}")),
    ("A * (B {x} + C {x})", ("*", "A", ("+", "B {x}", "C {x}"))),
    ("((A))", "A"),
    ("A + (B + C)", ("+", "A", "B", "C")),
    ("Who directed Titanic (1997 film)? * When was {d} born?", ("*", "Who directed Titanic (1997 film)?", "When was {d} born?")),
    ("(Who directed Titanic (1997 film)? + Who made C++?) * Born {x}?",
     ("*", ("+", "Who directed Titanic (1997 film)?", "Who made C++?"), "Born {x}?")),
    ("What is 2+2? + What is C*?", ("+", "What is 2+2?", "What is C*?")),
    ("```\nA + B\n```", ("+", "A", "B")),
])
def test_grammar_rules(text: str, expected: object) -> None:
    parsed = parse_expression(text)
    assert parsed.errors == []
    assert shape(parsed.ast) == expected
    assert shape(parse_expression(render(parsed.ast)).ast) == expected  # render round-trips


@pytest.mark.parametrize("text, stage, words", [
    ("", "parse", "empty"),
    ("A + ", "parse", "ends with the operator"),
    ("* A", "parse", "at the start"),
    ("A + * B", "parse", "found the operator"),
    ("(A + B", "parse", "never closed"),
    ("A + B)", "parse", "closes no group"),
    ("()", "parse", "empty group"),
    ("(A + B) C", "parse", "expected an operator"),
    ("A * B", "validate", "dependent-needs-placeholder"),
    ("A * (B {x} + C)", "validate", "dependent-needs-placeholder"),
    ("When was {d} born?", "validate", "independent-leaf"),
    ("A + When was {d} born?", "validate", "independent-leaf"),
    ("A * B {x} {y}", "validate", "one-name"),
    ("A * B {two words}", "validate", "placeholder-name"),
    ("A * B {x} }", "validate", "placeholder-braces"),
    ("A * {x}", "validate", "leaf-text"),
])
def test_errors_are_structured_and_name_the_rule(text: str, stage: str, words: str) -> None:
    parsed = parse_expression(text)
    assert parsed.ast is None and parsed.errors
    assert parsed.errors[0].stage == stage
    assert any(words in e.message for e in parsed.errors)
    if stage == "validate":  # names the leaf
        assert all(e.ac and e.ac.startswith("L") and "leaf L" in e.message for e in parsed.errors)


# ---- property-based: valid expressions, then mutations -------------------------------------------

_words = st.sampled_from(["Who", "directed", "Titanic", "(1997 film)", "C++", "2+2", "x*y", "born?", "the", "film"])
_first = st.sampled_from(["Who", "What", "C++", "Titanic", "2+2"])  # a leaf never starts with "(" (a group would)
_leaf = st.tuples(_first, st.lists(_words, max_size=3)).map(lambda fw: " ".join([fw[0], *fw[1]]))


def _expr(depth: int) -> st.SearchStrategy[str]:
    if depth == 0:
        return _leaf
    sub = _expr(depth - 1)
    return st.one_of(
        _leaf,
        st.tuples(sub, sub).map(lambda ab: f"{ab[0]} + {ab[1]}"),
        st.tuples(sub, _leaf).map(lambda ab: f"({ab[0]}) * {ab[1]} {{x}}"),
    )


@settings(max_examples=150, deadline=None)
@given(_expr(3))
def test_generated_valid_expressions_parse(text: str) -> None:
    parsed = parse_expression(text)
    assert parsed.errors == [], text
    assert parse_expression(render(parsed.ast)).errors == []


@settings(max_examples=200, deadline=None)
@given(_expr(3), st.lists(st.tuples(st.integers(0, 400), st.sampled_from(
    ["(", ")", " + ", " * ", "{x}", "{", "}", " ", "", "×", "{ y}"])), max_size=4), st.booleans())
def test_mutated_expressions_never_crash(text: str, edits: list[tuple[int, str]], delete: bool) -> None:
    for pos, piece in edits:
        pos = pos % (len(text) + 1)
        text = text[:pos] + piece + text[pos + (1 if delete else 0):]
    result = parse_qcompiler(text, lambda q: LEAVES.get(q, "not desq"))
    assert (result.plan is None) == bool(result.errors)
    assert all(e.stage in ("parse", "validate", "translate", "assemble") for e in result.errors)
    assert not any(e.stage == "internal" for e in result.errors), result.errors


def test_non_text_input_is_an_error() -> None:
    assert parse_qcompiler(None).errors[0].stage == "parse"  # type: ignore[arg-type]


# ---- lowering ------------------------------------------------------------------------------------


def test_bind_join_replaces_the_mention_placeholder_only() -> None:
    parsed = parse_desq(LEAVES["Which films did {director} direct?"], rewrite=bind_join("director"))
    assert parsed.ok, parsed.errors
    [triple] = parsed.plan.find_all(Triple)
    assert triple.s == Var("var1", ac="AC2") and isinstance(triple.p, Placeholder) and triple.p.name == "director"
    assert triple.o.name == "director" and isinstance(triple.o, Var)
    assert "{director}" not in [g.label for g in parsed.grounding]


def test_one_translation_per_distinct_leaf_run_concurrently() -> None:
    calls: list[str] = []

    def translate(q: str) -> str:
        calls.append(q)
        return LEAVES[q]

    result = parse_qcompiler("Who directed Titanic? + Who directed Titanic? * Where was {director} born?", translate)
    assert result.ok, result.errors
    assert sorted(calls) == ["Where was {director} born?", "Who directed Titanic?"]
    assert [leaf.calls for leaf in result.leaves] == [1, 0, 1]


def test_leaf_without_the_mention_is_a_validate_error() -> None:
    result = parse_qcompiler("Who directed Titanic? * Where is {x}?", lambda q: LEAVES["Who directed Inception?"])
    assert not result.ok
    assert any(e.stage == "validate" and "nothing for {x}" in e.message and e.ac == "L2" for e in result.errors)


def test_translator_failure_is_a_translate_error_naming_the_leaf() -> None:
    def translate(q: str) -> str:
        if q not in LEAVES:
            raise TranslateError(f"no output for {q!r}")
        return LEAVES[q]

    result = parse_qcompiler("Who directed Titanic? + Unknown?", translate)
    assert [e.ac for e in result.errors if e.stage == "translate"] == ["L2"]


def test_translator_bug_is_internal_naming_the_leaf() -> None:
    """A leaf translator that raises something other than a KBQAError has a bug: stage internal, not translate."""
    result = parse_qcompiler("Who directed Titanic? + Unknown?", lambda q: LEAVES[q])
    assert [(e.stage, e.ac) for e in result.errors] == [("internal", "L2")]
    assert "KeyError" in result.errors[0].message


def test_star_with_limit_on_the_left_becomes_a_subquery() -> None:
    expr = "What is the first film Steven Spielberg directed in identifier order? * Who is a cast member of {film}?"
    result = parse_qcompiler(expr, lambda q: LEAVES[q])
    assert result.ok, result.errors
    items = result.plan.where.items
    assert isinstance(items[0], SubQuery) and items[0].query.limit == 1
    sparql = write_sparql(result.plan, "wikidata", mapping={
        "l1_director": "wdt:P57", "l1_spielberg": "wd:Q8877", "l2_cast_member": "wdt:P161"}).sparql
    assert " ".join(sparql.split()).endswith(
        "SELECT ?var1 WHERE { { SELECT ?var2 WHERE { ?var2 wdt:P57 wd:Q8877 . } ORDER BY ASC(?var2) LIMIT 1 } "
        "?var2 wdt:P161 ?var1 . }")


def test_plain_left_side_is_inlined() -> None:
    result = parse_qcompiler("Who directed Titanic? * Where was {director} born?", lambda q: LEAVES[q])
    sparql = write_sparql(result.plan, "wikidata", mapping={
        "l1_titanic": "wd:Q44578", "l1_director": "wdt:P57", "l2_place_of_birth": "wdt:P19"}).sparql
    assert " ".join(sparql.split()).endswith("SELECT ?var1 WHERE { wd:Q44578 wdt:P57 ?var2 . ?var2 wdt:P19 ?var1 . }")


def test_plus_is_a_union_of_subqueries_with_a_part_variable() -> None:
    result = parse_qcompiler("Who directed Titanic? + Who directed Inception?", lambda q: LEAVES[q])
    plan = result.plan
    assert isinstance(plan, Query) and [v.name for v in plan.projection] == ["answer", "part"]
    union = plan.where.items[0]
    assert isinstance(union, Union) and len(union.groups) == 2
    assert all(isinstance(g.items[0], SubQuery) for g in union.groups)
    assert Query.from_json_dict(json.loads(json.dumps(plan.to_dict()))) == plan


@pytest.fixture(scope="module")
def engine(wikidata_mini_store: Path):
    with Engine(wikidata_mini_store) as e:
        yield e


def test_plus_with_one_empty_side_keeps_the_other_sides_answers(engine: Engine) -> None:
    empty = "Which film did Christopher Nolan direct that has no genre drama?"
    alone = parse_qcompiler(empty, lambda q: LEAVES[q])
    assert engine.assembler.assemble(alone.plan).status == "empty"
    result = parse_qcompiler(f"{empty} + Who directed Titanic?", lambda q: LEAVES[q])
    out = engine.assembler.assemble(result.plan)
    assert out.status == "ok"
    assert [(r[0].value, r[1].value) for r in out.answers.rows] == [("http://www.wikidata.org/entity/Q42574", "L2")]


def test_limit_subquery_answers_on_wikidata_mini(engine: Engine) -> None:
    expr = "What is the first film Steven Spielberg directed in identifier order? * Who is a cast member of {film}?"
    out = engine.assembler.assemble(parse_qcompiler(expr, lambda q: LEAVES[q]).plan)
    gold = engine.assembler.store.query(
        "PREFIX wd: <http://www.wikidata.org/entity/> PREFIX wdt: <http://www.wikidata.org/prop/direct/> "
        "SELECT ?a WHERE { wd:Q11621 wdt:P161 ?a }")
    assert out.status == "ok"
    assert {r[0].value for r in out.answers.rows} == {r[0]["value"] for r in gold.rows} != set()


def test_gbnf_grammars_are_well_formed() -> None:
    from kbqa.translators.grammars import grammar_for
    from kbqa.translators.grammars_qcompiler_pyrag import PYRAG_GBNF, QCOMPILER_GBNF, check_gbnf

    assert check_gbnf(QCOMPILER_GBNF) == [] and check_gbnf(PYRAG_GBNF) == []
    assert check_gbnf("root ::= a (") == ["rule root: '(' is never closed", "rule a is used but never defined"]
    assert grammar_for("qcompiler") == QCOMPILER_GBNF and grammar_for("pyrag") == PYRAG_GBNF
