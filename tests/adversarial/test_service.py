"""SERVICE must never reach the network: through the store, `kbqa sparql` and /sparql (GET and POST), for the
issue's bypass and for generated queries that mix SERVICE with every escape, comment, string and IRI form."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from server_harness import LiveServer

from kb_dumps.sparql_check import RefusedQuery, check_query
from kb_dumps.stage_errors import QueryError
from kb_dumps.store import LocalStore
from kbqa.server import ServerSettings, create_app


def bypass(url: str) -> str:
    """The issue's query: `\\#` in a prefixed name once made the text mask start a comment there."""
    return (f"PREFIX ex: <http://example.org/> SELECT ?a WHERE {{ BIND(ex:p\\# AS ?x) "
            f"SERVICE <{url}> {{ ?a ?b ?c }} }}")


@pytest.fixture(scope="module")
def endpoint(small_store: Path):
    with LiveServer(create_app(ServerSettings(store=small_store, query_timeout_s=5.0))) as live:
        yield live.url + "/sparql"


def test_the_issue_bypass_is_refused_everywhere(small_store: Path, listener, endpoint: str, run_cli) -> None:
    q = bypass(listener.url)
    with LocalStore(small_store) as store:
        with pytest.raises(QueryError):
            store.query(q)
    code, out, err = run_cli("sparql", q, "--store", str(small_store))
    assert code == 3 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert httpx.get(endpoint, params={"query": q}).status_code == 400
    assert httpx.post(endpoint, content=q, headers={"content-type": "application/sparql-query"}).status_code == 400
    assert httpx.post(endpoint, data={"query": q}).status_code == 400
    assert listener.connections == 0


def test_the_worker_cannot_reach_the_network_even_past_the_check(small_store: Path, listener) -> None:
    """Defence in depth: a SERVICE run the way the worker runs a query, with the check skipped (as if it had missed
    it), fails without a connection, because the worker lives in its own network namespace. (The check itself runs
    in the worker, so the query is run here in a process set up as the worker sets itself up.)"""
    import subprocess
    import sys

    from kb_dumps.layout import StoreLayout

    with LocalStore(small_store) as store:
        store.query("ASK {}")  # starts the worker
        if store.network != "netns":
            pytest.skip(f"this system does not allow network isolation: {store.network}")
    script = (
        "import sys\n"
        "from kb_dumps.sandbox import isolate_network\n"
        "assert isolate_network() == 'netns'\n"
        "import pyoxigraph as ox\n"
        "from kb_dumps.store import run_query\n"
        "store = ox.Store.read_only(sys.argv[1])\n"
        "try:\n"
        "    run_query(store, sys.argv[2], 10)\n"
        "    print('ran')\n"
        "except Exception as e:\n"  # what the worker answers as a query error
        "    print('query-error', type(e).__name__, e)\n")
    query = f"SELECT * WHERE {{ SERVICE <{listener.url}> {{ ?a ?b ?c }} }}"
    out = subprocess.run([sys.executable, "-c", script, str(StoreLayout.of(small_store).oxigraph), query],
                         capture_output=True, text=True, timeout=60, cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.startswith("query-error"), (out.stdout, out.stderr[-2000:])
    assert listener.connections == 0


def test_wikidata_label_service_only_for_wdqs() -> None:
    q = ('PREFIX wikibase: <http://wikiba.se/ontology#> SELECT ?x WHERE { ?x ?p ?o . '
         'SERVICE wikibase:label { bd:serviceParam wikibase:language "en" } }')
    assert check_query(q, allow_label_service=True).form == "select"  # rdflib's own action failed on this `#`
    with pytest.raises(RefusedQuery, match="wikibase:label is refused"):
        check_query(q)
    with pytest.raises(RefusedQuery, match="SERVICE is refused"):
        check_query(q.replace("wikibase:label", "<http://127.0.0.1:9/x>"), allow_label_service=True)


# ---- generated queries ---------------------------------------------------------------------
ESCAPED_NAMES = [f"ex:p\\{c}" for c in "_~.-!$&'()*+,;=/?#@%"] + ["ex:p%23", "ex:", ":a", "ex:a.b"]
NOISE = [
    "# SERVICE <http://x/> { }\n", "#\n", '"SERVICE"', "'#'", '"""a # b\n"""', "'''x'\n'''", '"\\""', "'\\''",
    "<http://e.org/#frag>", "<http://e.org/SERVICE>", "<#>", "?x", "$y", "\\u0053", "(", ")", "{", "}", ".", ";",
    "BIND(1 AS ?z)", "FILTER(true)", "OPTIONAL { ?s ?p ?o }", "ex:SERVICE", "_:b", '"x"@en', '"1"^^<http://x>',
    "\t", "\n", " ", "/* */", "\\", "SILENT",
]


def queries(url: str) -> st.SearchStrategy[str]:
    service = st.sampled_from([f"SERVICE <{url}>", f"SERVICE SILENT <{url}>", f"service <{url}>",
                               "SERVICE ?svc", f"SeRvIcE <{url}>", "\\u0053ERVICE <" + url + ">",
                               "SERVICE lh:x", "SERVICE <" + url.replace("127.0.0.1", "localhost") + ">"])
    token = st.sampled_from(ESCAPED_NAMES + NOISE)
    return st.builds(
        lambda head, before, svc, inner, after: (
            f"PREFIX ex: <http://example.org/> PREFIX lh: <{url.rsplit('/', 1)[0]}/>\n"
            f"SELECT * WHERE {{ {' '.join(head)} {' '.join(before)} {svc} {{ ?a ?b ?c {' '.join(inner)} }} "
            f"{' '.join(after)} }}"),
        st.lists(token, max_size=3), st.lists(token, max_size=4), service, st.lists(token, max_size=2),
        st.lists(token, max_size=3))


@pytest.fixture(scope="module")
def store(small_store: Path):
    with LocalStore(small_store) as s:
        yield s


@given(data=st.data())
def test_generated_service_queries_never_connect(store: LocalStore, listener, endpoint: str, data) -> None:
    q = data.draw(queries(listener.url))
    try:
        store.query(q)
    except QueryError:
        pass
    method = data.draw(st.sampled_from(["GET", "POST", "FORM"]))
    if method == "GET":
        res = httpx.get(endpoint, params={"query": q})
    elif method == "POST":
        res = httpx.post(endpoint, content=q.encode(), headers={"content-type": "application/sparql-query"})
    else:
        res = httpx.post(endpoint, data={"query": q})
    assert res.status_code != 500
    assert listener.connections == 0, q
