"""/sparql: the SPARQL 1.1 Protocol on wikidata-mini, driven by SPARQLWrapper (a client nobody here wrote) and httpx."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import httpx
import pytest
import rdflib
from server_harness import LiveServer, SchemaChecker
from SPARQLWrapper import CSV, JSON, POST, POSTDIRECTLY, TSV, TURTLE, XML, SPARQLWrapper

from kbqa.server import ServerSettings, create_app

WD, WDT = "http://www.wikidata.org/entity/", "http://www.wikidata.org/prop/direct/"
PREFIXES = f"PREFIX wd: <{WD}>\nPREFIX wdt: <{WDT}>\nPREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\n"
BIRTHPLACE = PREFIXES + "SELECT ?place ?label WHERE { wd:Q318926 wdt:P19 ?place . ?place rdfs:label ?label " \
                        "FILTER(LANG(?label) = 'en') }"
# every triple paired with every other one: far more work than a one-second budget allows
SLOW = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . FILTER(STR(?c) < STR(?f)) }"


# A generous budget for the protocol tests (a loaded CI machine opening the store for the first query must not read as
# a timeout), and a one-second one for the test that wants the 504.
@pytest.fixture(scope="module")
def endpoint(wikidata_mini_store: Path):
    settings = ServerSettings(store=wikidata_mini_store, query_timeout_s=30.0, row_cap=5, sparql_workers=2)
    with LiveServer(create_app(settings)) as live:
        yield live.url + "/sparql"


@pytest.fixture(scope="module")
def tight_endpoint(wikidata_mini_store: Path):
    settings = ServerSettings(store=wikidata_mini_store, query_timeout_s=1.0, row_cap=5, sparql_workers=2)
    with LiveServer(create_app(settings)) as live:
        url = live.url + "/sparql"
        httpx.get(url, params={"query": "ASK { ?s ?p ?o }"}, timeout=60)  # the store is open before the timed query
        yield url


def wrapper(url: str, query: str, fmt: str) -> SPARQLWrapper:
    sw = SPARQLWrapper(url)
    sw.setQuery(query)
    sw.setReturnFormat(fmt)
    return sw


@pytest.mark.parametrize("method", ["GET", "POST-form", "POST-direct"])
def test_sparqlwrapper_select_json(endpoint: str, method: str) -> None:
    sw = wrapper(endpoint, BIRTHPLACE, JSON)
    if method != "GET":
        sw.setMethod(POST)
    if method == "POST-direct":
        sw.setRequestMethod(POSTDIRECTLY)
    res = sw.query().convert()
    assert res["head"]["vars"] == ["place", "label"]
    [row] = res["results"]["bindings"]
    assert row["place"] == {"type": "uri", "value": WD + "Q1010"}
    assert row["label"]["value"] == "Maribor" and row["label"]["xml:lang"] == "en"


def test_sparqlwrapper_select_xml_csv_tsv(endpoint: str) -> None:
    doc = wrapper(endpoint, BIRTHPLACE, XML).query().convert()
    uris = [n.firstChild.data for n in doc.getElementsByTagName("uri")]
    assert uris == [WD + "Q1010"] and doc.getElementsByTagName("literal")[0].getAttribute("xml:lang") == "en"
    rows = list(csv.reader(io.StringIO(wrapper(endpoint, BIRTHPLACE, CSV).query().convert().decode())))
    assert rows == [["place", "label"], [WD + "Q1010", "Maribor"]]
    tsv = wrapper(endpoint, BIRTHPLACE, TSV).query().convert().decode().splitlines()
    assert tsv == ["?place\t?label", f"<{WD}Q1010>\t\"Maribor\"@en"]


def test_sparqlwrapper_ask(endpoint: str) -> None:
    assert wrapper(endpoint, PREFIXES + "ASK { wd:Q318926 wdt:P19 wd:Q1010 }", JSON).query().convert()["boolean"] is True
    assert wrapper(endpoint, PREFIXES + "ASK { wd:Q318926 wdt:P19 wd:Q42 }", JSON).query().convert()["boolean"] is False
    doc = wrapper(endpoint, "ASK { ?s ?p ?o }", XML).query().convert()
    assert doc.getElementsByTagName("boolean")[0].firstChild.data == "true"


@pytest.mark.parametrize("fmt", [TURTLE, XML])
def test_sparqlwrapper_construct(endpoint: str, fmt: str) -> None:
    query = PREFIXES + "CONSTRUCT { wd:Q318926 wdt:P19 ?p . ?p rdfs:label ?l } WHERE { wd:Q318926 wdt:P19 ?p . " \
                       "?p rdfs:label ?l FILTER(LANG(?l) = 'en') }"
    out = wrapper(endpoint, query, fmt).query().convert()
    graph = out if isinstance(out, rdflib.Graph) else rdflib.Graph().parse(data=out, format="turtle")
    assert (rdflib.URIRef(WD + "Q318926"), rdflib.URIRef(WDT + "P19"), rdflib.URIRef(WD + "Q1010")) in graph
    assert (rdflib.URIRef(WD + "Q1010"), rdflib.RDFS.label, rdflib.Literal("Maribor", lang="en")) in graph


def test_content_negotiation_and_the_format_parameter(endpoint: str) -> None:
    q = {"query": BIRTHPLACE}
    res = httpx.get(endpoint, params=q, headers={"accept": "text/csv;q=0.5, application/sparql-results+xml"})
    assert res.headers["content-type"].startswith("application/sparql-results+xml")
    res = httpx.get(endpoint, params={**q, "format": "tsv"}, headers={"accept": "*/*"})
    assert res.headers["content-type"].startswith("text/tab-separated-values")
    res = httpx.get(endpoint, params={"query": "CONSTRUCT WHERE { wd:Q318926 wdt:P19 ?o }"},
                    headers={"accept": "application/n-triples"})
    assert res.text.strip() == f"<{WD}Q318926> <{WDT}P19> <{WD}Q1010> ."  # the KB's prefixes are predeclared
    res = httpx.get(endpoint, params=q, headers={"accept": "image/png"})
    assert res.status_code == 406 and "acceptable" in res.json()["error"]["message"]


def test_row_cap_is_announced(endpoint: str) -> None:
    res = httpx.get(endpoint, params={"query": "SELECT * WHERE { ?s ?p ?o }"})
    assert res.status_code == 200 and len(res.json()["results"]["bindings"]) == 5
    assert res.headers["x-kbqa-row-cap-reached"] == "5"


@pytest.mark.parametrize("request_kw", [
    {"method": "GET", "params": {"query": "INSERT DATA { <urn:a> <urn:b> <urn:c> }"}},
    {"method": "POST", "data": {"query": "DELETE WHERE { ?s ?p ?o }"}},
    {"method": "POST", "data": {"update": "INSERT DATA { <urn:a> <urn:b> <urn:c> }"}},
    {"method": "POST", "content": "CLEAR ALL", "headers": {"content-type": "application/sparql-update"}},
    {"method": "POST", "content": "DROP ALL", "headers": {"content-type": "application/sparql-query"}},
])
def test_updates_are_refused_with_403(endpoint: str, request_kw: dict) -> None:
    res = httpx.request(url=endpoint, **request_kw)
    assert res.status_code == 403 and res.json()["error"]["stage"] == "execute"
    assert "read-only" in res.json()["error"]["message"]
    assert httpx.get(endpoint, params={"query": "ASK { <urn:a> <urn:b> <urn:c> }"}).json()["boolean"] is False


def test_sparqlwrapper_update_is_refused(endpoint: str) -> None:
    from urllib.error import HTTPError

    sw = SPARQLWrapper(endpoint, updateEndpoint=endpoint)
    sw.setMethod(POST)
    sw.setQuery("INSERT DATA { <urn:a> <urn:b> <urn:c> }")
    with pytest.raises(HTTPError) as e:  # SPARQLWrapper passes a 403 through unchanged
        sw.query()
    assert e.value.code == 403


@pytest.mark.parametrize("query,status,words", [
    ("SELECT * WHERE { SERVICE <http://example.org/sparql> { ?s ?p ?o } }", 400, "SERVICE is refused"),
    ("SELECT * WHERE { SERVICE wikibase:label { bd:serviceParam wikibase:language 'en' } }", 400, "SERVICE"),
    ("SELEC * WHERE { ?s ?p ?o }", 400, "does not parse"),
    ("", 400, "non-empty query"),
    (SLOW, 504, "time budget"),
])
def test_bad_queries_are_json_errors(endpoint: str, tight_endpoint: str, query: str, status: int, words: str) -> None:
    if query == SLOW:
        endpoint = tight_endpoint
    res = httpx.get(endpoint, params={"query": query}, timeout=30)
    assert res.status_code == status and res.json()["error"]["stage"] == "execute"
    spec = httpx.get(endpoint.removesuffix("/sparql") + "/openapi.json").json()
    SchemaChecker(spec).check("/sparql", "GET", status, res.json())  # the documented error shape
    assert words in res.json()["error"]["message"]
    assert httpx.get(endpoint, params={"query": "ASK { ?s ?p ?o }"}).json()["boolean"] is True  # still serving


def test_protocol_usage_errors(endpoint: str) -> None:
    res = httpx.post(endpoint, content="x", headers={"content-type": "text/plain"})
    assert res.status_code == 415 and "application/sparql-query" in res.json()["error"]["message"]
    res = httpx.get(endpoint, params={"query": "ASK { ?s ?p ?o }", "default-graph-uri": "urn:no-such-graph"})
    assert res.status_code == 200 and res.json()["boolean"] is False  # the dataset is the protocol's: empty
    res = httpx.get(endpoint, params={"query": "ASK {}", "named-graph-uri": "not an iri"})
    assert res.status_code == 400 and "absolute IRI" in res.json()["error"]["message"]
    res = httpx.get(endpoint, params={"query": "ASK {}", "format": "foo"})  # was silently ignored
    assert res.status_code == 400 and "unknown format 'foo'" in res.json()["error"]["message"]
    for ctype, body in (("application/sparql-query; charset=UTF-16", "ASK {}".encode("utf-16")),
                        ("application/sparql-query", "ASK {}".encode("utf-16-le")),
                        ("application/sparql-query", b"ASK { FILTER(\"\xe9\") }")):
        res = httpx.post(endpoint, content=body, headers={"content-type": ctype})
        assert 400 <= res.status_code < 500 and "UTF-8" in res.json()["error"]["message"], (ctype, body)
    res = httpx.get(endpoint + "?query=ASK%20%7B%20FILTER(%22%E9%22)%20%7D")  # %E9: Latin-1, not UTF-8
    assert res.status_code == 400 and "not UTF-8" in res.json()["error"]["message"]
    res = httpx.get(endpoint, params=[("query", "ASK {}"), ("query", "ASK {}")])
    assert res.status_code == 400
