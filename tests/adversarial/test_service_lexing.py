"""The SERVICE check and Oxigraph read the same query: a differential test against Oxigraph itself.

Oxigraph shows that it read a SERVICE by running it: on an in-memory store holding a few triples that every
generated pattern matches, `SERVICE <urn:…>` fails with an OSError of its HTTP client ("invalid authority"; no network involved).
The generated queries mix what lexers disagree on: comments ended by `\\r`, `\\n` or `\\r\\n`, `\\u` / `\\U`
escapes inside and outside strings and IRIs, prefixed names with escapes, keywords glued to values, nested
groups. For each: Oxigraph ran a SERVICE => the check refused it; the check passed it => the check's re-written
text (what an endpoint is sent) gives Oxigraph the same answer as the original.
"""

from __future__ import annotations

import pyoxigraph as ox
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kb_dumps.sparql_check import RefusedQuery, check_query
from kb_dumps.sparql_lex import tokenize

PROBE = "urn:kbqa:probe"
HEAD = "PREFIX ex: <http://e/> PREFIX : <urn:kbqa:>\nSELECT * WHERE { "  # every SERVICE target is a urn: no network


@pytest.fixture(scope="module")
def oxi() -> ox.Store:
    store = ox.Store()
    s, p = ox.NamedNode("http://e/s"), ox.NamedNode("http://e/p")
    for o in (ox.Literal("1"), ox.Literal("true", datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#boolean")),
              ox.Literal("1", datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer")),
              ox.NamedNode("http://e/o")):
        store.add(ox.Quad(s, p, o))
    return store


def run(store: ox.Store, query: str) -> tuple[str, object]:
    """("service", …) when Oxigraph ran a SERVICE, ("syntax", …) when it could not parse, else the rows."""
    try:
        rows = sorted(str(s) for s in store.query(query))
    except SyntaxError:
        return "syntax", None
    except OSError as e:  # nothing else in these queries reads the store's disk or the network
        return "service", str(e)
    return "rows", rows


SERVICES = [f"SERVICE <{PROBE}> {{ ?a ?b ?c }}", f"SERVICE<{PROBE}>{{?a ?b ?c}}", f"service <{PROBE}> {{ }}",
            "SERVICE <urn:kbqa:\\u0070robe> { ?a ?b ?c }", f"\\u0053ERVICE <{PROBE}> {{ ?a ?b ?c }}",
            f"SERVICE\\u0020<{PROBE}> {{ }}", f"?a ?b true SERVICE <{PROBE}> {{ }}", f"?a ?b trueSERVICE <{PROBE}> {{ }}",
            f"?a ?b 1SERVICE <{PROBE}> {{ }}", f"?a ?b ex:o.SERVICE <{PROBE}> {{ }}", f"?a ?b ex:o\\.SERVICE <{PROBE}> {{ }}",
            f"?a ?b ?c .SERVICE <{PROBE}> {{ }}", f"OPTIONAL {{ SERVICE <{PROBE}> {{ ?a ?b ?c }} }}",
            "SERVICE:x { }", f"{{ SERVICE <{PROBE}> {{ }} }}"]
SAFE = ["?a ?b ?c .", "?a <http://e/p> ?c .", "?a <http://e/\\u0070> ?c .", "?a <http://e/\\U00000070> ?c .",
        "?a ex:p ?c .", "OPTIONAL { ?a :p ?c }", "?a ex:\\u0070 ?c .", "OPTIONAL { ?a ex:p\\#x ?q }", "OPTIONAL { ?a ex:a.b ?q }",
        'BIND("\\u0022" AS ?v1)', "BIND('\\u0027' AS ?v2)", 'BIND("""a\\u0022"" " """ AS ?v3)',
        "BIND('''x'' ''' AS ?v4)", 'BIND("#" AS ?v5)', "BIND(<http://e/#x> AS ?v6)", "FILTER(true)",
        "FILTER(1<2)", "FILTER('1' = '1')", 'FILTER("a" != "SERVICE")', "OPTIONAL { ?a ?b ?c }", "{ }", "{ ?a ?b ?c }",
        "OPTIONAL { ?a <http://e/SERVICE> ?q }", "BIND(1 AS ?v7) FILTER(?v7<3)", "VALUES ?v8 { 1 }"]
COMMENT_TEXT = ["", " x", " SERVICE <urn:kbqa:probe> { }", ' "', " '", " <", " {", " \\u0022", " #"]
ENDS = ["\n", "\r", "\r\n", "\r \n", "\r\r\n"]


def element() -> st.SearchStrategy[str]:
    base = st.sampled_from(SAFE + SERVICES)
    comment = st.builds(lambda text, end: "#" + text + end, st.sampled_from(COMMENT_TEXT), st.sampled_from(ENDS))
    leaf = st.one_of(base, base, comment)
    return st.recursive(leaf, lambda inner: st.lists(inner, max_size=3).map(lambda xs: "{ " + " ".join(xs) + " }"),
                        max_leaves=6)


def queries() -> st.SearchStrategy[str]:
    sep = st.sampled_from([" ", "\n", "\r", "\t", ""])
    return st.builds(lambda parts, seps: HEAD + "".join(p + s for p, s in zip(parts, seps, strict=False)) + " }",
                     st.lists(element(), min_size=1, max_size=6), st.lists(sep, min_size=6, max_size=6))


@given(q=queries())
def test_the_check_and_oxigraph_agree_on_service(oxi: ox.Store, q: str) -> None:
    outcome, detail = run(oxi, q)
    try:
        facts = check_query(q)
    except RefusedQuery as e:
        if e.refusal == "service" and outcome != "syntax":
            assert outcome == "service", (q, e.info.message)  # a SERVICE the check saw, Oxigraph saw too
        return
    assert outcome != "service", q  # the check passed a query in which Oxigraph ran a SERVICE
    assert run(oxi, facts.sent) == (outcome, detail), (q, facts.sent)


@pytest.mark.parametrize("query", [
    "SELECT * WHERE { # x\r SERVICE <http://127.0.0.1:18999/x> { ?a ?b ?c } \n }",
    'SELECT * WHERE { BIND("\\u0022" AS ?x) SERVICE <http://127.0.0.1:18999/x> { ?a ?b ?c } BIND("\\u0022" AS ?y) }',
    "SELECT * WHERE { ?a ?b trueSERVICE <http://127.0.0.1:18999/x> { } }",
    "PREFIX : <http://e/> SELECT * WHERE { SERVICE:x { } }",
    "SELECT * WHERE { BIND(1 AS ?a) FILTER(?a<'>' ) SERVICE <http://127.0.0.1:18999/x> { } BIND('x' AS ?q) }",
    "SELECT * WHERE { FILTER(?a<<x#>) } # \n SERVICE <http://127.0.0.1:18999/x> { }",
])
def test_the_issue_payloads_are_refused(query: str) -> None:
    with pytest.raises(RefusedQuery):
        check_query(query)


def test_ordinary_queries_pass_and_are_sent_unchanged() -> None:
    q = ('PREFIX owl: <http://www.w3.org/2002/07/owl#> SELECT ?s (COUNT(?o) AS ?n) WHERE { ?s a owl:Class ; '
         '<http://www.w3.org/2000/01/rdf-schema#label> "x"@en . FILTER(?o = <http://x#y> && ?n < 3) '
         'VALUES (?s ?t) { (<http://x#a> <http://x#b>) } } GROUP BY ?s ORDER BY DESC(?n) LIMIT 5')
    facts = check_query(q)
    assert facts.form == "select" and facts.sent == q and not facts.has_dataset


def test_escapes_are_written_out_for_an_endpoint() -> None:
    facts = check_query('PREFIX ex: <http://e/> SELECT * FROM <http://g/\\u0061> WHERE { ?s ex:p\\#q "a\\u0022b" } '
                        "# a comment\n")
    assert facts.sent == 'PREFIX ex: <http://e/> SELECT * FROM <http://g/a> WHERE { ?s <http://e/p#q> "a\\"b" }'
    assert facts.has_dataset
    assert [t.kind for t in tokenize(facts.sent)].count("string") == 1
