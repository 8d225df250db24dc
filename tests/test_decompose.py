"""decompose(gold): DeSQ text, Plan and grounding from gold SPARQL, the round trip back to the gold,
the label service, and every construct it refuses (with a reason, never silently)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assembler.plan import Placeholder, Query, Triple, placeholders
from assembler.writer import write_sparql
from eval.query_metrics import queries_match
from kb_dumps.label_memory import LabelMemory
from kb_dumps.layout import StoreLayout
from kbqa.frontends.decompose import DecomposeResult, decompose, strip_auto_label_service
from kbqa.frontends.decompose_coverage import round_trip_problem
from kbqa.frontends.desq import parse_desq

WD = "http://www.wikidata.org/entity/"
WDT = "http://www.wikidata.org/prop/direct/"
BEAST = "http://www.semanticweb.org/annab/ontologies/2022/3/ontology#"
FB = "http://rdf.freebase.com/ns/"


@pytest.fixture(scope="module")
def labels(wikidata_mini_store: Path):
    memory = LabelMemory(StoreLayout.of(wikidata_mini_store).labels, readonly=True)
    yield memory
    memory.close()


def round_trips(result: DecomposeResult) -> bool:
    return round_trip_problem(result) is None


def test_two_hop_with_labels(labels: LabelMemory) -> None:
    r = decompose("SELECT ?x WHERE { ?x wdt:P31 wd:Q5 ; wdt:P19 wd:Q1297 . }", "wikidata", labels)
    assert r.ok, r.error
    assert r.shape == "2-hop"
    text = r.desq_text or ""
    assert "AC1 => SELECT ?var1" in text
    assert "AC3 => ?var1 [place_of_birth] [chicago] ." in text
    assert "AC3: ?var1 has place of birth Chicago" in text
    assert "AC2: ?var1 is an instance of human" in text
    by_name = {g.name: g for g in r.grounding}
    assert by_name["place_of_birth"].kind == "property" and by_name["place_of_birth"].uri == WDT + "P19"
    assert by_name["place_of_birth"].in_label_memory and by_name["place_of_birth"].description
    assert by_name["human"].kind == "class" and by_name["human"].uri == WD + "Q5"
    assert by_name["chicago"].kind == "entity" and by_name["chicago"].label == "Chicago"
    assert "added prefixes wd:, wdt:" in r.notes
    assert round_trips(r)


def test_qualifiers_share_one_placeholder_with_roles(labels: LabelMemory) -> None:
    gold = "SELECT ?value1 ?obj WHERE { wd:Q181803 p:P179 ?s . ?s ps:P179 ?obj . ?s pq:P156 ?value1 . }"
    r = decompose(gold, "wikidata", labels)
    assert r.ok and r.shape == "qualifier"
    assert r.plan is not None
    triples = [t for t in r.plan.where.items if isinstance(t, Triple)]
    roles = [(t.p.name, t.p.role) for t in triples if isinstance(t.p, Placeholder)]
    assert roles == [("part_of_the_series", "p"), ("part_of_the_series", "ps"), ("followed_by", "pq")]
    assert [g.uri for g in r.grounding if g.name == "part_of_the_series"] == [WDT + "P179"]
    assert "statement ?var3 has the qualifier followed by ?var1" in (r.desq_text or "")
    assert round_trips(r)


def test_desq_text_parses_back_to_the_plan(labels: LabelMemory) -> None:
    r = decompose("SELECT (COUNT(?obj) AS ?n) WHERE { wd:Q1615 wdt:P463 ?obj }", "wikidata", labels)
    parsed = parse_desq(r.desq_text or "")
    assert parsed.ok and parsed.plan is not None and r.plan is not None
    assert parsed.plan.to_dict() == r.plan.to_dict()
    assert r.shape == "count" and r.plan.form == "count"
    assert "the number of ?var1" in (r.desq_text or "")


# Each construct decomposes and round-trips; the profile and the expected shape name come with it.
CONSTRUCTS = [
    ("ASK { wd:Q42 wdt:P31 wd:Q5 }", "wikidata", "ask"),
    ("SELECT ?x WHERE { wd:Q42 wdt:P19 ?x }", "wikidata", "1-hop"),
    ("SELECT ?x WHERE { wd:Q42 wdt:P19 ?c . ?c wdt:P17 ?x . ?x wdt:P36 ?y }", "wikidata", "multi-hop"),
    ("SELECT ?x WHERE { ?x wdt:P31/wdt:P279* wd:Q515 }", "wikidata", "path"),
    ("SELECT ?x WHERE { ?x ^wdt:P19|wdt:P20 wd:Q90 }", "wikidata", "path"),
    ("SELECT DISTINCT ?x WHERE { ?x wdt:P31 wd:Q6256 ; wdt:P2046 ?a } ORDER BY DESC(?a) LIMIT 1", "wikidata",
     "order-limit"),
    ("SELECT ?x WHERE { ?x wdt:P31 wd:Q6256 } LIMIT 5 OFFSET 2", "wikidata", "order-limit"),
    ('SELECT ?x WHERE { ?x wdt:P1082 ?p FILTER(?p > 1000 && ?p < 5000) }', "wikidata", "filter"),
    ('SELECT ?x WHERE { ?x rdfs:label ?l FILTER(CONTAINS(LCASE(?l), "paris"@en)) FILTER(LANG(?l) = "en") }',
     "wikidata", "filter"),
    ('SELECT ?x WHERE { ?x wdt:P31 wd:Q5 FILTER(?x != wd:Q42 && ?x != wd:Q1 && ?x != wd:Q2) }', "wikidata",
     "filter"),
    ("SELECT ?x ?d WHERE { ?x wdt:P31 wd:Q5 OPTIONAL { ?x wdt:P570 ?d } }", "wikidata", "optional"),
    ("SELECT ?x WHERE { { ?x wdt:P19 wd:Q90 } UNION { ?x wdt:P20 wd:Q90 } }", "wikidata", "union"),
    ("SELECT ?x WHERE { ?x wdt:P31 wd:Q5 MINUS { ?x wdt:P570 ?d } }", "wikidata", "minus"),
    ("SELECT ?x WHERE { ?x wdt:P31 wd:Q5 FILTER NOT EXISTS { ?x wdt:P570 ?d } }", "wikidata", "minus"),
    ("SELECT ?x WHERE { VALUES ?c { wd:Q90 wd:Q64 } ?x wdt:P19 ?c }", "wikidata", "values"),
    ("SELECT ?c (COUNT(?x) AS ?n) WHERE { ?x wdt:P19 ?c } GROUP BY ?c HAVING (COUNT(?x) > 2) ORDER BY DESC(?n)",
     "wikidata", "order-limit"),
    ("SELECT (MAX(?p) AS ?m) WHERE { ?x wdt:P1082 ?p }", "wikidata", "aggregate"),
    ("SELECT ?x WHERE { ?x wdt:P569 ?d BIND(YEAR(?d) AS ?y) FILTER(?y = 1950) }", "wikidata", "filter"),
    ("SELECT ?x WHERE { ?x wdt:P1082 ?p FILTER(xsd:integer(?p) >= 10) }", "wikidata", "filter"),
    (f"SELECT ?c WHERE {{ ?c <{BEAST}hasAlignment> <{BEAST}chaoticGood> }}", "generic", "1-hop"),
    (f"SELECT (?x0 AS ?value) WHERE {{ SELECT DISTINCT ?x0 WHERE {{ "
     f"?x0 <{FB}type.object.type> <{FB}cvg.game_version> ."
     f" VALUES ?x1 {{ <{FB}m.09c7w0> }} ?x1 <{FB}cvg.computer_game_region.versions_released_in_this_region> ?x0 ."
     " FILTER ( ?x0 != ?x1 ) } }", "freebase", "filter"),
]


@pytest.mark.parametrize(("gold", "profile", "shape"), CONSTRUCTS, ids=[c[2] for c in CONSTRUCTS])
def test_constructs_round_trip(gold: str, profile: str, shape: str) -> None:
    r = decompose(gold, profile)
    assert r.ok, r.error
    assert r.shape == shape
    assert round_trip_problem(r) is None
    assert parse_desq(r.desq_text or "").ok
    # the gold URIs are what the grounding block guesses, and nothing is left as a bare IRI in a pattern
    assert r.plan is not None and all(p.guessed_uri for p in placeholders(r.plan))


def test_freebase_labels_from_schema_names() -> None:
    r = decompose(CONSTRUCTS[-1][0], "freebase")
    by_uri = {g.uri: g for g in r.grounding}
    assert by_uri[FB + "cvg.game_version"].kind == "class"
    assert by_uri[FB + "cvg.game_version"].label == "game version"
    assert by_uri[FB + "cvg.computer_game_region.versions_released_in_this_region"].name == (
        "versions_released_in_this_region")
    # a filter of three conjuncts becomes one AC per conjunct
    assert (r.desq_text or "").count("FILTER(") == 1


def test_variables_are_canonical() -> None:
    r = decompose("SELECT ?answer WHERE { ?film wdt:P57 ?answer . ?film wdt:P31 wd:Q11424 }")
    assert r.plan is not None
    assert "?answer" not in (r.desq_text or "") and "?film" not in (r.desq_text or "")
    assert "AC1 => SELECT ?var1" in (r.desq_text or "")
    assert "AC2 => ?var2 [p57] ?var1 ." in (r.desq_text or "")


def test_missing_entity_gets_local_id_and_note(labels: LabelMemory) -> None:
    r = decompose("SELECT ?x WHERE { wd:Q99999999999 wdt:P19 ?x }", "wikidata", labels)
    assert r.ok
    entry = next(g for g in r.grounding if g.uri == WD + "Q99999999999")
    assert entry.label == "Q99999999999" and entry.name == "q99999999999" and not entry.in_label_memory
    assert any("not in the label memory" in n and "wd:Q99999999999" in n for n in r.notes)


def test_no_label_memory_is_noted() -> None:
    r = decompose("SELECT ?x WHERE { wd:Q42 wdt:P19 ?x }")
    assert r.ok and any("no label memory" in n for n in r.notes)


def test_duplicate_labels_get_distinct_names() -> None:
    r = decompose("SELECT ?s WHERE { ?s <http://a.example/rel> <http://a.example/x> . "
                  "?s <http://a.example/rel> <http://b.example/x> }", "generic")
    assert r.ok
    assert sorted(g.name for g in r.grounding) == ["rel", "x", "x_2"]
    assert round_trips(r)


def test_automatic_label_service_removed_and_noted(labels: LabelMemory) -> None:
    gold = ('SELECT ?x ?xLabel WHERE { ?x wdt:P19 wd:Q1297 . '
            'SERVICE wikibase:label { bd:serviceParam wikibase:language "en". } }')
    r = decompose(gold, "wikidata", labels)
    assert r.ok, r.error
    assert any(n.startswith("SERVICE wikibase:label removed: answers get labels") and "?xLabel" in n
               for n in r.notes)
    assert "SERVICE" not in (r.desq_text or "") and "Label" not in (r.desq_text or "").split("GROUNDING")[0]
    assert r.plan is not None and len(r.plan.projection) == 1
    assert round_trips(r)
    stripped, _ = strip_auto_label_service(gold)
    assert queries_match(stripped, "SELECT ?x WHERE { ?x wdt:P19 wd:Q1297 }")


def test_manual_label_service_is_the_question() -> None:
    gold = ('SELECT DISTINCT ?x WHERE { SERVICE wikibase:label { bd:serviceParam wikibase:language "en". '
            'wd:Q4675 schema:description ?x. } }')
    r = decompose(gold)
    assert r.ok, r.error
    assert any("rewrote SERVICE wikibase:label" in n for n in r.notes)
    assert "[description]" in (r.desq_text or "") and 'LANG(?var1) = "en"' in (r.desq_text or "")
    assert round_trips(r)


@pytest.mark.parametrize(("gold", "reason"), [
    ("SELECT ?x WHERE { GRAPH ?g { ?x ?p ?o } }", "GRAPH"),
    ("SELECT ?x WHERE { SERVICE <http://example.org/sparql> { ?x ?p ?o } }", "SERVICE"),
    ("CONSTRUCT { ?x ?p ?o } WHERE { ?x ?p ?o }", "CONSTRUCT"),
    ("SELECT ?x FROM <http://example.org/g> WHERE { ?x ?p ?o }", "FROM"),
    ("SELECT ?x WHERE { ?x !wdt:P31 ?o }", "negated"),
    ("SELECT ?x WHERE { ?x wdt:P1 ?a FILTER(?a + 1 - 2 > 0) }", "chain of 3 operands"),
    ("SELECT ?x WHERE { ?x wdt:P1 ?a } VALUES ?a { 1 }", "VALUES"),
    ("SELECT ?x WHERE { ?x wdt:P1 ", "does not parse"),
    ("", "empty"),
])
def test_refused_with_a_reason(gold: str, reason: str) -> None:
    r = decompose(gold)
    assert not r.ok and r.plan is None and r.desq_text is None
    assert r.error and reason in r.error


def test_result_json_round_trip(labels: LabelMemory) -> None:
    r = decompose("SELECT ?x WHERE { ?x wdt:P31 wd:Q5 OPTIONAL { ?x wdt:P570 ?d } }", "wikidata", labels)
    data = json.loads(json.dumps(r.to_dict()))
    back = DecomposeResult.from_dict(data)
    assert back.to_dict() == r.to_dict()
    assert isinstance(back.plan, Query) and back.mapping == r.mapping


_IRIS = [f"wd:Q{n}" for n in (5, 42, 90, 1297)]
_PROPS = [f"{role}:P{n}" for role in ("wdt",) for n in (19, 31, 17)]
_TERM = st.one_of(st.sampled_from(["?a", "?b", "?c"]), st.sampled_from(_IRIS))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(_TERM, st.sampled_from(_PROPS), _TERM), min_size=1, max_size=5),
       st.booleans(), st.sampled_from([None, 1, 10]))
def test_random_basic_graph_patterns_round_trip(triples: list, distinct: bool, limit: int | None) -> None:
    body = " ".join(f"{s} {p} {o} ." for s, p, o in triples)
    gold = f"SELECT {'DISTINCT ' if distinct else ''}* WHERE {{ {body} }}" + (f" LIMIT {limit}" if limit else "")
    r = decompose(gold)
    assert r.ok, r.error
    assert round_trip_problem(r) is None
    written = write_sparql(r.plan, "wikidata", r.mapping)  # type: ignore[arg-type]
    assert written.ok and queries_match(written.sparql, gold)
