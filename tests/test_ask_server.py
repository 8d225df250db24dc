"""`kbqa ask --server URL`: the question goes to a running `kbqa serve` (real uvicorn on loopback) and the CLI prints
the server's Result as a local run would; a server that is not there is a clear usage error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from server_harness import LiveServer, free_port
from test_server_browser import OUTPUT, QUESTION

from kbqa.server import ServerSettings, create_app


@pytest.fixture(scope="module")
def server_url(wikidata_mini_store: Path, tmp_path_factory: pytest.TempPathFactory):
    replay = tmp_path_factory.mktemp("ask_server") / "outputs.jsonl"
    replay.write_text(json.dumps({"id": "sq-sasha", "question": QUESTION, "output": OUTPUT}) + "\n", encoding="utf-8")
    with LiveServer(create_app(ServerSettings(store=wikidata_mini_store, translator="replay", replay_path=replay))) as live:
        yield live.url


def test_ask_through_a_running_server(run_cli, server_url: str) -> None:  # noqa: ANN001
    code, out, err = run_cli("ask", QUESTION, "--server", server_url)
    assert code == 0, err
    assert "wd:Q1010 (Maribor)" in out and "wd:Q318926 wdt:P19 ?var1" in out
    assert "status: ok" in out and "translate" in out
    code, out, _ = run_cli("ask", QUESTION, "--server", server_url, "--format", "json")
    body = json.loads(out)
    assert code == 0 and body["status"] == "ok" and body["answers"]["rows"][0][0]["value"].endswith("/Q1010")


def test_a_question_the_server_cannot_translate_keeps_its_stage(run_cli, server_url: str) -> None:  # noqa: ANN001
    code, out, err = run_cli("ask", "a question the replay never saw", "--server", server_url)
    assert code == 4 and "status: error (stage translate)" in out, (out, err)  # as a local run: exit 4
    assert "HTTP 502" in err and "no recorded output" in err and "Traceback" not in err, err


def test_no_server_and_local_flags_are_usage_errors(run_cli, wikidata_mini_store: Path) -> None:  # noqa: ANN001
    url = f"http://127.0.0.1:{free_port()}"
    code, _, err = run_cli("ask", QUESTION, "--server", url)
    assert code == 2 and "no kbqa server answers at" in err and "Traceback" not in err
    code, _, err = run_cli("ask", QUESTION, "--server", url, "--store", str(wikidata_mini_store))
    assert code == 2 and "--store cannot be combined with --server" in err
