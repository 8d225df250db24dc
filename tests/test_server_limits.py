"""Server limits over real HTTP: model-call and request timeouts, 429 / 503 when busy, JSON for crashes, graceful
shutdown (in a thread and as `kbqa serve` under SIGTERM)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from server_harness import LiveServer, free_port

from kb_dumps.ingest import ingest
from kbqa.pipeline import Engine
from kbqa.server import ServerSettings, create_app
from kbqa.translators.base import TranslationResult, Translator

FIXTURES = Path(__file__).parent / "fixtures" / "desq_real"
# Guessed URIs only: these tests run an engine with no store, which writes the query and uses them unchecked.
GUESSED = (Path(__file__).parent / "fixtures" / "desq" / "atlantis_guessed.desq").read_text(encoding="utf-8")


class SleepyTranslator(Translator):
    """A scripted model that takes `seconds` to answer."""

    name = "sleepy"
    frontends = ("desq",)

    def __init__(self, seconds: float):
        self.seconds = seconds

    def translate(self, question: str, frontend: str = "desq", *, qid: str | None = None) -> TranslationResult:
        time.sleep(self.seconds)
        return TranslationResult(GUESSED, frontend, self.name, seconds=self.seconds)


class ClosingEngine(Engine):
    closed: list[bool] = []

    def close(self) -> None:
        ClosingEngine.closed.append(True)
        super().close()


def serve(seconds: float = 0.0, **settings) -> LiveServer:  # noqa: ANN003
    app = create_app(ServerSettings(**settings),
                     engine_factory=lambda: ClosingEngine(None, translator=SleepyTranslator(seconds)))
    return LiveServer(app)


def ask(url: str, question: str = "what is the capital of atlantis") -> httpx.Response:
    return httpx.post(url + "/v1/ask", json={"question": question}, timeout=30)


def test_without_a_store_the_query_is_generated(tmp_path: Path) -> None:
    with serve() as live:
        res = ask(live.url)
        assert res.status_code == 200 and res.json()["status"] == "generated"
        assert "wd:Q1 wdt:P36" in res.json()["sparql"]
        res = httpx.get(live.url + "/sparql", params={"query": "ASK {}"})
        assert res.status_code == 503 and res.json()["error"]["stage"] == "store"


def test_a_slow_model_call_fails_at_translate_with_504() -> None:
    with serve(seconds=3.0, model_timeout_s=0.3) as live:
        t0 = time.monotonic()
        res = ask(live.url)
        body = res.json()
        assert res.status_code == 504 and time.monotonic() - t0 < 2.5
        assert body["failed_stage"] == "translate" and "timed out after 0.3 s" in body["error"]["message"]


def test_a_request_past_its_budget_is_504() -> None:
    with serve(seconds=1.5, request_timeout_s=0.3) as live:
        res = ask(live.url)
        assert res.status_code == 504 and res.json()["error"]["stage"] == "server"
        assert "request_timeout_s" in res.json()["error"]["message"]


def test_over_the_inflight_limit_is_429() -> None:
    with serve(seconds=1.0, max_inflight=1) as live, ThreadPoolExecutor(2) as pool:
        first = pool.submit(ask, live.url)
        time.sleep(0.3)
        second = ask(live.url)
        health = httpx.get(live.url + "/healthz")  # never limited: it must answer while the server is full
        assert second.status_code == 429 and second.headers["retry-after"] == "1"
        assert second.json()["error"]["stage"] == "server" and "limit is 1" in second.json()["error"]["message"]
        assert health.status_code == 200 and health.json()["inflight"] == 1 and health.json()["engines_busy"] == 1
        assert first.result().status_code == 200


def test_no_free_engine_in_time_is_503() -> None:
    with serve(seconds=1.0, max_inflight=8, queue_timeout_s=0.2) as live, ThreadPoolExecutor(2) as pool:
        first = pool.submit(ask, live.url)
        time.sleep(0.3)
        second = ask(live.url)
        assert second.status_code == 503 and "engines stayed busy" in second.json()["error"]["message"]
        assert first.result().status_code == 200


def test_an_unexpected_crash_is_json_without_a_traceback() -> None:
    class Broken(Engine):
        def compile(self, *args, **kw):  # noqa: ANN002, ANN003, ANN201
            raise RuntimeError("secret internal detail")

    app = create_app(ServerSettings(), engine_factory=lambda: Broken(None, translator=SleepyTranslator(0)))
    with LiveServer(app) as live:
        res = httpx.post(live.url + "/v1/compile", json={"source": GUESSED})
        assert res.status_code == 500 and res.json()["error"]["stage"] == "server"
        assert "secret" not in res.text and "Traceback" not in res.text and "RuntimeError" in res.text


def test_graceful_shutdown_finishes_open_requests() -> None:
    ClosingEngine.closed.clear()
    live = serve(seconds=1.5).__enter__()
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(ask, live.url)
        deadline = time.monotonic() + 5
        while httpx.get(live.url + "/healthz").json()["engines_busy"] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        live.stop()  # what SIGTERM does: stop accepting, let open requests finish, then run the shutdown
        res = pending.result()
    assert res.status_code == 200 and res.json()["status"] == "generated"
    assert not live.thread.is_alive() and ClosingEngine.closed == [True]
    with pytest.raises(httpx.ConnectError):
        httpx.get(live.url + "/healthz")


@pytest.fixture(scope="module")
def small_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("serve-cli") / "kb"
    ingest([FIXTURES / "assemble_kb.nt"], root, profile="wikidata", progress=False)
    return root


def test_cli_serve_answers_and_stops_on_sigterm(small_store: Path, tmp_path: Path) -> None:
    port = free_port()
    kbqa = Path(sys.executable).with_name("kbqa")
    log = tmp_path / "serve.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    with open(log, "w") as out:
        proc = subprocess.Popen([str(kbqa), "serve", "--store", str(small_store), "--port", str(port)],
                                stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(url + "/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        res = httpx.post(url + "/v1/compile", json={"source": GUESSED}, timeout=30)
        assert res.status_code == 200 and res.json()["answers"]["rows"][0][0]["label"] == "Poseidonia"
        # the default translator (explore) needs no case bank: it answers from the store itself
        res = httpx.post(url + "/v1/ask", json={"question": "what is the capital of atlantis"}, timeout=30)
        assert res.status_code == 200 and res.json()["answers"]["rows"][0][0]["label"] == "Poseidonia"
        # a question the store cannot answer fails at translate with the reason; the server keeps working
        res = httpx.post(url + "/v1/ask", json={"question": "what colour are the moons of saturn"}, timeout=30)
        assert res.status_code == 502 and res.json()["failed_stage"] == "translate"
        assert "no query graph" in res.json()["error"]["message"]
        proc.send_signal(signal.SIGTERM)
        # uvicorn shuts down gracefully, then re-raises the signal it caught (the Unix convention)
        assert proc.wait(timeout=30) in (0, -signal.SIGTERM)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = log.read_text()
    assert "Application shutdown complete" in text and "Traceback" not in text


def test_cli_serve_help_has_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    from kbqa.cli import main

    with pytest.raises(SystemExit) as e:
        main(["serve", "--help"])
    out = capsys.readouterr().out
    assert e.value.code == 0 and "kbqa serve --store" in out and "--max-inflight" in out
