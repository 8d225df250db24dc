"""The /v1 API over real HTTP (uvicorn on loopback): each route, bad input, errors as JSON, the published schema."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from server_harness import LiveServer, SchemaChecker

from kbqa.pipeline import Result
from kbqa.server import ServerSettings, create_app

FIXTURES = Path(__file__).parent / "fixtures" / "desq_real"
QUESTION = "what is the capital of atlantis"
# The capital of Atlantis, the shared DeSQ example over assemble_kb.nt (the tiny store).
CAPITAL = (Path(__file__).parent / "fixtures" / "desq_real" / "capital_atlantis.desq").read_text(encoding="utf-8")
# A DeSQ text that fails validation: a placeholder with no grounding line, a grounding line no fragment uses.
MALFORMED = (Path(__file__).parent / "fixtures" / "desq_invalid" / "unknown_placeholder.desq").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def replay_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scripted model: recorded outputs looked up by question text (the `replay` backend)."""
    path = tmp_path_factory.mktemp("replay") / "outputs.jsonl"
    lines = [{"id": "q1", "question": QUESTION, "output": CAPITAL},
             {"id": "q2", "question": "a question the model got wrong", "output": MALFORMED}]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def http(tiny_store: Path, replay_file: Path):
    settings = ServerSettings(store=tiny_store, translator="replay", replay_path=replay_file, max_batch=4)
    with LiveServer(create_app(settings)) as live, httpx.Client(base_url=live.url, timeout=60) as client:
        yield client


@pytest.fixture(scope="module")
def schema(http: httpx.Client) -> SchemaChecker:
    return SchemaChecker(http.get("/openapi.json").json())


def call(http: httpx.Client, schema: SchemaChecker, method: str, path: str, **kw) -> httpx.Response:
    """One request; its JSON body must validate against /openapi.json for the status it came with."""
    res = http.request(method, path, **kw)
    assert res.headers["content-type"].startswith("application/json"), res.text[:200]
    assert "Traceback" not in res.text
    schema.check(path.split("?")[0], method, res.status_code, res.json())
    return res


def test_health_and_published_schema(http: httpx.Client, schema: SchemaChecker) -> None:
    res = call(http, schema, "GET", "/healthz")
    assert res.status_code == 200 and res.json()["status"] == "ok" and res.json()["engines"] == 1
    paths = schema.spec["paths"]
    assert {"/v1/ask", "/v1/generate", "/v1/compile", "/v1/ground", "/v1/batch", "/sparql", "/healthz"} <= set(paths)
    assert "ErrorResponse" in schema.spec["components"]["schemas"]


def test_ask_answers_with_the_one_result_schema(http: httpx.Client, schema: SchemaChecker) -> None:
    res = call(http, schema, "POST", "/v1/ask", json={"question": QUESTION})
    body = res.json()
    assert res.status_code == 200 and body["status"] == "ok" and body["failed_stage"] is None
    assert body["answers"]["rows"][0][0]["label"] == "Poseidonia"
    assert "wd:Q1 wdt:P36 ?var1" in body["sparql"]
    assert [s["stage"] for s in body["steps"]] == ["translate", "parse", "validate", "ground", "assemble", "execute"]
    assert {g["name"] for g in body["grounding"]} == {"atlantis", "capital"}
    assert body["grounding"][0]["candidates"][0]["score"] > 0 and body["plan"]["node"] == "query"
    # the same object `kbqa ask --format json` prints: Result.to_dict(), nothing added on success
    assert set(body) == set(Result().to_dict())
    assert Result.from_dict(body).to_dict()["answers"] == body["answers"]


def test_generate_writes_the_query_without_running_it(http: httpx.Client, schema: SchemaChecker) -> None:
    res = call(http, schema, "POST", "/v1/generate", json={"question": QUESTION, "frontend": "desq"})
    body = res.json()
    assert res.status_code == 200 and body["status"] == "generated" and body["answers"] is None
    assert "wd:Q1 wdt:P36" in body["sparql"] and "execute" not in [s["stage"] for s in body["steps"]]
    off = call(http, schema, "POST", "/v1/ask", json={"question": QUESTION, "execute": False}).json()
    assert off["status"] == "generated" and off["sparql"] == body["sparql"]


def test_compile_matches_the_cli(http: httpx.Client, schema: SchemaChecker, run_cli, tiny_store: Path,  # noqa: ANN001
                                 tmp_path: Path) -> None:
    res = call(http, schema, "POST", "/v1/compile", json={"frontend": "desq", "source": CAPITAL})
    body = res.json()
    src = tmp_path / "capital.desq"
    src.write_text(CAPITAL, encoding="utf-8")
    code, out, _ = run_cli("compile", src, "--store", tiny_store, "--format", "json")
    cli = json.loads(out)
    assert res.status_code == 200 and code == 0 and set(body) == set(cli)
    for key in ("status", "sparql", "answers", "plan", "constraints"):
        assert body[key] == cli[key], key
    gen = call(http, schema, "POST", "/v1/compile", json={"source": CAPITAL, "execute": False}).json()
    assert gen["status"] == "generated" and gen["answers"] is None


@pytest.mark.parametrize("payload,stage,words", [
    ({"frontend": "desq", "source": MALFORMED}, "validate", "[unknown]"),
    ({"frontend": "pyrag", "source": "final_answer = hop(entity('x'), "}, "parse", ""),
    ({"frontend": "klingon", "source": CAPITAL}, "usage", "frontend"),
    ({"frontend": "desq", "source": "   "}, "usage", "source is empty"),
    ({"frontend": "desq"}, "usage", "source"),
])
def test_compile_bad_input_is_a_json_error(http: httpx.Client, schema: SchemaChecker, payload: dict, stage: str,
                                           words: str) -> None:
    res = call(http, schema, "POST", "/v1/compile", json=payload)
    body = res.json()
    messages = " ".join(e["message"] for e in body.get("errors", [body["error"]]))
    assert res.status_code == 422 and body["error"]["stage"] == stage and words in messages


def test_a_malformed_model_output_fails_at_its_stage(http: httpx.Client, schema: SchemaChecker) -> None:
    res = call(http, schema, "POST", "/v1/ask", json={"question": "a question the model got wrong"})
    body = res.json()
    assert res.status_code == 422 and body["failed_stage"] == "validate" and body["error"]["stage"] == "validate"
    unknown = call(http, schema, "POST", "/v1/ask", json={"question": "a question nobody recorded"})
    assert unknown.status_code == 502 and unknown.json()["failed_stage"] == "translate"
    assert "no recorded output" in unknown.json()["error"]["message"]


@pytest.mark.parametrize("payload,words", [
    ({"question": ""}, "the question is empty"),
    ({"question": "   \n"}, "the question is empty"),
    ({"question": "x" * 1001}, "the limit is 1000"),
    ({"question": QUESTION, "frontend": "sql"}, "frontend"),
    ({"question": QUESTION, "language": "de"}, "not supported"),
    ({"question": 42}, "question"),
    ({}, "question"),
])
def test_bad_questions_are_usage_errors(http: httpx.Client, schema: SchemaChecker, payload: dict, words: str) -> None:
    for path in ("/v1/ask", "/v1/generate"):
        res = call(http, schema, "POST", path, json=payload)
        assert res.status_code == 422 and res.json()["error"]["stage"] == "usage"
        assert words in res.json()["error"]["message"]


def test_body_limits_and_malformed_json(http: httpx.Client, schema: SchemaChecker) -> None:
    big = json.dumps({"question": "x" * (1 << 20)})
    res = call(http, schema, "POST", "/v1/ask", content=big, headers={"content-type": "application/json"})
    assert res.status_code == 413 and "limit" in res.json()["error"]["message"]

    def chunks():  # no Content-Length: the limit holds for a streamed body too
        for _ in range(64):
            yield b"x" * 16384

    res = http.post("/v1/compile", content=chunks(), headers={"content-type": "application/json"})
    assert res.status_code == 413 and res.json()["error"]["stage"] == "usage"
    res = call(http, schema, "POST", "/v1/ask", content=b'{"question": ', headers={"content-type": "application/json"})
    assert res.status_code == 422 and res.json()["error"]["stage"] == "usage"


def test_ground_route(http: httpx.Client, schema: SchemaChecker) -> None:
    res = call(http, schema, "GET", "/v1/ground?label=Atlantis&description=legendary%20island&kind=entity&k=3")
    body = res.json()
    assert res.status_code == 200 and body["candidates"][0]["id"] == "http://www.wikidata.org/entity/Q1"
    assert 0 < body["candidates"][0]["score"] <= 1 and len(body["candidates"]) <= 3
    prop = call(http, schema, "GET", "/v1/ground?label=capital&kind=property").json()
    assert prop["candidates"][0]["id"].endswith("P36")
    for bad, stage in (("?label=", "ground"), ("?label=x&kind=planet", "usage"), ("?label=x&k=0", "usage")):
        res = call(http, schema, "GET", "/v1/ground" + bad)
        assert res.status_code == 422 and res.json()["error"]["stage"] == stage


def test_batch_answers_in_order(http: httpx.Client, schema: SchemaChecker) -> None:
    qs = [QUESTION, "a question nobody recorded", QUESTION.upper()]
    res = call(http, schema, "POST", "/v1/batch", json={"questions": qs})
    results = res.json()["results"]
    assert res.status_code == 200 and [r["question"] for r in results] == qs
    assert [r["status"] for r in results] == ["ok", "error", "ok"]
    assert results[1]["failed_stage"] == "translate"
    for bad in ({"questions": []}, {"questions": [QUESTION] * 5}, {"questions": [QUESTION, ""]}):
        res = call(http, schema, "POST", "/v1/batch", json=bad)
        assert res.status_code == 422 and res.json()["error"]["stage"] == "usage"


def test_unknown_routes_and_methods_are_json(http: httpx.Client) -> None:
    res = http.get("/v1/nothing")
    assert res.status_code == 404 and res.json()["error"]["stage"] == "usage"
    res = http.get("/v1/ask")
    assert res.status_code == 405 and "GET" in res.json()["error"]["message"]


def test_the_page_and_its_script_are_served(http: httpx.Client) -> None:
    page = http.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert 'id="question"' in page.text and "/static/app.js" in page.text
    assert 'src="http' not in page.text and "@import" not in page.text  # nothing is loaded from another host
    script = http.get("/static/app.js")
    assert script.status_code == 200 and "/v1/ask" in script.text
