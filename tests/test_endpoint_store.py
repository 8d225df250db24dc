"""`EndpointStore` against a real Oxigraph server and against real HTTP servers that misbehave: same results
as `LocalStore`, the outer LIMIT, and the documented error for each failure (kb_dumps/README.md)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pyoxigraph as ox
import pytest
from endpoint_servers import ASK_TRUE, SELECT_ONE, FaultyEndpoint, closed_port_url, needs_basic_auth, ok
from hypothesis import given, settings
from hypothesis import strategies as st

from kb_dumps.endpoint import EndpointStore, RateLimiter, detect_dialect
from kb_dumps.ingest import ingest
from kb_dumps.oxigraph_server import OxigraphServer, oxigraph_binary
from kb_dumps.sparql_text import shape, with_row_cap
from kb_dumps.stage_errors import EndpointError, QueryError, StoreError
from kb_dumps.store import LocalStore, open_store

try:
    oxigraph_binary()
    HAVE_SERVER = True
except StoreError:
    HAVE_SERVER = False
needs_server = pytest.mark.skipif(not HAVE_SERVER, reason="the oxigraph server (pip install oxigraph, test extra)")

LABEL = "http://www.w3.org/2000/01/rdf-schema#label"


@pytest.fixture(scope="module")
def grid(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("epgrid") / "grid.nt"
    lines = [f"<http://e.org/s{i}> <http://e.org/p{i % 7}> <http://e.org/o{i % 101}> .\n" for i in range(3000)]
    lines += [f'<http://e.org/o{i}> <{LABEL}> "object {i}"@en .\n' for i in range(101)]
    lines += ['<http://e.org/o1> <http://e.org/n> "42"^^<http://www.w3.org/2001/XMLSchema#integer> .\n',
              '<http://e.org/o1> <http://e.org/n> "plain" .\n', "_:b <http://e.org/p0> <http://e.org/o2> .\n"]
    src.write_text("".join(lines))
    ingest([src], src.parent / "kb", progress=False)
    return src.parent / "kb"


@pytest.fixture(scope="module")
def server(grid: Path):
    if not HAVE_SERVER:
        pytest.skip("the oxigraph server is not installed")
    with OxigraphServer(grid, timeout_s=3) as srv:  # the server stops runaway queries itself after 3 s
        yield srv


# ---- query text ----------------------------------------------------------------------------------------
CAP_CASES = [
    ("SELECT ?s WHERE { ?s ?p ?o }", True),
    ("SELECT ?s WHERE { ?s ?p ?o } LIMIT 5", False),
    ("SELECT ?s WHERE { ?s ?p ?o } ORDER BY ?s LIMIT 50000 OFFSET 3", True),
    ("SELECT ?s WHERE { ?s ?p ?o } OFFSET 3", True),
    ("SELECT ?s WHERE { ?s ?p ?o } VALUES ?s { <http://a> }", True),
    ('PREFIX x: <http://x/> SELECT (COUNT(*) AS ?n) { ?s ?p "LIMIT 5 }" } GROUP BY ?s', True),
    ("SELECT ?s WHERE { { SELECT ?s WHERE { ?s ?p ?o } LIMIT 3 } } # LIMIT 2", True),
    ("SELECT ?x WHERE { ?x ?p ?o FILTER EXISTS { ?x ?q ?r } } ORDER BY (EXISTS { ?x ?q ?r })", True),
    ("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }", True),
    ("ASK { ?s ?p ?o }", False),
]


@pytest.mark.parametrize("query,capped", CAP_CASES)
def test_outer_limit_is_added_or_lowered_and_the_query_still_parses(query: str, capped: bool) -> None:
    sent, applied = with_row_cap(query, 100)
    assert applied == capped
    ox.Store().query(sent)  # parses (and runs on an empty store)
    if capped:
        assert shape(sent).limit == 101
    else:
        assert sent == query


@settings(max_examples=60, deadline=None)
@given(limit=st.one_of(st.none(), st.integers(0, 10**6)), offset=st.one_of(st.none(), st.integers(0, 99)),
       order=st.booleans(), values=st.booleans(), text=st.text(alphabet="{}LIMIT 0123\"'#", max_size=12))
def test_outer_limit_on_generated_queries(limit: int | None, offset: int | None, order: bool, values: bool,
                                          text: str) -> None:
    literal = json.dumps(text)  # any text inside a string literal must not move the LIMIT
    q = f"SELECT ?s WHERE {{ ?s ?p {literal} . {{ SELECT ?s WHERE {{ ?s ?p ?o }} LIMIT 7 }} }}"
    q += " ORDER BY ?s" if order else ""
    q += f" LIMIT {limit}" if limit is not None else ""
    q += f" OFFSET {offset}" if offset is not None else ""
    q += " VALUES ?s { <http://a> }" if values else ""
    sent, applied = with_row_cap(q, 1000)
    ox.Store().query(sent)
    assert shape(sent).limit == (1001 if limit is None or limit > 1001 else limit)
    assert applied == (limit is None or limit > 1001)
    assert literal in sent


def test_dialect_detection() -> None:
    assert detect_dialect("https://query.wikidata.org/sparql").name == "wdqs"
    assert detect_dialect("http://localhost:7001/").name == "generic"
    assert detect_dialect("http://localhost:7001/", "qlever").name == "qlever"
    with pytest.raises(StoreError, match="unknown endpoint dialect"):
        detect_dialect("http://x/", "blazegraph9")
    with pytest.raises(StoreError, match="http"):
        EndpointStore("ftp://example.org/sparql")


# ---- against the oxigraph server ---------------------------------------------------------------------------
SAME = [
    "SELECT ?s ?o WHERE { ?s <http://e.org/p3> ?o } ORDER BY ?s",
    f"SELECT ?o ?l WHERE {{ ?o <{LABEL}> ?l }} ORDER BY ?o LIMIT 5",
    "SELECT ?v WHERE { <http://e.org/o1> <http://e.org/n> ?v } ORDER BY ?v",
    "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }",
    "SELECT ?x WHERE { OPTIONAL { <http://e.org/none> ?p ?x } }",
    "ASK { <http://e.org/s1> ?p ?o }",
    "ASK { <http://e.org/nothing> ?p ?o }",
    "CONSTRUCT { ?s <http://e.org/q> ?o } WHERE { ?s <http://e.org/p1> ?o } ORDER BY ?s LIMIT 3",
]


@needs_server
@pytest.mark.parametrize("query", SAME)
def test_same_results_as_the_local_store(server: OxigraphServer, grid: Path, query: str) -> None:
    with EndpointStore(server.url) as remote, LocalStore(grid) as local:
        a, b = remote.query(query), local.query(query)
    assert (a.kind, a.vars, a.rows, a.boolean, a.truncated) == (b.kind, b.vars, b.rows, b.boolean, b.truncated)


@needs_server
def test_row_cap_truncates_through_the_limit(server: OxigraphServer) -> None:
    with EndpointStore(server.url, row_cap=10) as store:
        res = store.query("SELECT ?s WHERE { ?s ?p ?o }")
        assert len(res.rows) == 10 and res.truncated
        assert len(store.query("SELECT ?s WHERE { ?s ?p ?o } LIMIT 4").rows) == 4


@needs_server
def test_a_bad_query_is_the_servers_error_text(server: OxigraphServer) -> None:
    # parses (the safety check reads it) but names an undeclared prefix: the server's own 400
    with EndpointStore(server.url) as store, pytest.raises(QueryError, match="HTTP 400") as e:
        store.query("SELECT ?x WHERE { ?x nosuchprefix:p ?o }")
    assert e.value.info.stage == "execute" and e.value.exit_code == 3 and not isinstance(e.value, EndpointError)
    # a malformed query goes as the check's own tokens (nothing hidden in them): the server says what is wrong
    with EndpointStore(server.url) as store, pytest.raises(QueryError, match="HTTP 400") as e:
        store.query("SELECT ?x WHERE { ?x ")
    assert e.value.exit_code == 3 and not isinstance(e.value, EndpointError)
    # a text that engines read differently is refused before it is sent
    with EndpointStore(server.url) as store, pytest.raises(QueryError, match="carriage return") as e:
        store.query("SELECT ?x WHERE { # a\r ?x ?p ?o \n }")
    assert e.value.exit_code == 3 and not isinstance(e.value, EndpointError)


@needs_server
def test_a_slow_query_on_a_real_server_respects_the_time_budget(server: OxigraphServer) -> None:
    with EndpointStore(server.url, timeout_s=1.0) as store:
        t0 = time.monotonic()
        with pytest.raises(QueryError, match="time budget of 1 s") as e:
            store.query("SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }")
        assert e.value.timed_out and e.value.exit_code == 4 and time.monotonic() - t0 < 2.5
        assert store.ask("ASK { ?s ?p ?o }")  # the next query answers


@needs_server
def test_open_store_follows_a_remote_store_directory(server: OxigraphServer, tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps({"profile": "generic",
                                                        "endpoint": {"url": server.url, "dialect": "oxigraph"}}))
    with open_store(tmp_path) as store:
        assert isinstance(store, EndpointStore) and store.dialect.name == "oxigraph"
        assert store.ask("ASK { <http://e.org/s1> ?p ?o }")


# ---- misbehaving endpoints: the documented errors ----------------------------------------------------------
def test_timeout() -> None:
    with FaultyEndpoint(lambda n, r: ok(delay=3.0)) as ep:
        store = EndpointStore(ep.url, timeout_s=0.5, retries=2)
        t0 = time.monotonic()
        with pytest.raises(QueryError) as e:
            store.query("ASK { ?s ?p ?o }")
    assert time.monotonic() - t0 < 1.5 and len(ep.requests) == 1  # a timeout is never retried
    assert e.value.timed_out and e.value.info.stage == "execute" and e.value.exit_code == 4
    assert f"the endpoint {ep.url} did not answer within the time budget of 0.5 s" in str(e.value)


def test_http_500_is_retried_with_backoff_then_reported() -> None:
    with FaultyEndpoint(lambda n, r: (500, {"Content-Type": "text/plain"}, b"boom: index corrupt", 0.0)) as ep:
        store = EndpointStore(ep.url, retries=2, backoff_s=0.1)
        with pytest.raises(EndpointError) as e:
            store.query("ASK { ?s ?p ?o }")
    assert len(ep.requests) == 3
    gaps = [b["time"] - a["time"] for a, b in zip(ep.requests, ep.requests[1:], strict=False)]
    assert gaps[0] >= 0.1 and gaps[1] >= 0.2  # exponential backoff
    assert e.value.info.stage == "execute" and e.value.exit_code == 4 and e.value.reason == "http"
    assert "HTTP 500" in str(e.value) and "boom: index corrupt" in str(e.value) and "3 attempts" in str(e.value)


def test_a_transient_503_recovers_and_429_honours_retry_after() -> None:
    answers = [(503, {}, b"busy", 0.0), (429, {"Retry-After": "1"}, b"slow down", 0.0), ok()]
    with FaultyEndpoint(lambda n, r: answers[min(n, 2)]) as ep:
        store = EndpointStore(ep.url, retries=3, backoff_s=0.05)
        assert store.query("ASK { ?s ?p ?o }").boolean is True
    assert len(ep.requests) == 3 and ep.requests[2]["time"] - ep.requests[1]["time"] >= 0.9
    assert store.stats.retries == 2


@pytest.mark.parametrize("body,ctype", [(b'{"head": {"vars": ["x"]}, "results": {"bindings": [', "application/json"),
                                        (b"<html>proxy error</html>", "text/html"),
                                        (b'{"head": {"vars": ["x"]}}', "application/sparql-results+json")])
def test_malformed_json(body: bytes, ctype: str) -> None:
    with FaultyEndpoint(lambda n, r: (200, {"Content-Type": ctype}, body, 0.0)) as ep:
        with pytest.raises(EndpointError) as e:
            EndpointStore(ep.url, retries=2).query("SELECT ?x WHERE { ?x ?p ?o }")
    assert len(ep.requests) == 1 and e.value.reason == "malformed" and e.value.info.stage == "execute"
    assert f"the endpoint {ep.url} answered with" in str(e.value) and ctype in str(e.value)


def test_not_listening_then_the_circuit_breaker_answers_at_once() -> None:
    url = closed_port_url()
    store = EndpointStore(url, retries=1, backoff_s=0.05, cooldown_s=30)
    with pytest.raises(EndpointError) as e:
        store.query("ASK { ?s ?p ?o }")
    assert e.value.reason == "unreachable" and e.value.exit_code == 4 and e.value.info.stage == "execute"
    assert str(e.value) == f"[execute] the endpoint {url} is not reachable (connection refused) (2 attempts)"
    t0 = time.monotonic()
    with pytest.raises(EndpointError, match="not retried for another"):
        store.query("ASK { ?s ?p ?o }")
    assert time.monotonic() - t0 < 0.05 and store.stats.requests == 2


def test_4xx_is_not_retried_and_auth_names_the_settings() -> None:
    with FaultyEndpoint(needs_basic_auth("kb", "s3cret")) as ep:
        with pytest.raises(EndpointError, match="KBQA_ENDPOINT_USER") as e:
            EndpointStore(ep.url, retries=3).query("ASK { ?s ?p ?o }")
        assert len(ep.requests) == 1 and e.value.reason == "auth"
        assert EndpointStore(ep.url, user="kb", password="s3cret").ask("ASK { ?s ?p ?o }")


def test_credentials_headers_and_user_agent_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBQA_ENDPOINT_USER", "kb")
    monkeypatch.setenv("KBQA_ENDPOINT_PASSWORD", "s3cret")
    monkeypatch.setenv("KBQA_ENDPOINT_HEADERS", '{"X-Api-Key": "k-123"}')
    with FaultyEndpoint(needs_basic_auth("kb", "s3cret")) as ep:
        assert EndpointStore(ep.url).ask("ASK { ?s ?p ?o }")
        assert EndpointStore(ep.url, user_agent="my-bot/1.0 (me@example.org)").ask("ASK {}")
    h0, h1 = ep.requests[0]["headers"], ep.requests[1]["headers"]
    assert h0["X-Api-Key"] == "k-123" and h0["User-Agent"].startswith("kbqa/")
    assert h1["User-Agent"] == "my-bot/1.0 (me@example.org)"
    assert "application/sparql-results+json" in h0["Accept"]


def test_get_for_short_queries_post_for_long_ones_and_the_limit_is_sent() -> None:
    with FaultyEndpoint(lambda n, r: ok(SELECT_ONE)) as ep:
        store = EndpointStore(ep.url, row_cap=50)
        store.query("SELECT ?x WHERE { ?x ?p ?o }")
        values = " ".join(f"<http://example.org/entity/{i}>" for i in range(300))
        store.query(f"SELECT ?x WHERE {{ VALUES ?x {{ {values} }} ?x ?p ?o }}")
    assert [r["method"] for r in ep.requests] == ["GET", "POST"]
    assert ep.requests[0]["query"].rstrip().endswith("LIMIT 51") and "LIMIT 51" in ep.requests[1]["query"]


def test_rate_limit_spaces_requests() -> None:
    with FaultyEndpoint(lambda n, r: ok()) as ep:
        store = EndpointStore(ep.url, rate=10.0)
        for _ in range(4):
            store.ask("ASK {}")
    times = [r["time"] for r in ep.requests]
    assert times[-1] - times[0] >= 0.28  # 4 requests at 10/s: 3 intervals of 0.1 s
    limiter = RateLimiter(1.0)
    limiter.wait(time.monotonic() + 5)
    with pytest.raises(QueryError, match="rate limit"):
        limiter.wait(time.monotonic() + 0.2)  # the next slot is 1 s away: past this deadline


def test_label_service_only_on_a_wdqs_endpoint() -> None:
    q = ('SELECT ?x ?xLabel WHERE { ?x ?p ?o SERVICE wikibase:label { bd:serviceParam wikibase:language "en" } }')
    with FaultyEndpoint(lambda n, r: ok(SELECT_ONE)) as ep:
        with pytest.raises(QueryError, match="only a Wikidata Query Service endpoint"):
            EndpointStore(ep.url).query(q)
        with pytest.raises(QueryError, match="SERVICE is refused"):
            EndpointStore(ep.url, dialect="wdqs").query("SELECT * WHERE { SERVICE <http://x/sparql> { ?s ?p ?o } }")
        EndpointStore(ep.url, dialect="wdqs").query(q)
    assert len(ep.requests) == 1 and "SERVICE wikibase:label" in ep.requests[0]["query"]


def test_cli_sparql_with_an_endpoint(run_cli, server: OxigraphServer) -> None:  # noqa: ANN001
    code, out, _ = run_cli("sparql", "SELECT ?o WHERE { <http://e.org/s3> ?p ?o }", "--endpoint", server.url,
                           "--format", "json")
    assert code == 0 and json.loads(out)["rows"] == [[{"type": "uri", "value": "http://e.org/o3"}]]
    code, out, _ = run_cli("sparql", "ASK { ?s ?p ?o }", "--endpoint", server.url)
    assert code == 0 and out.strip() == "true"
    code, _, err = run_cli("sparql", "ASK { ?s ?p ?o }", "--endpoint", closed_port_url())
    assert code == 4 and "[execute]" in err and "not reachable (connection refused)" in err
    with FaultyEndpoint(lambda n, r: (200, {}, ASK_TRUE[:5], 0.0)) as ep:
        code, _, err = run_cli("sparql", "ASK { ?s ?p ?o }", "--endpoint", ep.url)
    assert code == 4 and "answered with not JSON" in err
