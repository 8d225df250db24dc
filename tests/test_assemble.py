"""Assembler: grounding combinations by execution, empty-result diagnosis, answers, injection, generate-only."""

from __future__ import annotations

import json
from pathlib import Path

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assembler.answers import Answers, normalize_term
from assembler.assemble import AssembleOptions, Assembler, parse_problem
from assembler.assembly_records import AssemblyResult
from assembler.combinations import combinations
from assembler.plan import IRI, Filter, Group, Literal, Query, Triple, Var
from assembler.writer import write_sparql
from grounding.candidates import Candidate
from grounding.embedder import get_embedder
from grounding.ground import Grounder
from kb_dumps.label_memory import LabelMemory
from kb_dumps.layout import StoreLayout
from kb_dumps.sparql_text import escape_string
from kb_dumps.store import LocalStore
from kbqa.frontends.desq import parse_desq
from kbqa.pipeline import Engine

FIXTURES = Path(__file__).parent / "fixtures" / "desq_real"
WD = "http://www.wikidata.org/entity/"
WDT = "http://www.wikidata.org/prop/direct/"
XSD = "http://www.w3.org/2001/XMLSchema#"


@pytest.fixture(scope="module")
def assembler(tiny_store: Path):
    store = LocalStore(tiny_store, timeout_s=20)
    memory = LabelMemory(StoreLayout.of(tiny_store).labels, readonly=True)
    grounder = Grounder(tiny_store, embedder=get_embedder(), store=store)
    yield Assembler("wikidata", store=store, grounder=grounder, memory=memory)
    grounder.close()
    store.close()
    memory.close()


def plan_of(text: str) -> Query:
    res = parse_desq(text)
    assert res.ok, res.errors
    return res.plan  # type: ignore[return-value]


# The capital of Atlantis, the shared DeSQ example over assemble_kb.nt (the tiny store).
DESQ_CAPITAL = (Path(__file__).parent / "fixtures" / "desq_real" / "capital_atlantis.desq").read_text(encoding="utf-8")


def test_grounding_does_the_work_and_answers_have_labels(assembler: Assembler) -> None:
    out = assembler.assemble(plan_of(DESQ_CAPITAL))
    assert out.status == "ok", out.errors
    assert "wd:Q1 wdt:P36 ?var1" in out.sparql
    assert out.answers is not None and [[v.label for v in r] for r in out.answers.rows] == [["Poseidonia"]]
    by_name = {g.name: g for g in out.grounding}
    assert by_name["atlantis"].chosen == WD + "Q1" and by_name["capital"].chosen == WD + "P36"
    assert [s.stage for s in out.steps] == ["ground", "assemble", "execute"]
    assert AssemblyResult.from_dict(json.loads(json.dumps(out.to_dict()))).to_dict() == out.to_dict()


def test_execution_picks_the_candidate_with_answers(assembler: Assembler) -> None:
    # Two entities are labelled "Paris"; only the one in Texas has a twin town, so the best-scoring
    # combination is empty and the next one answers.
    text = """ATOMIC CONSTRAINTS
AC1: we need the twin towns of Paris
AC2: Paris is twinned with a town
FRAGMENTS
AC1 => SELECT ?var1
AC2 => [paris] [twinned] ?var1 .
GROUNDING
[paris] entity | Paris
[twinned] property | twinned administrative body | twin towns, sister cities
"""
    out = assembler.assemble(plan_of(text))
    assert out.status == "ok", out.errors
    assert [v.label for r in out.answers.rows for v in r] == ["Puławy"]
    assert {g.name: g.chosen for g in out.grounding}["paris"] == WD + "Q11"
    assert [a.outcome for a in out.attempts][-1] == "answers" and len(out.attempts) >= 2


def test_confirmed_guess_comes_first_and_a_wrong_guess_is_replaced(assembler: Assembler) -> None:
    text = DESQ_CAPITAL.replace("legendary island country", "legendary island country | wd:Q3")
    out = assembler.assemble(plan_of(text))
    atlantis = {g.name: g for g in out.grounding}["atlantis"]
    assert atlantis.correction is not None and atlantis.correction.action != "kept"  # Q3 is Smallia
    assert out.status == "ok" and atlantis.chosen == WD + "Q1"
    kept = assembler.assemble(plan_of(DESQ_CAPITAL.replace("legendary island country", "island | wd:Q1")))
    assert {g.name: g for g in kept.grounding}["atlantis"].correction.action == "kept"


def test_empty_result_names_the_ac_that_empties_the_join(assembler: Assembler) -> None:
    text = """ATOMIC CONSTRAINTS
AC1: we need countries
AC2: the thing is a country
AC3: the country has a capital
AC4: the capital has a population
AC5: the population is above five million
FRAGMENTS
AC1 => SELECT ?var1
AC2 => ?var1 [instance_of] [country] .
AC3 => ?var1 [capital] ?var2 .
AC4 => ?var2 [population] ?var3 .
AC5 => FILTER(?var3 > 5000000)
GROUNDING
[instance_of] property | instance of | class membership | wdt:P31
[country] entity | country | political entity | wd:Q6256
[capital] property | capital | seat of government | wdt:P36
[population] property | population | number of inhabitants | wdt:P1082
"""
    out = assembler.assemble(plan_of(text))
    assert out.status == "empty" and out.failed_stage == "empty"
    assert out.diagnosis is not None and out.diagnosis.ac == "AC5"  # Paris, the only capital with a population, has 2.1M
    assert [c["ac"] for c in out.diagnosis.checked] == ["AC2", "AC3", "AC4", "AC5"]
    assert "condition" in out.diagnosis.message
    assert out.errors and out.errors[0].stage == "empty" and out.errors[0].ac == "AC5"
    assert any(s.stage == "ground" and "widened" in s.detail for s in out.steps)
    assert out.sparql and out.answers is not None and out.answers.empty


def test_diagnosis_distinguishes_a_join_from_an_unmatched_constraint(assembler: Assembler) -> None:
    # Without widening: a wider search finds another country whose capital has a population.
    strict = Assembler("wikidata", store=assembler.store, grounder=assembler.grounder, memory=assembler.memory,
                       options=AssembleOptions(widen=False))
    text = """ATOMIC CONSTRAINTS
AC1: we need the population of the capital of Smallia
AC2: Smallia has a capital
AC3: the capital has a population
FRAGMENTS
AC1 => SELECT ?var2
AC2 => [smallia] [capital] ?var1 .
AC3 => ?var1 [population] ?var2 .
GROUNDING
[smallia] entity | Smallia | a small country | wd:Q3
[capital] property | capital | seat of government | wdt:P36
[population] property | population | number of inhabitants | wdt:P1082
"""
    out = strict.assemble(plan_of(text))
    assert out.status == "empty"
    assert out.diagnosis.ac == "AC3"
    assert out.diagnosis.alone_matches is True  # populations exist; Tinytown just has none
    assert [c["matches"] for c in out.diagnosis.checked] == [True, False]
    assert "AC3" in out.diagnosis.message and "AC2" in out.diagnosis.message


def test_placeholder_with_no_grounding_is_named_with_its_ac(assembler: Assembler) -> None:
    text = DESQ_CAPITAL.replace("[capital] property | capital | seat of government of a country",
                                "[capital] property | zqxjv wvutz | kkkk")
    out = assembler.assemble(plan_of(text))
    assert out.status == "error" and out.failed_stage == "ground"
    assert any("[capital]" in e.message and e.ac == "AC2" for e in out.errors)


def test_no_store_generates_a_parsed_query_from_guesses() -> None:
    text = DESQ_CAPITAL.replace("legendary island country", "island | wd:Q1").replace(
        "seat of government of a country", "seat | wdt:P36")
    out = Assembler("wikidata").assemble(plan_of(text), execute=False)
    assert out.status == "generated" and out.answers is None
    assert parse_problem(out.sparql) is None and "wd:Q1 wdt:P36 ?var1" in out.sparql
    missing = Assembler("wikidata").assemble(plan_of(DESQ_CAPITAL), execute=False)
    assert missing.status == "error" and missing.failed_stage == "ground"


def test_grounded_but_not_executed(assembler: Assembler) -> None:
    out = assembler.assemble(plan_of(DESQ_CAPITAL), execute=False)
    assert out.status == "generated" and "wd:Q1" in out.sparql and out.answers is None
    assert all(a.outcome == "written" for a in out.attempts)


# ---- injection -----------------------------------------------------------------------------------


def test_a_label_made_of_sparql_syntax_is_grounded_not_written(assembler: Assembler) -> None:
    evil = 'Evil" } UNION { ?s ?p ?o } #'
    label = evil.replace("|", "\\|")
    text = f"""ATOMIC CONSTRAINTS
AC1: we need the population
AC2: the country has a population
FRAGMENTS
AC1 => SELECT ?var1
AC2 => [evil] [population] ?var1 .
GROUNDING
[evil] entity | {label} | a country whose name is SPARQL syntax
[population] property | population | number of inhabitants
"""
    out = assembler.assemble(plan_of(text))
    assert out.status == "ok", out.errors
    assert "UNION" not in out.sparql and "wd:Q20" in out.sparql
    assert [[v.normalized for v in r] for r in out.answers.rows] == [[7]]


def _literal_plan(value: str) -> Query:
    where = Group([Triple(Var("c"), IRI(WDT + "P31"), IRI(WD + "Q6256")),
                   Triple(Var("c"), IRI("http://www.w3.org/2000/01/rdf-schema#label"), Var("name")),
                   Filter(_eq(Var("name"), Literal(value, lang="en")))])
    return Query(projection=[Var("c")], where=where)


def _eq(a, b):  # noqa: ANN001, ANN202
    from assembler.plan import BinaryOp

    return BinaryOp("=", a, b)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('"\'}{><\\\n\r\t#?$.;,|^ ()UNIONSELECTx')) | st.characters(),
               max_size=40))
def test_literals_full_of_sparql_syntax_keep_the_structure(value: str) -> None:
    reference = write_sparql(_literal_plan("x"), "wikidata").sparql
    written = write_sparql(_literal_plan(value), "wikidata")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate is not text: refused with an error, never written
        assert not written.ok and "not valid Unicode" in written.errors[0].message
        return
    assert written.ok, written.errors
    # The literal occupies exactly the one token the benign literal occupied.
    assert written.sparql.replace(escape_string(value), '"x"', 1) == reference
    assert parse_problem(written.sparql) is None
    # And it reads back as exactly the value (no escape turned into syntax).
    back = ox.Store().query(f"SELECT ?v WHERE {{ BIND({escape_string(value)} AS ?v) }}")
    assert [s["v"].value for s in back] == [value]


def test_the_evil_literal_matches_only_itself(assembler: Assembler) -> None:
    evil = 'Evil" } UNION { ?s ?p ?o } #'
    sparql = write_sparql(_literal_plan(evil), "wikidata").sparql
    res = assembler.store.query(sparql)
    assert [r[0]["value"] for r in res.rows] == [WD + "Q20"]
    sparql = write_sparql(_literal_plan('" } UNION { ?c ?p ?o } #'), "wikidata").sparql
    assert assembler.store.query(sparql).rows == []


def test_a_malicious_iri_from_the_label_memory_is_refused() -> None:
    bad = Candidate("http://x/> } UNION { ?s ?p ?o", "x", "", "entity", 0.9)
    plan = plan_of(DESQ_CAPITAL)
    res = write_sparql(plan, "wikidata", {"atlantis": bad.id, "capital": WD + "P36"})
    assert not res.ok and res.sparql is None
    assert any("not allowed in an IRI" in e.message for e in res.errors)


# ---- pieces ---------------------------------------------------------------------------------------


def test_combinations_are_best_first_and_bounded() -> None:
    def c(score: float) -> Candidate:
        return Candidate(str(score), "", "", "entity", score)

    lists = [[c(0.9), c(0.5), c(0.1)], [c(0.8), c(0.7)], [c(1.0), c(0.2)]]
    got = list(combinations(lists, 5))
    scores = [s for s, _ in got]
    assert scores == sorted(scores, reverse=True) and len(got) == 5
    assert got[0][1] == (0, 0, 0) and got[1][1] == (0, 1, 0)
    assert list(combinations([[c(1.0)], []], 5)) == []
    assert list(combinations([], 5)) == [(1.0, ())]


def test_answer_values_are_normalised() -> None:
    v = normalize_term({"type": "literal", "value": "1879-03-14T00:00:00Z", "datatype": XSD + "dateTime"})
    assert (v.value_type, v.normalized) == ("date", "1879-03-14")
    assert normalize_term({"type": "literal", "value": "42", "datatype": XSD + "integer"}).normalized == 42
    assert normalize_term({"type": "literal", "value": "1.5E3", "datatype": XSD + "double"}).normalized == 1500.0
    assert normalize_term({"type": "literal", "value": "INF", "datatype": XSD + "double"}).value_type == "literal"
    assert normalize_term({"type": "literal", "value": "true", "datatype": XSD + "boolean"}).normalized is True
    s = normalize_term({"type": "literal", "value": "Berlin", "xml:lang": "de"})
    assert (s.value_type, s.lang, s.display) == ("string", "de", "Berlin")
    assert normalize_term({"type": "literal", "value": "abc", "datatype": XSD + "integer"}).value_type == "literal"
    a = Answers("select", ["n"], [[normalize_term({"type": "literal", "value": "0", "datatype": XSD + "integer"})]])
    assert a.empty and Answers.from_dict(json.loads(json.dumps(a.to_dict()))).to_dict() == a.to_dict()


def test_options_bound_the_search(tiny_store: Path) -> None:
    with LocalStore(tiny_store) as store:
        memory = LabelMemory(StoreLayout.of(tiny_store).labels, readonly=True)
        grounder = Grounder(tiny_store, embedder=get_embedder(), store=store)
        asm = Assembler("wikidata", store=store, grounder=grounder, memory=memory,
                        options=AssembleOptions(k=2, widen_k=2, max_combinations=1))
        text = DESQ_CAPITAL.replace("[atlantis] [capital] ?var1", "[atlantis] [population] ?var1 . ?var1 [capital] ?var2")
        text = text.replace("[capital] property", "[population] property | population | inhabitants\n[capital] property")
        out = asm.assemble(plan_of(text))
        assert out.status == "empty" and len(out.attempts) <= 2
        memory.close()
        grounder.close()


def test_a_huge_label_is_not_echoed_into_the_error(tiny_store: Path) -> None:
    """Issue 15: a 5 MB grounding label came back twice in a 12 MB error; echoes are cut to ~200 characters."""
    big = "zq" * 2_500_000
    desq = ("ATOMIC CONSTRAINTS\nAC1: q\nAC2: a\nFRAGMENTS\nAC1 => SELECT ?var1\nAC2 => [x] [capital] ?var1 .\n"
            f"GROUNDING\n[x] entity | {big} | {big}\n[capital] property | capital | seat of government\n")
    with Engine(tiny_store) as engine:
        result = engine.compile(desq)
    assert result.failed_stage == "ground"
    message = result.errors[0].message
    assert len(message) < 1_000 and "zqzq" in message and "…'" in message
    assert sum(len(e.message) for e in result.errors) < 2_000
