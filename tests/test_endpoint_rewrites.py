"""Dialect rewrites of the query text (kb_dumps/endpoint_rewrites.py): what they change, what they leave alone, and
that a rewritten query keeps the standard's answer (checked on pyoxigraph, which follows it). Virtuoso's side is in
tests/test_endpoint_virtuoso.py."""

from __future__ import annotations

import pyoxigraph as ox
import pytest

from kb_dumps.endpoint_rewrites import min_of_strings, rewrite
from kb_dumps.endpoint_settings import DIALECTS

DATA = """
<http://ex.org/a> <http://ex.org/name> "Nadia" ; <http://ex.org/age> 41 ; <http://ex.org/born> "1983-02-01"^^<http://www.w3.org/2001/XMLSchema#date> ; <http://ex.org/home> <http://ex.org/oslo> ; <http://ex.org/team> "red" .
<http://ex.org/b> <http://ex.org/name> "Bruno" ; <http://ex.org/age> 9 ; <http://ex.org/born> "2015-07-30"^^<http://www.w3.org/2001/XMLSchema#date> ; <http://ex.org/home> <http://ex.org/bergen> ; <http://ex.org/team> "red" .
<http://ex.org/c> <http://ex.org/name> "Cleo"@en ; <http://ex.org/age> 120 ; <http://ex.org/born> "1904-11-11"^^<http://www.w3.org/2001/XMLSchema#date> ; <http://ex.org/team> "blue" .
"""


@pytest.fixture(scope="module")
def store() -> ox.Store:
    s = ox.Store()
    s.load(DATA.encode(), ox.RdfFormat.TURTLE)
    return s


def _rows(store: ox.Store, query: str) -> list[tuple[str | None, ...]]:
    res = store.query(query)
    return sorted(tuple(None if row[v] is None else str(row[v]) for v in res.variables) for row in res)


@pytest.mark.parametrize("pred", ["name", "age", "born", "home"])
@pytest.mark.parametrize("form", [
    "SELECT (MIN(?o) AS ?m) WHERE {{ ?s <http://ex.org/{p}> ?o }}",
    "SELECT (MIN(DISTINCT ?o) AS ?m) WHERE {{ ?s <http://ex.org/{p}> ?o }}",
    "SELECT ?t (MIN(?o) AS ?m) WHERE {{ ?s <http://ex.org/{p}> ?o ; <http://ex.org/team> ?t }} GROUP BY ?t",
])
def test_min_keeps_the_standard_answer_and_type(store: ox.Store, pred: str, form: str) -> None:
    # strings (one with a language tag), numbers (41 > 9 as numbers, not as text), dates, IRIs
    query = form.format(p=pred)
    rewritten = min_of_strings(query)
    assert rewritten != query and "STR(?o)" in rewritten
    assert _rows(store, rewritten) == _rows(store, query)


def test_only_the_min_of_one_variable_is_rewritten() -> None:
    untouched = ['SELECT (MAX(?o) AS ?m) WHERE { ?s ?p ?o }',
                 'SELECT (MIN(?o + 1) AS ?m) WHERE { ?s ?p ?o }',  # an expression: left as written
                 'SELECT ?s WHERE { ?s ?p "MIN(?o)" }',  # inside a string
                 'SELECT ?s WHERE { ?s <http://ex.org/MIN(?o)> ?x }']  # inside an IRI
    for q in untouched:
        assert min_of_strings(q) == q
    two = min_of_strings("SELECT (MIN(?a) AS ?x) (min(?b) AS ?y) WHERE { ?s ?p ?a ; ?q ?b }")
    assert two.count("STR(?a)") == 1 and two.count("STR(?b)") == 1


def test_only_virtuoso_names_the_rewrite() -> None:
    q = "SELECT (MIN(?o) AS ?m) WHERE { ?s ?p ?o }"
    assert rewrite(q, DIALECTS["virtuoso"].rewrites) == min_of_strings(q) != q
    for name in ("generic", "oxigraph", "wdqs", "qlever"):
        assert rewrite(q, DIALECTS[name].rewrites) == q
