"""Resource bounds of the query workers: memory (RLIMIT_AS), result bytes, client disconnects."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from server_harness import LiveServer

from kb_dumps.store import LocalStore, ResourceError
from kbqa.server import ServerSettings, create_app


def concat_bomb(levels: int) -> str:
    """~900 bytes of query, 20·10^levels characters of string: level 7 is 200 MB, level 8 is 2 GB."""
    q = f'SELECT (STRLEN(?a{levels}) AS ?n) WHERE {{ BIND("{"x" * 20}" AS ?a0) '
    for i in range(1, levels + 1):
        q += f"BIND(CONCAT({','.join([f'?a{i - 1}'] * 10)}) AS ?a{i}) "
    return q + "}"


def test_memory_bomb_is_stopped_at_the_bound_and_the_worker_replaced(small_store: Path) -> None:
    with LocalStore(small_store, memory_bytes=1024**3) as store:
        t0 = time.monotonic()
        with pytest.raises(ResourceError) as e:
            store.query(concat_bomb(8))
        assert time.monotonic() - t0 < 10 and e.value.exit_code == 4 and e.value.info.stage == "execute"
        assert "memory" in e.value.info.message and "1,024 MB" in e.value.info.message
        assert store.restarts == 1
        assert store.query("ASK { ?s ?p ?o }").boolean is True  # a fresh worker answers


def test_result_bytes_are_bounded(small_store: Path) -> None:
    q = f'SELECT ?v WHERE {{ ?s ?p ?o BIND(CONCAT(?o, "{"y" * 1000}") AS ?v) }}'
    with LocalStore(small_store, result_bytes=10_000) as store:
        with pytest.raises(ResourceError, match="passed the bound of 10,000 bytes"):
            store.query(q)
        assert len(store.query("SELECT ?o WHERE { ?s ?p ?o }").rows) == 50


def test_cli_memory_bomb_is_one_line_exit_4(small_store: Path, run_cli) -> None:
    code, out, err = run_cli("sparql", concat_bomb(9), "--store", str(small_store))
    assert code == 4 and "[execute]" in err and "memory" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.fixture(scope="module")
def server(small_store: Path):
    settings = ServerSettings(store=small_store, query_timeout_s=8.0, sparql_workers=1, queue_timeout_s=30)
    with LiveServer(create_app(settings)) as live:
        yield live


def test_http_memory_bomb_is_507(server) -> None:
    res = httpx.get(server.url + "/sparql", params={"query": concat_bomb(9)}, timeout=30)
    assert res.status_code == 507 and res.json()["error"]["stage"] == "execute"
    assert httpx.get(server.url + "/sparql", params={"query": "ASK { ?s ?p ?o }"}).json()["boolean"] is True


SLOW = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l . ?m ?n2 ?o FILTER(?c != ?o) }"


def test_a_query_whose_client_went_away_is_stopped(server) -> None:
    """The only worker runs a slow query; its client hangs up after 1 s; a cheap query must not wait for the
    slow one's 8 s budget."""
    with pytest.raises(httpx.ReadTimeout):
        httpx.get(server.url + "/sparql", params={"query": SLOW}, timeout=1.0)
    t0 = time.monotonic()
    res = httpx.get(server.url + "/sparql", params={"query": "ASK { ?s ?p ?o }"}, timeout=30)
    assert res.json()["boolean"] is True and time.monotonic() - t0 < 3.0
