"""The issue's SERVICE payloads make no connection through any route: the local store, `kbqa sparql`, the server's
/sparql and /v1/compile, and forwarding to a real SPARQL endpoint (`oxigraph serve-read-only`, which runs SERVICE)
through `--endpoint` and `kbqa serve --endpoint` — with the worker's network namespace and without it
(KBQA_NO_NETNS=1, as on a platform without `unshare`): the check alone must stop them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from server_harness import LiveServer

from kb_dumps.oxigraph_server import OxigraphServer, oxigraph_binary
from kb_dumps.stage_errors import QueryError
from kb_dumps.store import LocalStore
from kbqa.server import ServerSettings, create_app

try:
    oxigraph_binary()
    HAVE_SERVER = True
except Exception:  # noqa: BLE001 - StoreError when the test extra is not installed
    HAVE_SERVER = False


def payloads(url: str) -> list[str]:
    return [
        f"SELECT * WHERE {{ # x\r SERVICE <{url}> {{ ?a ?b ?c }} \n }}",
        f'SELECT * WHERE {{ BIND("\\u0022" AS ?x) SERVICE <{url}> {{ ?a ?b ?c }} BIND("\\u0022" AS ?y) }}',
        f"SELECT * WHERE {{ ?a ?b ?c . ?a ?b trueSERVICE SILENT <{url}> {{ ?a ?b ?c }} }}",
        f"PREFIX ex: <http://example.org/> SELECT * WHERE {{ ?a ?b ?c . ?a ex:p\\# ?c . SERVICE <{url}> {{ }} }}",
        f"SELECT * WHERE {{ SERVICE SILENT <{url}> {{ ?a ?b ?c }} }}",
    ]


@pytest.fixture(params=["netns", "no-netns"])
def netns(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "no-netns":
        monkeypatch.setenv("KBQA_NO_NETNS", "1")
    return request.param


@pytest.fixture(scope="module")
def upstream(small_store: Path) -> Iterator[str]:
    if not HAVE_SERVER:
        pytest.skip("the oxigraph server is not installed (pip install oxigraph, the test extra)")
    with OxigraphServer(small_store, timeout_s=5) as srv:
        yield srv.url


def test_the_listener_counts_what_the_upstream_runs(upstream: str, listener) -> None:
    """The upstream endpoint does call SERVICE: a count of 0 below means kbqa stopped the query. (A listener of
    its own: the session's must stay at 0 for the whole suite.)"""
    own = type(listener)()
    try:
        httpx.get(upstream, params={"query": f"SELECT * WHERE {{ SERVICE SILENT <{own.url}> {{ ?a ?b ?c }} }}"},
                  timeout=10)
        assert own.connections > 0
    finally:
        own.close()


def test_local_store_and_cli(small_store: Path, listener, netns: str, run_cli) -> None:
    before = listener.connections
    with LocalStore(small_store) as store:
        store.query("ASK {}")
        if netns == "no-netns":
            assert store.network.startswith("not isolated")
        for q in payloads(listener.url):
            with pytest.raises(QueryError):
                store.query(q)
    for q in payloads(listener.url):
        code, _, err = run_cli("sparql", q, "--store", str(small_store))
        assert code == 3 and "Traceback" not in err, err
    assert listener.connections == before


def test_server_routes(small_store: Path, listener, netns: str) -> None:
    before = listener.connections
    with LiveServer(create_app(ServerSettings(store=small_store, query_timeout_s=5.0))) as live:
        for q in payloads(listener.url):
            assert httpx.get(live.url + "/sparql", params={"query": q}).status_code == 400
            assert httpx.post(live.url + "/sparql", content=q.encode(),
                              headers={"content-type": "application/sparql-query"}).status_code == 400
            desq = ("ATOMIC CONSTRAINTS\nAC1: all\nAC2: any\nFRAGMENTS\nAC1 => SELECT ?var1\n"
                    f"AC2 => ?var1 ?var2 ?var3 . {q[q.index('{') + 1:q.rindex('}')]}\nGROUNDING\n")
            res = httpx.post(live.url + "/v1/compile", json={"frontend": "desq", "source": desq}, timeout=30)
            assert res.status_code < 500
    assert listener.connections == before


def test_forwarded_to_an_endpoint(small_store: Path, upstream: str, listener, run_cli) -> None:
    before = listener.connections
    assert run_cli("sparql", "ASK { ?s ?p ?o }", "--endpoint", upstream)[0] == 0  # the route is real
    for q in payloads(listener.url):
        code, _, err = run_cli("sparql", q, "--endpoint", upstream)
        assert code == 3 and "Traceback" not in err, err
    with LiveServer(create_app(ServerSettings(sparql_endpoint=upstream, query_timeout_s=5.0))) as live:
        assert httpx.get(live.url + "/sparql", params={"query": "ASK { ?s ?p ?o }"}).json()["boolean"] is True
        for q in payloads(listener.url):
            assert httpx.get(live.url + "/sparql", params={"query": q}).status_code == 400
    assert listener.connections == before
