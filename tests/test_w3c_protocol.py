"""The W3C SPARQL 1.1 Protocol tests against a real `kbqa serve` /sparql and, as the peer, `oxigraph
serve-read-only` on the same store (the pass counts are in kbqa/server/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from server_harness import LiveServer
from w3c_protocol import nquads, run, summary

from kb_dumps.ingest import ingest
from kbqa.server import ServerSettings, create_app


@pytest.fixture(scope="module")
def protocol_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("w3c")
    (d / "protocol.nq").write_text(nquads())
    ingest([d / "protocol.nq"], d / "kb", progress=False)
    return d / "kb"


def test_kbqa_passes_every_applicable_protocol_test(protocol_store: Path) -> None:
    with LiveServer(create_app(ServerSettings(store=protocol_store))) as live:
        outcomes = run(live.url + "/sparql")
    failed = [(o.name, o.why) for o in outcomes if o.applicable and not o.passed]
    print("kbqa serve:", summary(outcomes))
    assert not failed, failed
    assert sum(o.applicable for o in outcomes) == 27


def test_oxigraph_peer_count(protocol_store: Path) -> None:
    """The peer's figure for the README (not a requirement on the peer)."""
    from kb_dumps.oxigraph_server import OxigraphServer

    try:
        server = OxigraphServer(protocol_store).start()
    except Exception as e:  # noqa: BLE001 - the oxigraph binary is in the test extra only
        pytest.skip(f"no oxigraph server: {e}")
    try:
        outcomes = run(server.url)
    finally:
        server.stop()
    failed = [(o.name, o.why) for o in outcomes if o.applicable and not o.passed]
    print("oxigraph serve-read-only:", summary(outcomes), failed)
    assert sum(o.applicable for o in outcomes) == 27


def test_from_and_the_union_default_graph(protocol_store: Path) -> None:
    """No dataset: the default graph is the union of the named graphs; FROM / FROM NAMED: the query's own."""
    from kb_dumps.store import LocalStore
    from kb_dumps.store_types import Dataset

    d1 = "http://kasei.us/2009/09/sparql/data/data1.rdf"
    count = "SELECT (COUNT(*) AS ?n) {from} WHERE {{ ?s ?p ?o }}"
    with LocalStore(protocol_store) as store:
        def n(q: str, **kw: object) -> int:
            return int(store.query(q, **kw).rows[0][0]["value"])

        assert n(count.format(**{"from": ""})) == 3
        assert n(count.format(**{"from": f"FROM <{d1}>"})) == 1
        assert n(count.format(**{"from": f"FROM NAMED <{d1}>"})) == 0
        assert n(count.format(**{"from": f"FROM <{d1}>"}), dataset=Dataset(named_graphs=(d1,))) == 0  # protocol wins
