"""Queries too complex to check or run are the client's error (stage execute / parse, 4xx, exit 3), found quickly,
never a stalled server, a dead worker reported as a store failure, nor an internal error; long flat BGPs pass."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from server_harness import LiveServer

from kb_dumps import sparql_check
from kb_dumps.sparql_check import RefusedQuery, check_query
from kb_dumps.stage_errors import QueryError, StoreError
from kb_dumps.store import LocalStore
from kbqa.server import ServerSettings, create_app

BIG_FILTER = "SELECT * WHERE { ?s ?p ?o FILTER(" + "+".join(["1"] * 30_000) + " > 0) }"  # the 60 KB


def flat_bgp(n: int) -> str:
    return "SELECT * WHERE { " + " ".join(f"?s <http://example.org/p> ?o{i} ." for i in range(n)) + " }"


def test_the_check_is_fast_and_refuses_a_huge_expression() -> None:
    t0 = time.perf_counter()
    with pytest.raises(RefusedQuery, match="too complex") as e:
        check_query(BIG_FILTER + " ")
    assert time.perf_counter() - t0 < 5 and e.value.info.stage == "execute" and e.value.exit_code == 3
    with pytest.raises(RefusedQuery, match="nested more than"):
        check_query("SELECT * WHERE " + "{" * 5000 + "}" * 5000)


@pytest.mark.parametrize("n", [80, 85, 500, 5000])
def test_a_flat_bgp_is_a_valid_query(n: int) -> None:
    assert check_query(flat_bgp(n)).form == "select"


def test_85_triple_patterns_run(small_store: Path) -> None:
    with LocalStore(small_store) as store:
        assert store.query(flat_bgp(85)).kind == "select"


def test_a_worker_crash_is_a_query_error(small_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the check's bounds (lifted here), the engine's stack overflows: a 4xx query error, not a store failure."""
    monkeypatch.setattr(sparql_check, "MAX_OPERATORS", 10**9)
    monkeypatch.setattr(sparql_check, "MAX_DEPTH", 10**9)
    with LocalStore(small_store, timeout_s=60) as store:
        with pytest.raises(QueryError, match="too complex to run") as e:
            store.query("SELECT * WHERE " + "{" * 20_000 + "}" * 20_000)
        assert not isinstance(e.value, StoreError) and e.value.exit_code == 3
        assert store.query("ASK { ?s ?p ?o }").boolean is True  # a fresh worker answers the next query


def test_the_server_answers_while_a_huge_query_is_refused(small_store: Path) -> None:
    with LiveServer(create_app(ServerSettings(store=small_store, query_timeout_s=5.0))) as live:
        t0 = time.perf_counter()
        res = httpx.post(live.url + "/sparql", content=BIG_FILTER.encode(),
                         headers={"content-type": "application/sparql-query"}, timeout=30)
        error = res.json()["error"]
        assert res.status_code == 400 and error["stage"] == "execute" and "too complex" in error["message"]
        assert httpx.get(live.url + "/sparql", params={"query": "ASK { ?s ?p ?o }"}).json()["boolean"] is True
        assert time.perf_counter() - t0 < 10


def desq_chain(n: int) -> str:
    chain = " + ".join(["?var2"] * (n + 1))
    return ("ATOMIC CONSTRAINTS\nAC1: a\nAC2: b\nAC3: c\nFRAGMENTS\nAC1 => SELECT ?var1\n"
            f"AC2 => ?var1 <http://example.org/p> ?var2 .\nAC3 => FILTER({chain} > 0)\nGROUNDING\n")


def test_a_long_desq_operator_chain_is_a_parse_error(small_store: Path, tmp_path: Path, run_cli) -> None:
    src = tmp_path / "chain.desq"
    src.write_text(desq_chain(700))
    code, _, err = run_cli("compile", str(src), "--store", str(small_store), "--no-execute")
    assert code == 3 and "operators" in err and "Traceback" not in err and "bug" not in err, err
    src.write_text(desq_chain(118))  # at the bound: the Plan's tree operations and the writer still work
    code, out, err = run_cli("compile", str(src), "--store", str(small_store), "--no-execute", "--format", "json")
    assert code == 0, err
    with LiveServer(create_app(ServerSettings(store=small_store))) as live:
        res = httpx.post(live.url + "/v1/compile", json={"frontend": "desq", "source": desq_chain(700)}, timeout=30)
        assert res.status_code < 500 and "operators" in res.text
