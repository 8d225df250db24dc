"""The DeSQ front-end: the DESIGN example, model habits it tolerates, malformed output it reports
(as collected, structured errors, never an exception), and DeSQ text/JSON written back."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assembler.plan import BinaryOp, Filter, Literal, Optional, Placeholder, Triple, Union, Var
from kbqa.frontends.desq import MAX_ERRORS, ParseResult, parse_desq, to_desq_text
from kbqa.frontends.desq_writer import to_desq_json

FIXTURES = Path(__file__).parent / "fixtures" / "desq"
DESIGN = (FIXTURES / "design_example.desq").read_text()
ALL_TEXTS = [p.read_text() for p in sorted(FIXTURES.glob("*.desq"))]
WDT = "http://www.wikidata.org/prop/direct/"


def messages(result: ParseResult) -> str:
    return "\n".join(str(e) for e in result.errors)


def test_design_example() -> None:
    r = parse_desq(DESIGN)
    assert r.ok, messages(r)
    q = r.plan
    assert q is not None and q.form == "select" and q.ac == "AC1"
    assert [v.name for v in q.projection] == ["var1", "var2"]
    t2, t3, f4 = q.where.items
    assert isinstance(t2, Triple) and t2.ac == "AC2" and t2.s == Var("var3", ac="AC2")
    assert isinstance(t2.p, Placeholder) and t2.p.kind == "property" and t2.p.label == "capital"
    assert t2.p.description == "seat of government of a country or region"
    assert t2.p.guessed_uri == WDT + "P36"
    assert isinstance(t3, Triple) and t3.p.guessed_uri is None  # type: ignore[union-attr]
    assert isinstance(f4, Filter) and f4.ac == "AC4" and isinstance(f4.expr, BinaryOp)
    assert f4.expr.right == Literal("10000", "http://www.w3.org/2001/XMLSchema#integer", ac="AC4")
    assert [c.id for c in r.constraints] == ["AC1", "AC2", "AC3", "AC4"]
    assert r.constraints[3].text == "the population is below 10000"
    assert [g.name for g in r.grounding] == ["capital", "population"]


def test_json_form_gives_the_same_plan() -> None:
    text_plan = parse_desq(DESIGN).plan
    r = parse_desq((FIXTURES / "design_example.json").read_text())
    assert r.ok, messages(r)
    assert r.plan == text_plan


def test_json_form_names_each_missing_list() -> None:
    r = parse_desq('{"format": "desq/1", "grounding": "none"}')
    assert [e.message for e in r.errors] == ["missing 'constraints' (a list of {id, text, fragment})",
                                             "missing 'grounding' (a list of {name, kind, label, description, uri})"]
    only_grounding_missing = json.dumps({"constraints": [{"id": "AC1", "text": "t", "fragment": "ASK"}]})
    assert "missing 'grounding' (a list of {name, kind, label, description, uri})" in messages(
        parse_desq(only_grounding_missing))


def test_model_habits_are_tolerated() -> None:
    sloppy = """Sure! Here is the decomposition.
```desq
FORMAT desq/1

atomic constraints:
ac1: we need the capital and the population of a country

AC2: a country has a capital
AC3 : a country has a population
**Fragments:**
AC1 => SELECT ?var1 ?var7

AC2=> ?var3 [capital] ?var1
AC3 => ?var3 [ population ] ?var7
## grounding
- [capital] Property | capital | seat of government | wdt:P36
[population] property | population | number of people | none
```"""
    r = parse_desq(sloppy)
    assert r.ok, messages(r)
    assert [c.id for c in r.constraints] == ["AC1", "AC2", "AC3"]
    assert len(r.plan.where.items) == 2  # type: ignore[union-attr]


def test_fragments_span_lines_and_roles_paths_are_read() -> None:
    text = """ATOMIC CONSTRAINTS
AC1: x
AC2: y
AC3: z
FRAGMENTS
AC1 => SELECT ?var1
AC2 => OPTIONAL {
   ?var1 p:[award] ?var2 .
   ?var2 pq:[point_in_time] ?var3 }
AC3 => { ?var1 ^[child]/[sibling]+ ?var4 }
   UNION
   { ?var1 [label_of] "a \\"quoted\\" | label"@en }
GROUNDING
[award] property | award received | an award
[point_in_time] property | point in time | when
[child] property | child | a child
[sibling] property | sibling | a sibling
[label_of] property | name \\| title | the name
"""
    r = parse_desq(text)
    assert r.ok, messages(r)
    opt, union = r.plan.where.items  # type: ignore[union-attr]
    assert isinstance(opt, Optional) and opt.ac == "AC2"
    roles = [t.p.role for t in opt.group.items]  # type: ignore[attr-defined]
    assert roles == ["p", "pq"]
    assert isinstance(union, Union) and len(union.groups) == 2
    assert union.groups[1].items[0].o == Literal('a "quoted" | label', lang="en", ac="AC3")  # type: ignore[attr-defined]
    assert r.grounding[-1].label == "name | title"


# ---- malformed model output: structured errors, never an exception ---------------------------

MALFORMED = {
    "missing section": (DESIGN.split("GROUNDING")[0], "missing section GROUNDING"),
    "unknown placeholder": (DESIGN.replace("?var3 [population]", "?var3 [inhabitants]"),
                            "[inhabitants] is used but has no grounding line"),
    "unused placeholder": (DESIGN + "[area] property | area | surface\n", "[area] has a grounding line but no"),
    "unbalanced braces": (DESIGN.replace("FILTER(?var2 < 10000)", "OPTIONAL { ?var3 [population] ?var2 ."),
                          "unbalanced braces"),
    "unbalanced closing brace": (DESIGN.replace("FILTER(?var2 < 10000)", "FILTER(?var2 < 10000) }"),
                                 "unbalanced braces"),
    "wrong kind in predicate": (DESIGN.replace("[capital] property", "[capital] entity"),
                                "[capital] is an entity in predicate position"),
    "property as object": (DESIGN.replace("?var3 [population] ?var2 .", "?var3 ?var2 [population] ."),
                           "[population] is a property outside predicate position"),
    "SERVICE": (DESIGN.replace("FILTER(?var2 < 10000)", "SERVICE <http://x> { ?a ?b ?c }"), "SERVICE is refused"),
    "unknown kind": (DESIGN.replace("[capital] property", "[capital] relation"), "is not one of entity"),
    "AC without fragment": (DESIGN.replace("AC4: the population", "AC5: more\nAC4: the population"),
                            "AC5 has no fragment"),
    "projected var unbound": (DESIGN.replace("SELECT ?var1 ?var2", "SELECT ?var1 ?var9"),
                              "?var9 is projected but occurs in no pattern"),
    "label in placeholder name": (DESIGN.replace("[capital] ?var1", "[capital city] ?var1"),
                                  "must be an identifier"),
    "no query form": (DESIGN.replace("SELECT ?var1 ?var2", "?var1 ?x ?var2 ."), "no query form"),
    "unknown prefix": (DESIGN.replace("?var3 [capital]", "foo:Bar [capital]"), "unknown prefix foo:"),
    "unknown function": (DESIGN.replace("FILTER(?var2 < 10000)", "FILTER(EVIL(?var2))"), "unknown function"),
    "wrong arity": (DESIGN.replace("FILTER(?var2 < 10000)", "FILTER(LANG(?var2, ?var1))"), "LANG takes 1 arguments"),
    "unknown format": ("FORMAT desq/9\n" + DESIGN, "unknown format 'desq/9'"),
    "unknown format JSON": ('{"format": "desq/2", "constraints": [], "grounding": []}', "unknown format 'desq/2'"),
    "bad JSON": ('{"format": "desq/1", "constraints": [', "invalid JSON"),
    "empty output": ("", "missing section ATOMIC CONSTRAINTS"),
    "role on an entity": (DESIGN.replace("?var3 [capital] ?var1", "?var3 [capital] p:[france]")
                          + "[france] entity | France | country\n", "carries the role p:"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_output_gives_structured_errors(case: str) -> None:
    text, expected = MALFORMED[case]
    r = parse_desq(text)
    assert r.plan is None and not r.ok
    assert expected in messages(r), messages(r)
    for e in r.errors:
        assert e.stage in ("parse", "validate") and e.message


def test_problems_are_collected_not_stopped_at_the_first() -> None:
    text = DESIGN.replace("?var3 [population]", "?var3 [inhabitants]").replace(
        "FILTER(?var2 < 10000)", "FILTER(?var2 < ") + "[area] property | area | surface\n"
    r = parse_desq(text)
    joined = messages(r)
    assert [e.stage for e in r.errors] == ["parse", "validate", "validate", "validate"], joined
    assert r.errors[0].ac == "AC4" and r.errors[0].line == 10
    assert "[inhabitants] is used but has no grounding line" in joined and r.errors[1].ac == "AC3"
    assert "[area] has a grounding line" in joined and "[population] has a grounding line" in joined


def test_error_lines_point_into_the_text() -> None:
    text = DESIGN.replace("AC4 => FILTER(?var2 < 10000)", "AC4 => FILTER(\n  ?var2 < 10000 &&\n  ?var2 <> 3)")
    r = parse_desq(text)
    (err,) = [e for e in r.errors if e.ac == "AC4"]
    assert err.stage == "parse" and err.line == 12 and "'<>'" in err.message
    assert "<> 3" in text.splitlines()[err.line - 1]


@pytest.mark.parametrize("garbage", [
    "".join(random.Random(7).choice("{}[]()?<>\"'\\|.;,ACFRAGMENTS=>\n x") for _ in range(1_000_000)),
    "FRAGMENTS\nAC1 => " + "(" * 5000 + "\nGROUNDING\n",
    "FRAGMENTS\nAC1 => SELECT ?x " + "{" * 5000 + "\n",
    "\x00\x01\ufffd" * 1000,
    "[" * 10000,
    "{" * 10000,
])
def test_garbage_never_raises(garbage: str) -> None:
    r = parse_desq(garbage)
    assert r.plan is None and r.errors
    assert len(r.errors) <= MAX_ERRORS + 1


def test_errors_are_capped() -> None:
    text = DESIGN + "".join(f"[unused{i}] property | u | v\n" for i in range(200))
    r = parse_desq(text)
    assert len(r.errors) == MAX_ERRORS + 1
    assert "more problems not shown" in r.errors[-1].message


def test_non_string_input_is_an_error() -> None:
    r = parse_desq(None)  # type: ignore[arg-type]
    assert r.errors and r.plan is None


# ---- writing DeSQ back -----------------------------------------------------------------------

@pytest.mark.parametrize("text", ALL_TEXTS)
def test_text_and_json_written_back_parse_to_the_same_plan(text: str) -> None:
    r = parse_desq(text)
    assert r.ok, messages(r)
    again = parse_desq(to_desq_text(r))
    assert again.ok, messages(again)
    assert again.plan == r.plan
    assert [c.text for c in again.constraints] == [c.text for c in r.constraints]
    from_json = parse_desq(json.dumps(to_desq_json(r)))
    assert from_json.plan == r.plan
    # A bare Plan (no AC sentences) still yields readable, parseable DeSQ.
    bare = parse_desq(to_desq_text(r.plan))  # type: ignore[arg-type]
    assert bare.ok and bare.plan == r.plan


# ---- mutation fuzzing: the parser never crashes on damaged model output ---------------------

@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(ALL_TEXTS))
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["del", "dup", "swap", "ins", "line_del", "line_dup", "line_swap"]))
        lines = text.split("\n")
        if op.startswith("line") and len(lines) > 1:
            i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            if op == "line_del":
                del lines[i]
            elif op == "line_dup":
                lines.insert(i, lines[j])
            else:
                lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
        elif text:
            i, j = draw(st.integers(0, len(text) - 1)), draw(st.integers(0, len(text) - 1))
            if op == "del":
                text = text[:i] + text[i + 1:]
            elif op == "dup":
                text = text[:i] + text[i] + text[i:]
            elif op == "swap":
                chars = list(text)
                chars[i], chars[j] = chars[j], chars[i]
                text = "".join(chars)
            else:
                text = text[:i] + draw(st.sampled_from(list("{}[]()<>\"'\\|.;,?*^/#") + ["SERVICE", "AC9 =>"])) + text[i:]
    return text


@settings(max_examples=200, deadline=None)
@given(mutated())
def test_mutated_texts_never_crash(text: str) -> None:
    r = parse_desq(text)
    assert isinstance(r, ParseResult)
    assert (r.plan is None) == bool(r.errors)
    # a crash inside the parser is reported as stage internal (our bug), which fails this test
    assert not [e for e in r.errors if e.stage == "internal"], r.errors
    for e in r.errors:
        assert e.stage in ("parse", "validate") and isinstance(e.message, str) and e.message


def test_headers_with_nothing_under_them_are_a_parse_error() -> None:
    """Found by the fuzz test: empty sections gave no Plan and no error."""
    r = parse_desq("ATOMIC CONSTRAINTS\nFRAGMENTS\nGROUNDING\n[p] property | p | p\n")
    assert r.plan is None and [e.stage for e in r.errors] == ["parse"] and "no atomic constraints" in r.errors[0].message
