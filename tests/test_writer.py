"""The assembler's writer: Plan + mapping → SPARQL that parses, runs on a real pyoxigraph store,
and whose structure no label or literal can change."""

from __future__ import annotations

import json
from pathlib import Path

import pyoxigraph
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rdflib.plugins.sparql.algebra import translateQuery
from rdflib.plugins.sparql.parser import parseQuery
from rdflib.plugins.sparql.parserutils import CompValue
from rdflib.term import Literal as RdfLiteral

from assembler.plan import (
    IRI,
    BinaryOp,
    Call,
    Filter,
    Group,
    Literal,
    Placeholder,
    Query,
    Triple,
    Var,
)
from assembler.writer import SparqlWriter, write_sparql
from kb_dumps.sparql_text import escape_string, iri_problem
from kbqa.frontends.desq import parse_desq

FIXTURES = Path(__file__).parent / "fixtures" / "desq"
CASES = json.loads((FIXTURES / "cases.json").read_text())
WD = "http://www.wikidata.org/entity/"
XSD = "http://www.w3.org/2001/XMLSchema#"


@pytest.fixture(scope="module")
def store() -> pyoxigraph.Store:
    s = pyoxigraph.Store()
    s.load(path=str(FIXTURES / "mini.ttl"), format=pyoxigraph.RdfFormat.TURTLE)
    return s


def short(term: pyoxigraph.NamedNode | pyoxigraph.Literal | None) -> str | None:
    if term is None:
        return None
    return "wd:" + term.value[len(WD):] if term.value.startswith(WD) else term.value


@pytest.mark.parametrize("name", sorted(CASES))
def test_fixture_queries_run_and_answer(name: str, store: pyoxigraph.Store) -> None:
    case = CASES[name]
    parsed = parse_desq((FIXTURES / name).read_text())
    assert parsed.ok, parsed.errors
    result = write_sparql(parsed.plan, "wikidata", case["mapping"])  # type: ignore[arg-type]
    assert result.ok, result.errors
    sparql = result.sparql or ""
    for needle in case["contains"]:
        assert needle in sparql, sparql
    assert "SERVICE" not in sparql
    answers = store.query(sparql)
    if isinstance(case["answers"], bool):
        assert bool(answers) is case["answers"]
    else:
        rows = [[short(t) for t in row] for row in answers]  # type: ignore[union-attr]
        assert sorted(rows, key=str) == sorted(case["answers"], key=str)
    parseQuery(sparql)  # the second, independent parser agrees the text is SPARQL


def test_variables_renumbered_and_prefixes_declared_only_when_used() -> None:
    q = Query(projection=[Var("zeta")], where=Group([
        Triple(Var("alpha"), IRI("http://www.wikidata.org/prop/direct/P31"), Var("zeta")),
        Triple(Var("alpha"), IRI("http://example.org/other"), Literal("x")),
    ]))
    text = write_sparql(q, "wikidata").raise_for_errors()
    assert text.splitlines()[0] == "PREFIX wdt: <http://www.wikidata.org/prop/direct/>"
    assert "PREFIX wd:" not in text and "PREFIX rdfs:" not in text
    assert "SELECT ?var1 WHERE" in text and "?var2 wdt:P31 ?var1 ." in text
    assert "<http://example.org/other>" in text
    kept = write_sparql(q, "wikidata", rename_vars=False).raise_for_errors()
    assert "SELECT ?zeta" in kept and "?alpha" in kept


def test_unresolved_placeholders_are_all_reported_with_their_ac() -> None:
    parsed = parse_desq((FIXTURES / "qualifier.desq").read_text())
    result = write_sparql(parsed.plan, "wikidata", {"einstein": "wd:Q10"})  # type: ignore[arg-type]
    assert result.sparql is None and not result.ok
    missing = {(e.ac, e.message.split("]")[0] + "]") for e in result.errors}
    assert missing == {("AC2", "placeholder [award_received]"), ("AC3", "placeholder [award_received]"),
                       ("AC3", "placeholder [nobel_physics]"), ("AC4", "placeholder [point_in_time]")}
    assert all(e.stage == "assemble" for e in result.errors)
    with pytest.raises(Exception) as info:
        result.raise_for_errors()
    assert len(info.value.errors) == 4  # type: ignore[attr-defined]


def test_roles_need_a_profile_that_has_them() -> None:
    parsed = parse_desq((FIXTURES / "qualifier.desq").read_text())
    mapping = {k: "http://example.org/" + k for k in ("einstein", "award_received", "nobel_physics", "point_in_time")}
    result = write_sparql(parsed.plan, "generic", mapping)  # type: ignore[arg-type]
    assert not result.ok and "no statement roles" in result.errors[0].message


@pytest.mark.parametrize("iri", ["http://x/a b", "http://x/a>b", 'http://x/"', "http://x/{", "http://x/a|b",
                                 "http://x/^", "http://x/`", "http://x/\\", "http://x/\n", "", "Q42", "<http://x>"])
def test_bad_iris_are_refused(iri: str) -> None:
    assert iri_problem(iri)
    q = Query(projection=[Var("s")], where=Group([Triple(Var("s"), IRI(iri, ac="AC7"), Var("o"))]))
    result = write_sparql(q, "generic")
    assert result.sparql is None and result.errors[0].ac == "AC7"
    bad_mapping = Query(projection=[Var("s")], where=Group([Triple(Var("s"), IRI("http://x/p"), Placeholder("e"))]))
    assert not write_sparql(bad_mapping, "generic", {"e": "<" + iri + ">"}).ok


def test_names_and_operators_from_an_untrusted_plan_are_refused() -> None:
    def one(expr: object) -> Query:
        return Query(projection=[Var("s")], where=Group([Triple(Var("s"), IRI("http://x/p"), Var("o")),
                                                         Filter(expr)]))  # type: ignore[arg-type]
    assert not write_sparql(one(Call("SERVICE <http://evil> {", [])), "generic").ok
    assert not write_sparql(one(BinaryOp(") } SERVICE <x> { (", Var("o"), Var("o"))), "generic").ok
    assert not write_sparql(one(Var("o } SERVICE <x> {")), "generic").ok
    assert not write_sparql(one(Literal("x", lang="en } SERVICE")), "generic").ok
    assert not write_sparql(Query(form="describe"), "generic").ok
    assert not hasattr(SparqlWriter, "service") and all("Service" not in t.__name__ for t in SparqlWriter.TRANSFORMS)


# ---- injection: labels and literals full of SPARQL syntax ------------------------------------

NASTY = [
    '" } . ?x ?y ?z } SERVICE <x> {',
    "'> } SELECT * WHERE { ?a ?b ?c",
    "back\\slash \\\" and \\u0022",
    "line one\nline two\r\n} UNION {",
    '""" triple quotes """ # not a comment',
    "tab\tand \x0c form feed \x08 backspace",
    "^^<http://evil> @en",
    "",
]


def shape(node: object) -> object:
    """The rdflib algebra with every literal replaced by a marker: its structure only."""
    if isinstance(node, CompValue):
        return (node.name, tuple(sorted((k, shape(v)) for k, v in node.items() if k != "_vars")))
    if isinstance(node, dict):
        return tuple(sorted((str(k), shape(v)) for k, v in node.items()))
    if isinstance(node, list | tuple):
        return tuple(shape(v) for v in node)
    if isinstance(node, set | frozenset):
        return tuple(sorted(str(shape(v)) for v in node))
    if isinstance(node, RdfLiteral):
        return "LITERAL"
    return str(node)


def nasty_query(value: str, lang: str | None = None) -> Query:
    return Query(projection=[Var("s")], where=Group([
        Triple(Var("s"), IRI("http://www.w3.org/2000/01/rdf-schema#label"), Literal(value, lang=lang), ac="AC2"),
        Filter(BinaryOp("!=", Call("STR", [Var("s")]), Literal(value)), ac="AC3"),
        Filter(Call("CONTAINS", [Call("LCASE", [Var("s")]), Literal(value, XSD + "string")]), ac="AC3"),
    ]))


def assert_same_structure_and_exact_value(value: str) -> None:
    plain = write_sparql(nasty_query("plain"), "wikidata").raise_for_errors()
    nasty = write_sparql(nasty_query(value), "wikidata").raise_for_errors()
    assert shape(translateQuery(parseQuery(nasty)).algebra) == shape(translateQuery(parseQuery(plain)).algebra)
    # The literal reaches the store exactly as given: it matches the stored label and nothing else.
    store = pyoxigraph.Store()
    label = pyoxigraph.NamedNode("http://www.w3.org/2000/01/rdf-schema#label")
    store.add(pyoxigraph.Quad(pyoxigraph.NamedNode("http://x/hit"), label, pyoxigraph.Literal(value)))
    store.add(pyoxigraph.Quad(pyoxigraph.NamedNode("http://x/miss"), label, pyoxigraph.Literal(value + "!")))
    q = write_sparql(Query(projection=[Var("s")], where=Group([
        Triple(Var("s"), IRI("http://www.w3.org/2000/01/rdf-schema#label"), Literal(value))])), "wikidata")
    rows = [row[0].value for row in store.query(q.raise_for_errors())]  # type: ignore[union-attr, index]
    assert rows == ["http://x/hit"]


def test_shape_sees_structure() -> None:
    base = nasty_query("x")
    wider = nasty_query("x")
    wider.where.items.append(Triple(Var("s"), IRI("http://x/p"), Var("o")))
    one, two = (write_sparql(q, "wikidata").raise_for_errors() for q in (base, wider))
    assert shape(translateQuery(parseQuery(one)).algebra) != shape(translateQuery(parseQuery(two)).algebra)


@pytest.mark.parametrize("value", NASTY)
def test_nasty_literals_cannot_change_the_query(value: str) -> None:
    assert_same_structure_and_exact_value(value)


def test_nasty_labels_in_placeholders_are_never_written() -> None:
    ph = Placeholder("e", "entity", label=NASTY[0], description=NASTY[3], guessed_uri="http://x/g")
    q = Query(projection=[Var("s")], where=Group([Triple(Var("s"), IRI("http://x/p"), ph)]))
    text = write_sparql(q, "generic", {"e": "http://x/e"}).raise_for_errors()
    assert "SERVICE" not in text and "<http://x/e>" in text and "http://x/g" not in text


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40))
def test_any_string_is_escaped_exactly(value: str) -> None:
    assert_same_structure_and_exact_value(value)


def test_escape_string_is_a_single_token() -> None:
    assert escape_string('a"b\\c\nd') == '"a\\"b\\\\c\\nd"'


def test_wider_sparql_subset_round_trips_to_running_sparql(store: pyoxigraph.Store) -> None:
    text = """ATOMIC CONSTRAINTS
AC1: per class, how many instances have a name starting with a capital letter
AC2: an instance of a class
AC3: the instance has an English label
AC4: it is not the thing excluded
AC5: group and keep classes with at least one
FRAGMENTS
AC1 => SELECT ?var2 (COUNT(?var1) AS ?var9) (SAMPLE(?var8) AS ?var10)
AC2 => ?var1 [instance_of]|^[has_instance] ?var2 .
  BIND(-1 AS ?var7)
AC3 => ?var1 rdfs:label ?var3 . FILTER(LANG(?var3) = "en" && REGEX(STR(?var3), "^[A-Z]") && ?var7 < 0)
  BIND(xsd:integer("3") + 1 AS ?var8)
AC4 => FILTER NOT EXISTS { ?var1 [capital] [poseidonia] }
  FILTER(?var2 NOT IN (wd:Q99, <http://example.org/x>) && true)
AC5 => GROUP BY ?var2 HAVING (COUNT(?var1) >= 1) ORDER BY DESC(?var9) ?var2
GROUNDING
[instance_of] property | instance of | class membership
[has_instance] property | has instance | inverse of instance of
[capital] property | capital | seat of government
[poseidonia] entity | Poseidonia | a city
"""
    parsed = parse_desq(text)
    assert parsed.ok, parsed.errors
    mapping = {"instance_of": "wdt:P31", "has_instance": "http://example.org/hasInstance",
               "capital": "wdt:P36", "poseidonia": "wd:Q2"}
    sparql = write_sparql(parsed.plan, "wikidata", mapping).raise_for_errors()  # type: ignore[arg-type]
    for needle in ("NOT EXISTS {", "NOT IN (", "GROUP BY", "HAVING", "BIND(", "xsd:integer(", "REGEX(", "|(^<http://example.org/hasInstance>)"):
        assert needle in sparql, sparql
    rows = [[short(t) for t in row] for row in store.query(sparql)]  # type: ignore[union-attr]
    # Atlantis (capital Poseidonia) is excluded; Smallia is the one country left, Bigland the sovereign state.
    assert sorted(rows, key=str) == [["wd:Q3624078", "1", "4"], ["wd:Q6256", "1", "4"]]
