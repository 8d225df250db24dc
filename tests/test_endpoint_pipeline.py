"""The pipeline against a real SPARQL server (`oxigraph serve-read-only`): the same answers as with the local store
for the sample questions, remote store directories, failures reported at stage `execute`, and `kbqa eval`."""

from __future__ import annotations

import json
import shutil
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from endpoint_servers import FaultyEndpoint, closed_port_url, ok
from test_assemble_fixtures import FIXTURES, SPEC, _fixture_labels, slice_store

from grounding.embedder import get_embedder
from grounding.ground import Grounder
from kb_dumps.layout import StoreLayout
from kb_dumps.oxigraph_server import OxigraphServer, oxigraph_binary
from kbqa.pipeline import Engine

try:
    oxigraph_binary()
except Exception:  # noqa: BLE001
    pytest.skip("the oxigraph server (pip install oxigraph, test extra) is not installed", allow_module_level=True)

WDM = [s for s in SPEC if s["store"] == "wikidata-mini"]
EVAL = Path(__file__).parent / "fixtures" / "eval_runner"


def remote_copy(local: Path, dest: Path, url: str) -> Path:
    """A remote store directory with `local`'s label memory and index and no triples: queries go to `url`."""
    layout = StoreLayout.of(local)
    dest.mkdir(parents=True)
    (dest / "labels.sqlite").symlink_to(layout.labels)
    if layout.index_dir.is_dir():
        (dest / "index").symlink_to(layout.index_dir, target_is_directory=True)
    manifest = {**layout.manifest(), "endpoint": {"url": url, "dialect": "oxigraph"}, "sources": [], "triples": 0}
    (dest / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return dest


@pytest.fixture(scope="module")
def server(wikidata_mini_store: Path):
    with OxigraphServer(wikidata_mini_store) as srv:
        yield srv


@pytest.fixture(scope="module")
def engines(wikidata_mini_store: Path, server: OxigraphServer, tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("endpoint_pipeline")
    local = slice_store(wikidata_mini_store, root / "local", *_fixture_labels("wikidata-mini"), 200)
    remote = remote_copy(local, root / "remote", server.url)
    embedder = get_embedder()
    a = Engine(local, grounder=Grounder(local, embedder=embedder), timeout_s=30)
    b = Engine(remote, grounder=Grounder(remote, embedder=embedder), timeout_s=30)
    yield a, b, remote
    a.close()
    b.close()


@pytest.mark.parametrize("spec", WDM, ids=[s["file"].removesuffix(".desq") for s in WDM])
def test_same_answers_as_the_local_store(spec: dict, engines) -> None:  # noqa: ANN001
    local, remote, _ = engines
    text = (FIXTURES / spec["file"]).read_text(encoding="utf-8")
    a, b = local.compile(text), remote.compile(text)
    assert a.status == "ok", [str(e) for e in a.errors]
    assert (b.status, b.sparql) == (a.status, a.sparql), [str(e) for e in b.errors]
    assert b.answers.to_result_dict() == a.answers.to_result_dict()
    assert [r.value for r in b.answers.column()] == [r.value for r in a.answers.column()]
    assert type(remote.assembler.store).__name__ == "EndpointStore"


def test_a_down_or_slow_endpoint_fails_at_stage_execute(engines, tmp_path: Path) -> None:  # noqa: ANN001
    _, _, remote = engines
    text = (FIXTURES / WDM[0]["file"]).read_text(encoding="utf-8")
    down = remote_copy(remote, tmp_path / "down", closed_port_url())
    with Engine(down, grounder=Grounder(down, embedder=get_embedder())) as engine:
        engine.assembler.store.retries = 0
        result = engine.compile(text)
    assert result.status == "error" and result.failed_stage == "execute"
    assert any("not reachable (connection refused)" in e.message for e in result.errors)
    assert [s.stage for s in result.steps][:2] == ["parse", "validate"] and result.grounding  # grounded locally
    with FaultyEndpoint(lambda n, r: ok(delay=2.0)) as slow:
        with Engine(remote, endpoint=slow.url, timeout_s=0.5, grounder=Grounder(remote, embedder=get_embedder())) as e:
            result = e.compile(text)
    assert result.failed_stage == "execute" and result.timed_out and result.exit_code == 4
    assert any("did not answer within the time budget of 0.5 s" in e.message for e in result.errors)


def test_remote_store_built_by_ingest_index_and_compile(run_cli, tmp_path: Path) -> None:  # noqa: ANN001
    kb = FIXTURES / "assemble_kb.nt"
    local, remote = tmp_path / "local", tmp_path / "remote"
    assert run_cli("ingest", kb, "--store", local, "--profile", "wikidata")[0] == 0
    desq = tmp_path / "capital.desq"
    desq.write_text(CAPITAL, encoding="utf-8")
    with OxigraphServer(local) as srv:
        code, out, err = run_cli("ingest", "--endpoint", srv.url, "--store", remote, "--page-size", "5")
        assert code == 0 and "remote" in out, err
        for store in (local, remote):
            assert run_cli("index", "--store", store)[0] == 0
        outs = [run_cli("compile", desq, "--store", s, "--format", "json") for s in (local, remote)]
        assert [o[0] for o in outs] == [0, 0], [o[2] for o in outs]
        a, b = (json.loads(o[1]) for o in outs)
        assert a["answers"] == b["answers"] and b["answers"]["rows"][0][0]["label"] == "Poseidonia"
        # --endpoint with the local store's labels: the same again
        code, out, _ = run_cli("compile", desq, "--store", local, "--endpoint", srv.url, "--format", "json")
        assert code == 0 and json.loads(out)["answers"] == a["answers"]
    code, _, err = run_cli("compile", desq, "--store", remote)  # the server is gone now
    assert code != 0 and "[execute]" in err and "not reachable" in err


# The capital of Atlantis, the shared DeSQ example over assemble_kb.nt (the tiny store).
CAPITAL = (Path(__file__).parent / "fixtures" / "desq_real" / "capital_atlantis.desq").read_text(encoding="utf-8")


def test_eval_on_the_endpoint_equals_the_local_store_and_moves_past_failures(run_cli, wikidata_mini_store: Path,
                                                                           server: OxigraphServer,
                                                                           tmp_path: Path) -> None:  # noqa: ANN001
    base = ["eval", EVAL / "sq_valid_20.txt", "--predictions", EVAL / "sq_predictions.jsonl", "--limit", "12",
            "--format", "json"]
    code, out, err = run_cli(*base, "--store", wikidata_mini_store, "--out", tmp_path / "local")
    assert code == 0, err
    local = json.loads(out)

    def proxy(n: int, request: dict) -> tuple[int, dict, bytes, float]:
        """Forwards to the Oxigraph server, except that question 3's entity gets HTTP 500."""
        if "Q2275923" in request["query"]:
            return 500, {"Content-Type": "text/plain"}, b"storage error", 0.0
        url = server.url + "?" + urllib.parse.urlencode({"query": request["query"]})
        with urllib.request.urlopen(urllib.request.Request(url, headers={"Accept": request["headers"]["Accept"]})) as r:
            return r.status, {"Content-Type": r.headers["Content-Type"]}, r.read(), 0.0

    with FaultyEndpoint(proxy) as ep:
        code, out, err = run_cli(*base, "--endpoint", ep.url, "--out", tmp_path / "remote")
    assert code == 0, err
    remote = json.loads(out)
    assert remote["settings"]["endpoint"] == ep.url and remote["n_records"] == local["n_records"]
    lines = {json.loads(x)["id"]: json.loads(x) for x in (tmp_path / "remote" / "results.jsonl").read_text().splitlines()}
    ref = {json.loads(x)["id"]: json.loads(x) for x in (tmp_path / "local" / "results.jsonl").read_text().splitlines()}
    failed = lines.pop("sq_valid_20-3")
    assert failed["exec_error"]["stage"] == "execute" and "HTTP 500" in failed["exec_error"]["message"]
    assert {k: v["correct"] for k, v in lines.items()} == {k: ref[k]["correct"] for k in lines}
    assert len(lines) == 11  # the questions after the failing one were scored too
    shutil.rmtree(tmp_path / "remote")
