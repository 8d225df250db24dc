"""Query-level metrics on hand-computed cases: renaming, reordering, a wrong URI, an extra triple, parse errors."""

from __future__ import annotations

import json
import random
import re

from hypothesis import given, settings
from hypothesis import strategies as st
from metric_checks import close

from eval.loaders import load_benchmark
from eval.loaders_sparql import mask_opaque
from eval.query_metrics import (
    PlaceholderScore,
    QueryScore,
    normalise_query,
    per_placeholder,
    queries_match,
    score_query,
)

GOLD = "SELECT ?x WHERE { wd:Q1 wdt:P31 ?x . ?x wdt:P279 wd:Q2 }"


def test_renamed_variables_match():
    s = score_query("SELECT ?thing WHERE { wd:Q1 wdt:P31 ?thing . ?thing wdt:P279 wd:Q2 }", GOLD)
    assert s.exact_match and s.error is None
    for prf in (s.triples, s.entities, s.properties):
        close(prf, 1, 1, 1)


def test_reordered_triples_and_full_iris_match():
    pred = ("SELECT ?y WHERE { ?y <http://www.wikidata.org/prop/direct/P279> <http://www.wikidata.org/entity/Q2> . "
            "<http://www.wikidata.org/entity/Q1> <http://www.wikidata.org/prop/direct/P31> ?y }")
    assert score_query(pred, GOLD).exact_match


def test_one_wrong_uri():
    s = score_query("SELECT ?x WHERE { wd:Q1 wdt:P31 ?x . ?x wdt:P279 wd:Q3 }", GOLD)
    assert not s.exact_match
    close(s.triples, 1 / 2, 1 / 2, 1 / 2)  # one of two triples right
    close(s.entities, 1 / 2, 1 / 2, 1 / 2)  # {Q1, Q3} vs {Q1, Q2}
    close(s.properties, 1, 1, 1)


def test_extra_triple():
    s = score_query("SELECT ?x WHERE { wd:Q1 wdt:P31 ?x . ?x wdt:P279 wd:Q2 . ?x wdt:P17 wd:Q5 }", GOLD)
    assert not s.exact_match
    close(s.triples, 2 / 3, 1, 0.8)
    close(s.entities, 2 / 3, 1, 0.8)  # {Q1, Q2, Q5} vs {Q1, Q2}
    close(s.properties, 2 / 3, 1, 0.8)  # {P31, P279, P17} vs {P31, P279}


def test_statement_roles_are_one_property():
    gold = "SELECT ?x WHERE { wd:Q1 wdt:P39 ?x }"
    pred = "SELECT ?x WHERE { wd:Q1 p:P39 ?s . ?s ps:P39 ?x . ?s pq:P580 ?t }"
    s = score_query(pred, gold)
    close(s.properties, 1 / 2, 1, 2 / 3)  # {P39, P580} vs {P39}: p:/ps:/wdt: P39 are one property
    close(s.triples, 0, 0, 0)
    close(s.entities, 1, 1, 1)


def test_structure_not_just_bag_of_triples():
    gold = "SELECT ?a WHERE { ?a wdt:P1 ?b . ?b wdt:P2 ?c }"
    pred = "SELECT ?a WHERE { ?a wdt:P1 ?b . ?a wdt:P2 ?c }"
    s = score_query(pred, gold)
    assert not s.exact_match
    close(s.triples, 1 / 2, 1 / 2, 1 / 2)


def test_modifiers_matter_projection_order_does_not():
    assert not queries_match("SELECT DISTINCT ?x WHERE { wd:Q1 wdt:P31 ?x }", "SELECT ?x WHERE { wd:Q1 wdt:P31 ?x }")
    assert not queries_match("SELECT ?x WHERE { wd:Q1 wdt:P31 ?x } LIMIT 5", "SELECT ?x WHERE { wd:Q1 wdt:P31 ?x }")
    assert queries_match("SELECT ?a ?b WHERE { ?a wdt:P31 ?b }", "SELECT ?d ?c WHERE { ?c wdt:P31 ?d }")
    assert queries_match("SELECT ?x WHERE { { ?x wdt:P31 wd:Q5 } UNION { ?x wdt:P31 wd:Q6 } }",
                         "SELECT ?y WHERE { { ?y wdt:P31 wd:Q6 } UNION { ?y wdt:P31 wd:Q5 } }")
    assert not queries_match("ASK { wd:Q1 wdt:P31 wd:Q5 }", "SELECT * WHERE { wd:Q1 wdt:P31 wd:Q5 }")


def test_filters_and_aggregates_compare_after_renaming():
    a = 'SELECT (COUNT(?x) AS ?n) WHERE { ?x wdt:P31 wd:Q5 . ?x rdfs:label ?l FILTER(LANG(?l) = "en") }'
    b = 'SELECT (COUNT(?p) AS ?c) WHERE { ?p rdfs:label ?name . ?p wdt:P31 wd:Q5 FILTER(LANG(?name) = "en") }'
    assert queries_match(a, b)
    assert not queries_match(a, b.replace('"en"', '"fr"'))


def test_parse_failure_is_structured_not_raised():
    s = score_query("SELECT ?x WHERE { wd:Q1 wdt:P31 ?x", GOLD)
    assert not s.exact_match and s.error["stage"] == "parse" and "does not parse" in s.error["message"]
    close(s.triples, 0, 0, 0)
    g = score_query(GOLD, "SELECT WHERE {")
    assert g.error["message"].startswith("gold query does not parse")
    assert score_query(None, GOLD).error["stage"] == "translate"
    assert score_query("SELECT ?x WHERE { foo:bar wdt:P31 ?x }", GOLD).error["stage"] == "parse"


def test_gold_parses_are_cached():
    normalise_query.cache_clear()
    score_query("SELECT ?z WHERE { wd:Q1 wdt:P31 ?z . ?z wdt:P279 wd:Q2 }", GOLD)
    score_query("SELECT ?w WHERE { wd:Q1 wdt:P31 ?w . ?w wdt:P279 wd:Q2 }", GOLD)
    info = normalise_query.cache_info()
    assert info.hits >= 1 and info.misses == 3


def test_query_score_round_trip():
    s = score_query("SELECT ?x WHERE { wd:Q1 wdt:P31 ?x }", GOLD)
    assert QueryScore.from_dict(json.loads(json.dumps(s.to_dict()))) == s


def test_per_placeholder_accuracy_by_kind():
    pred = {"capital": "wdt:P36", "country": "wd:Q142", "pop": "wdt:P1082", "city": "wd:Q90"}
    gold = {"capital": "http://www.wikidata.org/prop/direct/P36", "country": "wd:Q142", "pop": "p:P1082",
            "city": "wd:Q64"}
    kinds = {"capital": "property", "country": "entity", "pop": "property", "city": "entity"}
    s = per_placeholder(pred, gold, kinds)
    assert s.by_kind["property"] == {"correct": 2, "total": 2, "accuracy": 1.0}
    assert s.by_kind["entity"] == {"correct": 1, "total": 2, "accuracy": 0.5}
    assert s.overall == {"correct": 3, "total": 4, "accuracy": 0.75}
    assert s.wrong == [{"placeholder": "city", "kind": "entity", "predicted": "wd:Q90", "gold": "wd:Q64"}]
    # Kinds guessed from the gold IRI when not given; a missing prediction is wrong.
    s2 = per_placeholder({}, {"p": "wdt:P31", "e": "wd:Q5"})
    assert s2.by_kind["property"]["accuracy"] == 0 and s2.by_kind["entity"]["total"] == 1
    assert PlaceholderScore.from_dict(s.to_dict()) == s


_LCQUAD = [r.sparql for r in load_benchmark("lcquad2-dev", limit=60) if r.usable]


def _rename(sparql: str, rnd: random.Random) -> str:
    masked = mask_opaque(sparql)
    names: dict[str, str] = {}
    out, last = [], 0
    for m in re.finditer(r"[?$]([A-Za-z_]\w*)", masked):
        new = names.setdefault(m.group(1), f"v{rnd.randrange(10**6)}_{len(names)}")
        out.append(sparql[last:m.start()] + "?" + new)
        last = m.end()
    return "".join(out) + sparql[last:]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, len(_LCQUAD) - 1), st.integers(0, 2**32))
def test_real_queries_match_themselves_under_random_renaming(i, seed):
    gold = _LCQUAD[i]
    s = score_query(_rename(gold, random.Random(seed)), gold)
    assert s.exact_match and s.triples.f1 == 1.0 and s.error is None
