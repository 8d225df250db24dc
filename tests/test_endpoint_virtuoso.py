"""The pipeline on Debian's Virtuoso 7 (`make virtuoso`): a private server on loopback loaded with one small Spider
KG, `kbqa ingest --endpoint` + `kbqa index` + `kbqa ask --translator explore` over it, and what the `virtuoso`
dialect must notice — the server's row cap, a query stopped by the engine's time limit (partial results or an
HTTP 500), and a refused query that is not retried."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kb_dumps.endpoint import EndpointStore
from kb_dumps.stage_errors import QueryError
from kb_dumps.virtuoso_server import VirtuosoServer, virtuoso_binaries

try:
    virtuoso_binaries()
except Exception:  # noqa: BLE001
    pytest.skip("Virtuoso (virtuoso-t, isql-vt) is not installed: `make virtuoso` installs it (apt, as root)",
                allow_module_level=True)

CONCERT = Path(__file__).resolve().parents[1] / "eval" / "benchmarks" / "spider4sparql" / "kgs" / "concert_singer.ttl.gz"
ROW_CAP = 100  # the server's ResultSetMaxRows here: the KG has 212 triples
ENGINE_LIMIT_S = 2  # the server's MaxQueryExecutionTime here
# Four unrelated triple patterns with a filter no index serves: far more than ENGINE_LIMIT_S of work.
HEAVY = ("SELECT ?a WHERE { ?a ?p ?o . ?b ?p2 ?o2 . ?c ?p3 ?o3 . ?d ?p4 ?o4 "
         "FILTER(STR(?o) = CONCAT(STR(?o2), STR(?o3), STR(?o4))) }")


@pytest.fixture(scope="module")
def server():
    with VirtuosoServer([CONCERT], max_rows=ROW_CAP, timeout_s=ENGINE_LIMIT_S) as srv:
        yield srv


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "kbqa.cli", *args], capture_output=True, text=True, env=env,
                          timeout=300)


def test_loaded_into_the_default_graph_only(server: VirtuosoServer) -> None:
    assert server.triples == 212
    with EndpointStore(server.url) as store:
        res = store.query("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
        assert store.dialect.name == "virtuoso"  # from the Server header of the first answer
    # Virtuoso's own virtrdf: metadata (thousands of triples in other graphs) stays out of the default graph
    assert res.rows[0][0]["value"] == "212"
    assert res.rows[0][0]["datatype"] == "http://www.w3.org/2001/XMLSchema#integer"  # a `typed-literal` read


def test_ingest_index_and_ask_with_explore(server: VirtuosoServer, tmp_path: Path) -> None:
    store = tmp_path / "remote"
    out = _cli("ingest", "--endpoint", server.url, "--store", str(store), "--profile", "generic")
    assert out.returncode == 0, out.stderr
    out = _cli("index", "--store", str(store))
    assert out.returncode == 0, out.stderr
    # the values aggregate (133 rows) passes the server row cap (100): asked per predicate, all values kept
    assert "schema memory: 4 classes, 25 predicates, 133 values" in out.stdout
    out = _cli("ask", "How many singers are from France?", "--store", str(store), "--translator", "explore")
    assert out.returncode == 0, out.stderr
    assert "SELECT (COUNT(" in out.stdout and "singer#country" in out.stdout
    lines = out.stdout.splitlines()
    assert lines[lines.index("(1 rows)") - 1].strip() == "4"


def test_the_server_row_cap_marks_a_result_truncated(server: VirtuosoServer) -> None:
    with EndpointStore(server.url) as store:
        res = store.query("SELECT ?s ?p ?o WHERE { ?s ?p ?o }", row_cap=10_000)
        assert store.server_row_cap == ROW_CAP
        assert store.page_limit(50_000) == ROW_CAP
    assert len(res.rows) == ROW_CAP and res.truncated  # fewer rows than asked for, yet not the whole answer
    with EndpointStore(server.url) as store:
        small = store.query("SELECT ?s WHERE { ?s a <http://valuenet/ontop/singer> }")
    assert len(small.rows) == 6 and not small.truncated


@pytest.mark.parametrize("dialect", [None, "generic"])
def test_a_query_stopped_by_the_engine_is_a_timeout_never_an_answer(server: VirtuosoServer,
                                                                    dialect: str | None) -> None:
    # None: detected as virtuoso, the `timeout` parameter is sent and Virtuoso answers 200 with the rows found
    # so far (X-SQL-State: S1TAT); generic: no parameter, its own limit answers HTTP 500 SR171.
    with EndpointStore(server.url, dialect=dialect, timeout_s=60) as store:
        store.query("ASK {}")
        with pytest.raises(QueryError) as info:
            store.query(HEAVY)
        assert store.stats.retries == 0
    assert info.value.timed_out
    assert "S1TAT" in str(info.value) if dialect is None else "SR171" in str(info.value)


def test_a_sorted_query_fits_the_sorted_row_limit(server: VirtuosoServer) -> None:
    # the outer LIMIT row_cap+1 (10,001 by default) would pass MaxSortedTopRows: lowered to fit, answered whole
    with EndpointStore(server.url) as store:
        store.query("ASK {}")  # the dialect comes from the first answer (a store directory records it at ingest)
        res = store.query("SELECT ?s ?age WHERE { ?s <http://valuenet/ontop/singer#age> ?age } ORDER BY DESC(?age)")
    assert [r[1]["value"] for r in res.rows][:1] == ["52"] and len(res.rows) == 6 and not res.truncated


def test_the_least_of_strings_is_the_standards(server: VirtuosoServer) -> None:
    # Virtuoso's own MIN over plain strings without GROUP BY is one unbound row; the dialect's rewrite answers as
    # Oxigraph does, and a MIN over numbers keeps its number and type
    names = "SELECT (MIN(?n) AS ?m) WHERE { ?s <http://valuenet/ontop/singer#name> ?n }"
    ages = "SELECT (MIN(?a) AS ?m) WHERE { ?s <http://valuenet/ontop/singer#age> ?a }"
    with EndpointStore(server.url, dialect="generic") as plain:
        assert plain.query(names).rows == [[None]]  # the engine's own answer, unless Virtuoso is fixed
    with EndpointStore(server.url, dialect="virtuoso") as store:
        assert store.query(names).rows[0][0]["value"] == "Joe Sharp"
        assert store.query(ages).rows[0][0] == {"type": "literal", "value": "25",
                                                "datatype": "http://www.w3.org/2001/XMLSchema#integer"}


def test_a_refused_query_is_not_retried(server: VirtuosoServer) -> None:
    with EndpointStore(server.url) as store:
        store.query("ASK {}")
        # more sorted rows than MaxSortedTopRows (10,000, offset included): Virtuoso refuses it with HTTP 500 "SR353"
        with pytest.raises(QueryError) as info:
            store.query("SELECT ?s WHERE { ?s ?p ?o } ORDER BY ?s OFFSET 9995 LIMIT 10")
        assert store.stats.retries == 0
    assert "SR353" in str(info.value) and not info.value.timed_out


def test_label_memory_under_a_row_cap_equals_the_dump_ingestion(tmp_path: Path) -> None:
    """`kbqa ingest --endpoint` on a server that cuts every result at 100 rows: the ids phase pages its larger
    predicates by key, the popularity batches shrink under the cap; every row equals the dump ingestion's."""
    import json
    import sqlite3

    from kb_dumps.endpoint_ingest import ingest_endpoint
    from kb_dumps.ingest import ingest
    from kb_dumps.layout import StoreLayout

    car = CONCERT.with_name("car_1.ttl.gz")  # 926 ids: more than one cut page, popularity batches over the cap
    ingest([car], tmp_path / "dump", profile="generic", progress=False)
    with VirtuosoServer([car], max_rows=ROW_CAP, folder=tmp_path / "virtuoso") as srv:
        report = ingest_endpoint(srv.url, tmp_path / "remote", profile="generic", page_size=1000, progress=False)

    def rows(store: Path) -> dict[str, tuple]:
        con = sqlite3.connect(f"file:{StoreLayout.of(store).labels}?mode=ro", uri=True)
        out = {i: (k, lab, sorted(json.loads(a)), d, p) for i, k, lab, a, d, p in
               con.execute("SELECT id, kind, label, aliases, description, popularity FROM labels")}
        con.close()
        return out

    assert report.phases["ids"]["pages"] > 10 and report.phases["popularity"]["pages"] > 926 // ROW_CAP
    assert rows(tmp_path / "remote") == rows(tmp_path / "dump") and len(rows(tmp_path / "dump")) == 926
