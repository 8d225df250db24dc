"""`kbqa serve` over a remote SPARQL endpoint: a real `oxigraph serve-read-only` on loopback answers the engine's
queries and /sparql, while labels come from the store directory; updates are still refused before anything is sent."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from server_harness import LiveServer

from kb_dumps.oxigraph_server import OxigraphServer, oxigraph_binary
from kbqa.server import ServerSettings, create_app

try:
    oxigraph_binary()
except Exception:  # noqa: BLE001
    pytest.skip("the oxigraph server (pip install oxigraph, test extra) is not installed", allow_module_level=True)

DESQ = """ATOMIC CONSTRAINTS
AC1: we need the place of birth
AC2: Sasha Vujačić was born there
FRAGMENTS
AC1 => SELECT ?var1
AC2 => [sasha] [place_of_birth] ?var1 .
GROUNDING
[sasha] entity | Sasha Vujačić | Slovenian basketball player | wd:Q318926
[place_of_birth] property | place of birth | most specific known birth location | wdt:P19
"""


@pytest.fixture(scope="module")
def served(wikidata_mini_store: Path):
    with OxigraphServer(wikidata_mini_store) as oxi:
        settings = ServerSettings(store=wikidata_mini_store, sparql_endpoint=oxi.url, endpoint_dialect="oxigraph",
                                  sparql_workers=1)
        with LiveServer(create_app(settings)) as live:
            yield live.url, oxi


def _post_json(url: str, body: dict) -> tuple[int, dict]:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:  # noqa: S310 - loopback
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_compile_runs_on_the_endpoint(served) -> None:  # noqa: ANN001
    url, _ = served
    status, body = _post_json(url + "/v1/compile", {"frontend": "desq", "source": DESQ})
    assert status == 200, body
    values = {row[0]["value"] for row in body["answers"]["rows"]}
    assert values == {"http://www.wikidata.org/entity/Q1010"}, body["sparql"]


def test_sparql_route_forwards_reads_and_refuses_updates(served) -> None:  # noqa: ANN001
    url, oxi = served
    query = ("PREFIX wd: <http://www.wikidata.org/entity/> PREFIX wdt: <http://www.wikidata.org/prop/direct/> "
             "ASK { wd:Q318926 wdt:P19 wd:Q1010 }")
    req = urllib.request.Request(url + "/sparql?" + urllib.parse.urlencode({"query": query}),
                                 headers={"accept": "application/sparql-results+json"})
    with urllib.request.urlopen(req, timeout=60) as r:  # noqa: S310 - loopback
        assert json.loads(r.read())["boolean"] is True
    update = urllib.request.Request(url + "/sparql", b"INSERT DATA { <urn:a> <urn:b> <urn:c> }",
                                    {"content-type": "application/sparql-update"})
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(update, timeout=60)  # noqa: S310 - loopback
    assert err.value.code == 403
    assert json.loads(err.value.read())["error"]["stage"] == "execute"
    assert oxi.proc is not None and oxi.proc.poll() is None  # the endpoint server is still up


def test_a_down_endpoint_is_a_gateway_error_and_the_server_still_starts(wikidata_mini_store: Path) -> None:
    from endpoint_servers import closed_port_url

    settings = ServerSettings(store=wikidata_mini_store, sparql_endpoint=closed_port_url(), sparql_workers=1)
    with LiveServer(create_app(settings)) as live:
        req = urllib.request.Request(live.url + "/sparql?" + urllib.parse.urlencode({"query": "ASK { ?s ?p ?o }"}))
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=60)  # noqa: S310 - loopback
        assert err.value.code == 502
        body = json.loads(err.value.read())["error"]
        assert body["stage"] == "execute" and "not reachable" in body["message"], body
