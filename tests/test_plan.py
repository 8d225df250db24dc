"""The Plan (IR): JSON round-trip (fixtures and hypothesis-generated plans) and the tree helpers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assembler import plan as ir
from kbqa.frontends.desq import parse_desq

FIXTURES = Path(__file__).parent / "fixtures" / "desq"
XSD = "http://www.w3.org/2001/XMLSchema#"


def roundtrip(node: ir.Node) -> ir.Node:
    return ir.Node.from_dict(json.loads(json.dumps(node.to_dict())))


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.desq")))
def test_fixture_plans_roundtrip_through_json(name: str) -> None:
    plan = parse_desq((FIXTURES / name).read_text()).plan
    assert plan is not None
    back = roundtrip(plan)
    assert back == plan
    assert back.to_dict() == plan.to_dict()


def test_to_dict_tags_every_node_and_keeps_ac() -> None:
    q = ir.Query(projection=[ir.Var("x", ac="AC1")], where=ir.Group([ir.Triple(ir.Var("x"), ir.Placeholder("p", "property", "pq"),
                                                                   ir.Literal("a", lang="en"), ac="AC2")]), ac="AC1")
    d = q.to_dict()
    assert d["node"] == "query" and d["ac"] == "AC1"
    triple = d["where"]["items"][0]
    assert triple["node"] == "triple" and triple["ac"] == "AC2"
    assert triple["p"] == {"node": "placeholder", "name": "p", "kind": "property", "role": "pq", "label": "",
                           "description": "", "guessed_uri": None}


@pytest.mark.parametrize("bad", [{"node": "service", "iri": "x"}, {"node": "var", "name": "x", "extra": 1}, {"x": 1}])
def test_from_dict_refuses_unknown_nodes_and_fields(bad: dict) -> None:
    with pytest.raises(ValueError):
        ir.Node.from_dict(bad)


def test_helpers_walk_placeholders_and_pattern_vars() -> None:
    sub = ir.Query(projection=[ir.Projection(ir.Aggregate("COUNT", ir.Var("z")), ir.Var("n"))],
                where=ir.Group([ir.Triple(ir.Var("z"), ir.IRI("http://e/p"), ir.Var("w"))]))
    g = ir.Group([
        ir.Triple(ir.Var("a"), ir.Placeholder("p", "property"), ir.Placeholder("e")),
        ir.Optional(ir.Group([ir.Triple(ir.Var("a"), ir.IRI("http://e/q"), ir.Var("b"))])),
        ir.Minus(ir.Group([ir.Triple(ir.Var("a"), ir.IRI("http://e/r"), ir.Var("hidden"))])),
        ir.Union([ir.Group([ir.Bind(ir.Literal("1"), ir.Var("c"))]), ir.Group([ir.Values([ir.Var("d")], [[ir.IRI("http://e/x")]])])]),
        ir.SubQuery(sub),
        ir.Filter(ir.BinaryOp("=", ir.Var("f"), ir.Literal("2"))),
    ])
    assert ir.pattern_vars(g) == {"a", "b", "c", "d", "n"}
    assert [p.name for p in ir.placeholders(g)] == ["p", "e"]
    assert sum(isinstance(n, ir.Triple) for n in ir.walk(g)) == 4


# ---- hypothesis: any plan built from the node types survives JSON -----------------------------

names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True)
acs = st.none() | st.sampled_from(["AC1", "AC2", "AC3"])
text = st.text(max_size=12)
iris = st.builds(ir.IRI, st.sampled_from(["http://e/a", "http://www.wikidata.org/entity/Q1"]), ac=acs)
variables = st.builds(ir.Var, names, ac=acs)
holders = st.builds(ir.Placeholder, names, st.sampled_from(["entity", "property", "class"]),
                    st.sampled_from(["", "p", "ps", "pq"]), text, text, st.none() | st.just("http://e/g"), ac=acs)
literals = st.builds(ir.Literal, text, st.none() | st.just(XSD + "integer"), st.none() | st.just("en"), ac=acs)
terms = variables | iris | holders | literals
paths = st.recursive(iris | holders, lambda inner: st.one_of(
    st.builds(ir.PathSeq, st.lists(inner, min_size=2, max_size=3), ac=acs),
    st.builds(ir.PathAlt, st.lists(inner, min_size=2, max_size=3), ac=acs),
    st.builds(ir.PathInv, inner, ac=acs),
    st.builds(ir.PathMod, inner, st.sampled_from(["*", "+", "?"]), ac=acs)), max_leaves=4)
exprs = st.recursive(terms, lambda inner: st.one_of(
    st.builds(ir.BinaryOp, st.sampled_from(["=", "<", "&&", "+"]), inner, inner, ac=acs),
    st.builds(ir.UnaryOp, st.sampled_from(["!", "-"]), inner, ac=acs),
    st.builds(ir.Call, st.sampled_from(["LANG", "YEAR", "REGEX"]), st.lists(inner, max_size=2), ac=acs),
    st.builds(ir.In, inner, st.lists(inner, max_size=2), st.booleans(), ac=acs)), max_leaves=4)
triples = st.builds(ir.Triple, terms, variables | paths, terms, ac=acs)


def groups_of(items: st.SearchStrategy) -> st.SearchStrategy:
    return st.builds(ir.Group, st.lists(items, max_size=3), ac=acs)


items = st.recursive(
    triples | st.builds(ir.Filter, exprs, ac=acs) | st.builds(ir.Bind, exprs, variables, ac=acs)
    | st.builds(ir.Values, st.lists(variables, min_size=1, max_size=1),
                st.lists(st.lists(st.none() | iris | literals, min_size=1, max_size=1), max_size=2), ac=acs),
    lambda inner: st.one_of(
        st.builds(ir.Optional, groups_of(inner), ac=acs),
        st.builds(ir.Minus, groups_of(inner), ac=acs),
        st.builds(ir.Union, st.lists(groups_of(inner), min_size=2, max_size=3), ac=acs),
        st.builds(ir.Filter, st.builds(ir.Exists, groups_of(inner), st.booleans(), ac=acs), ac=acs),
        st.builds(ir.SubQuery, st.builds(ir.Query, st.just("select"), st.lists(variables, max_size=2),
                                      where=groups_of(inner), ac=acs), ac=acs)),
    max_leaves=4)
queries = st.builds(
    ir.Query, st.sampled_from(["select", "ask", "count"]),
    st.lists(variables | st.builds(ir.Projection, st.builds(ir.Aggregate, st.just("COUNT"), st.none() | variables,
                                                         st.booleans()), variables), max_size=3),
    st.booleans(), groups_of(items), st.lists(variables, max_size=1), st.just([]),
    st.lists(st.builds(ir.OrderKey, exprs, st.booleans(), ac=acs), max_size=2),
    st.none() | st.integers(0, 100), st.none() | st.integers(0, 100), ac=acs)


@settings(max_examples=150, deadline=None)
@given(queries)
def test_generated_plans_roundtrip_through_json(q: ir.Query) -> None:
    back = roundtrip(q)
    assert back == q
    assert json.dumps(back.to_dict(), sort_keys=True) == json.dumps(q.to_dict(), sort_keys=True)


@settings(max_examples=150, deadline=None)
@given(queries)
def test_generated_plans_write_as_sparql_or_report_why(q: ir.Query) -> None:
    from rdflib.plugins.sparql.parser import parseQuery

    from assembler.writer import write_sparql

    mapping = {p.name: "http://e/" + p.name for p in ir.placeholders(q)}
    result = write_sparql(q, "wikidata", mapping)
    assert result.ok == (result.sparql is not None)
    if result.ok:
        parseQuery(result.sparql)  # syntax is always valid: nothing from the Plan reaches the text raw
    else:
        assert all(e.stage == "assemble" and e.message for e in result.errors)


# ---- tree operations -----------------------------------------------------------------------------------


def _tree() -> ir.Query:
    x, y = ir.Var("x", ac="AC2"), ir.Var("y", ac="AC2")
    return ir.Query(form="select", projection=[ir.Var("x")], where=ir.Group([
        ir.Triple(x, ir.Placeholder("capital", "property", ac="AC2"), y, ac="AC2"),
        ir.Filter(ir.BinaryOp("<", ir.Var("y"), ir.Literal("10000", XSD + "integer")), ac="AC3")]))


def test_copy_shares_nothing_and_round_trips_equal() -> None:
    q = _tree()
    c = q.copy()
    assert c == q and c is not q and c.where.items[0] is not q.where.items[0]
    c.where.items[0].s.name = "z"
    assert q.where.items[0].s.name == "x"


def test_find_all_by_type_in_field_order() -> None:
    q = _tree()
    assert [v.name for v in q.find_all(ir.Var)] == ["x", "x", "y", "y"]
    assert [n.name for n in q.find_all(ir.Placeholder, ir.Var)][:3] == ["x", "x", "capital"]


def test_transform_is_bottom_up_and_leaves_the_original() -> None:
    q = _tree()
    before = q.to_dict()
    seen: list[str] = []

    def visit(n: ir.Node) -> ir.Node:
        seen.append(n.tag)
        return n

    q.transform(visit)
    assert seen[-1] == "query" and seen.index("var") < seen.index("triple") < seen.index("group")
    renamed = ir.rename(q, lambda n: "l1_" + n, placeholders=True)
    assert {v.name for v in renamed.find_all(ir.Var, ir.Placeholder)} == {"l1_x", "l1_y", "l1_capital"}
    tagged = ir.tag_ac(q, lambda ac: f"L1.{ac}" if ac else "L1")
    assert tagged.where.items[1].ac == "L1.AC3" and tagged.ac == "L1"
    swapped = ir.substitute(q, lambda n: ir.IRI("http://www.wikidata.org/entity/Q1") if isinstance(n, ir.Var) and n.name == "y" else None)
    assert swapped.where.items[0].o == ir.IRI("http://www.wikidata.org/entity/Q1") and not [v for v in swapped.find_all(ir.Var) if v.name == "y"]
    assert q.to_dict() == before  # every rewrite returned a new tree
