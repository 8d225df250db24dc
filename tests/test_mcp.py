"""`kbqa mcp` as a real subprocess, over stdio and over streamable HTTP on loopback, driven by the MCP SDK's own
client: every tool on the tiny indexed store against the CLI's output for the same input, refusals, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_harness import HttpServer, McpClient, stdio_session
from test_server_api import CAPITAL, MALFORMED, QUESTION  # the same scripted model as the HTTP API's tests

TOOLS = {"ask", "generate_sparql", "run_sparql", "ground", "explain", "describe_kb"}
ROW_CAP, TIMEOUT_S = 20, 3.0  # below the tiny store's 50 triples; a short budget for the runaway query


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory, tiny_store: Path) -> dict:
    root = tmp_path_factory.mktemp("mcp")
    replay = root / "outputs.jsonl"
    lines = [{"id": "q1", "question": QUESTION, "output": CAPITAL},
             {"id": "q2", "question": "a question the model got wrong", "output": MALFORMED}]
    replay.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    home = root / "home"  # KBQA_HOME with one `kbqa eval` report, for the kbqa://eval/last resource
    (home / "eval" / "sq-cases").mkdir(parents=True)
    (home / "eval" / "sq-cases" / "report.md").write_text("# eval report\n\nhits@1 0.5\n", encoding="utf-8")
    env = {"HF_HUB_OFFLINE": "1", "KBQA_HOME": str(home), "KBQA_ROW_CAP": str(ROW_CAP),
           "KBQA_QUERY_TIMEOUT_S": str(TIMEOUT_S)}
    args = ["--store", str(tiny_store), "--translator", "replay", "--replay", str(replay)]
    return {"args": args, "env": env, "replay": replay, "log": root / "server.log"}


@pytest.fixture(scope="module", params=["stdio", "http"])
def mcp(request: pytest.FixtureRequest, setup: dict) -> Iterator[McpClient]:
    if request.param == "stdio":
        with stdio_session(setup["args"], setup["env"], setup["log"]) as client:
            yield client
        return
    with HttpServer(setup["args"], setup["env"], setup["log"]) as server:
        with server.session() as client:
            yield client
        assert server.stop() == 0, "kbqa mcp --transport http did not stop cleanly on SIGINT"


def cli_json(run_cli, *argv: object) -> tuple[int, dict]:  # noqa: ANN001
    code, out, _ = run_cli(*argv, "--format", "json")
    return code, json.loads(out)


def ok(res) -> dict:  # noqa: ANN001
    """A successful call: structured content, and the same JSON as its text block."""
    assert not res.is_error, res.content
    assert json.loads(res.content[0].text) == res.structured_content
    return res.structured_content


def failed(res, stage: str) -> dict:  # noqa: ANN001
    """A tool error with its stage and message, and no traceback anywhere in it."""
    assert res.is_error, res.structured_content
    body = res.structured_content
    assert body["error"]["stage"] == stage, body["error"]
    assert "Traceback" not in res.content[0].text and f"[{stage}]" in res.content[0].text
    return body


def test_tools_are_listed_with_typed_inputs_and_outputs(mcp: McpClient) -> None:
    tools = {t.name: t for t in mcp.call(lambda s: s.list_tools()).tools}
    assert set(tools) == TOOLS
    for t in tools.values():
        assert t.description and t.input_schema["type"] == "object" and t.output_schema is not None, t.name
        assert t.annotations is not None and t.annotations.read_only_hint
    assert tools["ask"].input_schema["required"] == ["question"]
    assert tools["ask"].input_schema["properties"]["frontend"]["enum"] == ["desq", "qcompiler", "pyrag"]
    assert {"status", "sparql", "answers", "steps"} <= set(tools["ask"].output_schema["properties"])


def test_ask_matches_kbqa_ask(mcp: McpClient, setup: dict, run_cli, tiny_store: Path) -> None:  # noqa: ANN001
    body = ok(mcp.tool("ask", {"question": QUESTION}))
    code, cli = cli_json(run_cli, "ask", QUESTION, "--store", tiny_store, "--translator", "replay",
                         "--replay", setup["replay"])
    assert code == 0 and body["status"] == "ok" and set(body) >= set(cli)
    for key in ("status", "sparql", "answers", "plan", "constraints", "text"):
        assert body[key] == cli[key], key
    assert body["answers"]["rows"][0][0]["label"] == "Poseidonia"
    assert [s["stage"] for s in body["steps"]] == ["translate", "parse", "validate", "ground", "assemble", "execute"]


def test_generate_sparql_writes_the_query_without_running_it(mcp: McpClient, run_cli, tiny_store: Path,  # noqa: ANN001
                                                              tmp_path: Path) -> None:
    body = ok(mcp.tool("generate_sparql", {"question": QUESTION}))
    src = tmp_path / "capital.desq"
    src.write_text(CAPITAL, encoding="utf-8")
    _, cli = cli_json(run_cli, "compile", src, "--store", tiny_store, "--no-execute")
    assert body["status"] == "generated" == cli["status"] and body["answers"] is None
    assert body["sparql"] == cli["sparql"] and "wd:Q1 wdt:P36" in body["sparql"]
    assert "execute" not in [s["stage"] for s in body["steps"]]


def test_explain_matches_kbqa_compile(mcp: McpClient, run_cli, tiny_store: Path, tmp_path: Path) -> None:  # noqa: ANN001
    body = ok(mcp.tool("explain", {"text": CAPITAL, "frontend": "desq"}))
    src = tmp_path / "capital.desq"
    src.write_text(CAPITAL, encoding="utf-8")
    code, cli = cli_json(run_cli, "compile", src, "--store", tiny_store)
    assert code == 0 and set(body) == set(cli)
    for key in ("status", "sparql", "answers", "plan", "constraints"):
        assert body[key] == cli[key], key
    assert [g["chosen"] for g in body["grounding"]] == [g["chosen"] for g in cli["grounding"]]


def test_run_sparql_matches_kbqa_sparql(mcp: McpClient, run_cli, tiny_store: Path) -> None:  # noqa: ANN001
    query = "SELECT ?c ?l WHERE { wd:Q1 wdt:P36 ?c . ?c rdfs:label ?l }"
    body = ok(mcp.tool("run_sparql", {"query": query}))
    _, cli = cli_json(run_cli, "sparql", query, "--store", tiny_store)
    assert body["kind"] == cli["kind"] == "select" and body["vars"] == cli["vars"] and body["rows"] == cli["rows"]
    assert body["rows"][0][1]["value"] == "Poseidonia" and body["truncated"] is False
    ask = ok(mcp.tool("run_sparql", {"query": "ASK { wd:Q1 wdt:P36 wd:Q2 }"}))
    assert ask["kind"] == "ask" and ask["boolean"] is True


def test_run_sparql_applies_the_row_cap_and_the_time_budget(mcp: McpClient) -> None:
    body = ok(mcp.tool("run_sparql", {"query": "SELECT * WHERE { ?s ?p ?o }"}))
    assert body["truncated"] is True and len(body["rows"]) == ROW_CAP == body["row_cap"]
    runaway = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l . ?m ?n2 ?o . ?q ?r ?t }"
    err = failed(mcp.tool("run_sparql", {"query": runaway}), "execute")
    assert "time" in err["error"]["message"]
    assert ok(mcp.tool("run_sparql", {"query": "ASK { ?s ?p ?o }"}))["boolean"] is True  # the worker came back


@pytest.mark.parametrize("query,words", [
    ("INSERT DATA { <http://x/a> <http://x/b> <http://x/c> }", "Update is refused"),
    ("DELETE WHERE { ?s ?p ?o }", "Update is refused"),
    ("LOAD <http://example.org/data.ttl>", "Update is refused"),
    ("SELECT * WHERE { SERVICE <http://example.org/sparql> { ?s ?p ?o } }", "SERVICE is refused"),
    ("SELECT * WHERE { ?s ex:p\\# ?o . SERVICE <http://127.0.0.1:9/> { ?s ?p ?o } }", "refused"),
])
def test_run_sparql_refuses_updates_and_service(mcp: McpClient, query: str, words: str) -> None:
    err = failed(mcp.tool("run_sparql", {"query": query}), "execute")
    assert words in err["error"]["message"]
    assert ok(mcp.tool("run_sparql", {"query": "ASK { wd:Q1 ?p ?o }"}))["boolean"] is True  # the store is intact


def test_ground_matches_kbqa_ground(mcp: McpClient, run_cli, tiny_store: Path) -> None:  # noqa: ANN001
    body = ok(mcp.tool("ground", {"label": "capital", "kind": "property", "k": 5}))
    code, cli = cli_json(run_cli, "ground", "capital", "--kind", "property", "--k", "5", "--store", tiny_store)
    assert code == 0 and body == cli
    assert body["candidates"][0]["id"] == "http://www.wikidata.org/entity/P36"


def test_describe_kb_and_the_schema_resource(mcp: McpClient, run_cli, tiny_store: Path) -> None:  # noqa: ANN001
    body = ok(mcp.tool("describe_kb", {"limit": 3}))
    _, count = cli_json(run_cli, "sparql", "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", "--store", tiny_store)
    assert body["profile"] == "wikidata" and body["triples"] == int(count["rows"][0][0]["value"])
    assert body["translator"] == "replay" and body["prefixes"]["wdt"] == "http://www.wikidata.org/prop/direct/"
    assert len(body["predicates"]) == 3 and body["total_predicates"] >= 3
    classes = {c["short"]: c for c in body["classes"]}
    assert classes["wd:Q6256"]["label"] == "country" and classes["wd:Q6256"]["count"] > 0
    preds = {p["short"]: p["label"] for p in ok(mcp.tool("describe_kb"))["predicates"]}
    assert preds["wdt:P36"] == "capital"
    resources = {str(r.uri): r for r in mcp.call(lambda s: s.list_resources()).resources}
    assert set(resources) == {"kbqa://schema", "kbqa://eval/last"}
    schema = json.loads(mcp.call(lambda s: s.read_resource("kbqa://schema")).contents[0].text)
    assert schema["profile"] == "wikidata" and "wdt:P36" in {p["short"] for p in schema["predicates"]}
    report = mcp.call(lambda s: s.read_resource("kbqa://eval/last")).contents[0]
    assert report.text.startswith("# eval report") and report.mime_type == "text/markdown"


@pytest.mark.parametrize("tool,args,stage,words", [
    ("ask", {"question": ""}, "usage", "the question is empty"),
    ("ask", {"question": "x" * 1001}, "usage", "the limit is 1000"),
    ("ask", {"question": QUESTION, "frontend": "sql"}, "usage", "unknown front-end 'sql'"),
    ("ask", {"question": 42}, "usage", "question"),
    ("ask", {}, "usage", "question"),
    ("generate_sparql", {"question": "   "}, "usage", "the question is empty"),
    ("explain", {"text": "  "}, "usage", "the source is empty"),
    ("explain", {"text": "final_answer = hop(entity('x'), ", "frontend": "pyrag"}, "parse", ""),
    ("ground", {"label": "capital", "k": 0}, "usage", "k:"),
    ("ground", {"label": "capital", "kind": "planet"}, "usage", "kind:"),
    ("run_sparql", {"query": ""}, "usage", "the query is empty"),
    ("run_sparql", {"query": "SELEC nothing"}, "execute", ""),
    ("describe_kb", {"limit": 0}, "usage", "limit:"),
    ("no_such_tool", {}, "usage", "no_such_tool"),
])
def test_bad_input_is_a_tool_error(mcp: McpClient, tool: str, args: dict, stage: str, words: str) -> None:
    err = failed(mcp.tool(tool, args), stage)
    assert words in err["error"]["message"]


def test_a_failed_question_names_its_stage_and_keeps_the_steps(mcp: McpClient) -> None:
    bad = failed(mcp.tool("ask", {"question": "a question the model got wrong"}), "validate")
    assert bad["result"]["failed_stage"] == "validate" and "[unknown]" in json.dumps(bad["result"]["errors"])
    assert [s["stage"] for s in bad["result"]["steps"]][:2] == ["translate", "parse"]
    unknown = failed(mcp.tool("ask", {"question": "a question nobody recorded"}), "translate")
    assert "no recorded output" in unknown["error"]["message"]
    malformed = failed(mcp.tool("explain", {"text": MALFORMED}), "validate")
    assert malformed["result"]["status"] == "error"


def test_stdio_server_is_lean_and_ends_with_its_client(setup: dict) -> None:
    """No training stack on the query path (issue 17), and a clean exit when the client closes stdin."""
    hook = ("import atexit, sys\n"
            "atexit.register(lambda: print('HEAVY', sorted(m for m in ('torch', 'transformers', 'sentence_transformers')"
            " if m in sys.modules), file=sys.stderr))\n"
            "from kbqa.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    proc = subprocess.run([sys.executable, "-c", hook, "mcp", *setup["args"]], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120, env={**os.environ, **setup["env"]})
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr[-2000:]
    assert "HEAVY []" in proc.stderr


# issue 24 item 6: lines the SDK cannot read (it logged and dropped them) each get one JSON-RPC error, in order,
# with the request's id where the line has a usable one; the session goes on.
MALFORMED_LINES = [
    (b'{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"ask","arguments":{"question":"\\ud800"}}}',
     11, -32602, "params.arguments.question is not Unicode text"),
    (b"this is not JSON", None, -32700, "not JSON"),
    (b'{"jsonrpc":"2.0","id":12,"method":"tools/list","params":5}', 12, -32602, '"params" must be an object'),
    (b'{"jsonrpc":"2.0","id":13,"method":"tools/list","params":["a"]}', 13, -32602, '"params" must be an object'),
    (b"[]", None, -32600, "a batch"),
    (b"42", None, -32600, "not a number"),
    (b'{"jsonrpc":"1.0","id":14,"method":"ping"}', 14, -32600, '"jsonrpc" must be "2.0"'),
    (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', None, -32600, '"id" must be a string or an integer'),
    (b'{"jsonrpc":"2.0","id":15,"method":7}', 15, -32600, '"method" must be a string'),
    (b'\xff{"jsonrpc":"2.0"}', None, -32700, "not UTF-8"),
    (b'{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"ask","arguments":5}}', 16, -32602, ""),
]


def test_stdio_answers_every_malformed_line(setup: dict) -> None:
    from mcp_harness import RawStdio

    log = setup["log"].with_name("raw-stdio.log")
    server = RawStdio(setup["args"], setup["env"], log)
    try:
        server.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}).encode())
        assert server.reply()["id"] == 1
        server.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        server.send(b"")  # a blank line is not a message: nothing to answer
        for line, rid, code, words in MALFORMED_LINES:
            server.send(line)
            got = server.reply(timeout=60)
            assert got["jsonrpc"] == "2.0" and got["id"] == rid and got["error"]["code"] == code, (line, got)
            assert words in got["error"]["message"], got
        server.send(b'{"jsonrpc":"2.0","id":99,"method":"tools/list"}')
        got = server.reply(timeout=60)
        assert got["id"] == 99 and {t["name"] for t in got["result"]["tools"]} == TOOLS
    finally:
        assert server.close() == 0
    assert "Traceback" not in log.read_text(encoding="utf-8", errors="replace")


def test_http_answers_every_malformed_body(setup: dict) -> None:
    """The same messages POSTed to /mcp (the SDK answered with `id: null` and pydantic's whole text, and took
    `"id": true` for a notification: 202, no reply): each is a 400 with one short JSON-RPC error; good calls, a
    notification and the body limit keep the SDK's answers."""
    import httpx

    log = setup["log"].with_name("raw-http.log")
    with HttpServer(setup["args"], setup["env"], log) as server, httpx.Client(timeout=60) as http:
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        init = http.post(server.url, headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
        assert init.status_code == 200 and init.json()["id"] == 1, init.text
        session = {**headers, "mcp-session-id": init.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
        note = http.post(server.url, headers=session, content=b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        assert note.status_code == 202, note.text
        for body, rid, code, words in [*MALFORMED_LINES, (b"", None, -32700, "the request body is not JSON"),
                                       (b'{"jsonrpc":"2.0",\n "id":"a",\n "method":"ping", "params":[]}', "a", -32602,
                                        '"params" must be an object')]:
            got = http.post(server.url, headers=session, content=body)
            # a well-formed tools/call with bad arguments is the session's to answer (its JSON-RPC error, HTTP 200)
            assert got.status_code == (200 if rid == 16 else 400), (body, got.text)
            err = got.json()
            assert set(err) == {"jsonrpc", "id", "error"} and err["id"] == rid and err["error"]["code"] == code, (body, err)
            assert words in err["error"]["message"] and len(err["error"]["message"]) < 200, err
        too_big = http.post(server.url, headers=session, content=b'{"x":"' + b"a" * (300 * 1024) + b'"}')
        assert too_big.status_code == 413, too_big.text
        good = http.post(server.url, headers=session, json={"jsonrpc": "2.0", "id": 99, "method": "tools/list"})
        assert good.status_code == 200 and good.json()["id"] == 99, good.text
        assert {t["name"] for t in good.json()["result"]["tools"]} == TOOLS
        call = http.post(server.url, headers=session, json={"jsonrpc": "2.0", "id": 100, "method": "tools/call",
                                                            "params": {"name": "ask", "arguments": {"question": QUESTION}}})
        assert call.status_code == 200 and not call.json()["result"]["isError"], call.text
        assert server.stop() == 0
    assert "Traceback" not in log.read_text(encoding="utf-8", errors="replace")
