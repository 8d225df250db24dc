"""Every CLI verb × bad input class: one line, no traceback, the documented exit code, the store unchanged;
and the HTTP equivalents: a JSON error body, never a 500."""

from __future__ import annotations

import bz2
import gzip
import hashlib
from pathlib import Path

import httpx
import pytest
from server_harness import LiveServer

from kbqa.server import ServerSettings, create_app

NT = "".join(f"<http://example.org/n{i}> <http://example.org/p> \"w{i}\" .\n" for i in range(2000))


def tree_digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.name != ".lock":
            h.update(str(p.relative_to(root)).encode() + p.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("bad")
    gz, bz = gzip.compress(NT.encode()), bz2.compress(NT.encode())
    files = {"truncated.nt.gz": gz[: len(gz) // 2], "truncated.nt.bz2": bz[: len(bz) // 2],
             "notgzip.nt.gz": NT.encode(), "binary.nt": bytes(range(256)) * 4,
             "latin1.nt": '<http://e.org/a> <http://e.org/b> "caf\xe9" .\n'.encode("latin-1"),
             "binary.rq": bytes(range(256)), "huge.nt": b"<http://e.org/a> <http://e.org/b> \"" + b"x" * 3_000_000}
    out = {}
    for name, data in files.items():
        (d / name).write_bytes(data)
        out[name] = d / name
    (d / "adir.nt").mkdir()
    out["adir.nt"] = d / "adir.nt"
    out["missing.nt"] = d / "missing.nt"
    out["good.nt"] = d / "good.nt"
    out["good.nt"].write_text(NT[:2000])
    out["empty.rq"] = d / "empty.rq"
    out["empty.rq"].write_text("  \n")
    for name, text in (("list.json", "[1]"), ("badkey.json", '{"label_predicates": 5}'), ("broken.json", "{oops")):
        out[name] = d / name
        out[name].write_text(text)
    (d / "notes").mkdir()  # someone's folder: not a store
    (d / "notes" / "todo.txt").write_text("buy milk\n")
    out["notes"] = d / "notes"
    return out


CASES = [  # (argv with {store} / {f:NAME}, exit code, words in the one line)
    (["ingest", "{f:truncated.nt.gz}", "--store", "{store}", "--append"], 3, "truncated"),
    (["ingest", "{f:truncated.nt.bz2}", "--store", "{store}", "--append"], 3, "truncated"),
    (["ingest", "{f:notgzip.nt.gz}", "--store", "{store}", "--append"], 3, "not valid gzip"),
    (["ingest", "{f:adir.nt}", "--store", "{store}", "--append"], 3, "is a directory"),
    (["ingest", "{f:missing.nt}", "--store", "{store}", "--append"], 3, "no such file"),
    (["ingest", "{f:binary.nt}", "--store", "{store}", "--append"], 3, "binary.nt"),
    (["ingest", "{f:latin1.nt}", "--store", "{store}", "--append"], 3, "latin1.nt"),
    (["ingest", "{f:huge.nt}", "--store", "{store}", "--append"], 3, "huge.nt"),
    (["sparql", "ASK {}", "--store", "{store}", "--timeout", "1e9"], 2, "time budget"),
    (["sparql", "ASK {}", "--store", "{store}", "--timeout", "inf"], 2, "time budget"),
    (["sparql", "ASK {}", "--store", "{store}", "--timeout", "nan"], 2, "time budget"),
    (["sparql", "ASK {}", "--store", "{store}", "--timeout", "0"], 2, "time budget"),
    (["sparql", "ASK {}", "--store", "{store}", "--timeout", "-1"], 2, "time budget"),
    (["sparql", "ASK {}", "--store", "{store}", "--limit", "-5"], 2, "negative"),
    (["sparql", "@{f:binary.rq}", "--store", "{store}"], 2, "not UTF-8"),
    (["sparql", "@{f:adir.nt}", "--store", "{store}"], 2, "directory"),
    (["sparql", "@{f:missing.nt}", "--store", "{store}"], 2, "cannot read"),
    (["sparql", "ASK { FILTER('caf\udce9') }", "--store", "{store}"], 2, "not valid UTF-8"),
    (["ask", "caf\udce9 where", "--store", "{store}"], 2, "not valid UTF-8"),
    (["compile", "caf\udce9", "--store", "{store}"], 2, "not valid UTF-8"),
    (["ground", "caf\udce9", "--store", "{store}"], 2, "not valid UTF-8"),
    # an endpoint has no case bank: a usage error that says how to make a store from it (was a TypeError)
    (["ask", "who is x", "--endpoint", "http://127.0.0.1:9/sparql"], 2,
     "kbqa ingest --endpoint http://127.0.0.1:9/sparql --store DIR"),
    # issue 24 item 5: server flags (were tracebacks)
    (["serve", "--store", "{store}", "--port", "-1"], 2, "argument --port: '-1' is not a TCP port"),
    (["serve", "--store", "{store}", "--port", "70000"], 2, "argument --port: '70000' is not a TCP port"),
    (["serve", "--store", "{store}", "--timeout", "nan"], 2, "argument --timeout"),
    (["mcp", "--store", "{store}", "--transport", "http", "--port", "-1"], 2, "argument --port"),
    # item 8: bad values were "a bug in kbqa" (rc 4)
    (["ingest", "{f:good.nt}", "--store", "{new}", "--profile", "nonexistent"], 2, "unknown KB profile 'nonexistent'"),
    (["ingest", "{f:good.nt}", "--store", "{new}", "--profile", "{f:missing.nt}.json"], 2, "no profile file"),
    (["ingest", "{f:good.nt}", "--store", "{new}", "--profile", "{f:list.json}"], 3, "a JSON object of settings"),
    (["ingest", "{f:good.nt}", "--store", "{new}", "--profile", "{f:badkey.json}"], 3,
     "'label_predicates' must be a list of strings"),
    (["ingest", "{f:good.nt}", "--store", "{new}", "--profile", "{f:broken.json}"], 3, "not JSON"),
    (["ingest", "--endpoint", "http://127.0.0.1:9/sparql", "--store", "{new}", "--endpoint-timeout", "nan"], 2,
     "argument --endpoint-timeout"),
    (["ingest", "--endpoint", "http://127.0.0.1:9/sparql", "--store", "{new}", "--endpoint-timeout", "1e308"], 2,
     "argument --endpoint-timeout"),
    (["ingest", "--endpoint", "http://127.0.0.1:9/sparql", "--store", "{new}", "--page-size", "0"], 2,
     "argument --page-size"),
    (["index", "--store", "{store}", "--vector-store", "qdrant:x"], 2, "argument --vector-store"),
    (["index", "--store", "{store}", "--batch-size", "0"], 2, "argument --batch-size"),
    (["cases", "search", "q", "--store", "{store}", "--k", "-1"], 2, "argument --k"),
    (["cases", "search", "q", "--store", "{store}", "--k", "1" + "0" * 30], 2, "argument --k"),
    (["ground", "x", "--store", "{store}", "--k", "0"], 2, "argument --k"),
    (["ground", "x", "--store", "{store}", "--threshold", "nan"], 2, "argument --threshold"),
    (["ask", "q", "--store", "{store}", "--timeout", "nan"], 2, "argument --timeout"),
    (["ask", "q", "--store", "{store}", "--timeout", "1e308"], 2, "argument --timeout"),
    (["ask", "q", "--store", "{store}", "--repair-rounds", "-1"], 2, "argument --repair-rounds"),
    (["ask", "q", "--server", "::::"], 2, "argument --server: '::::' is not an http(s) URL"),
    (["ask", "q", "--server", "http://[::1"], 2, "argument --server"),
    (["ask", "q", "--server", "http://127.0.0.1:99999"], 2, "argument --server"),
    (["eval", "simplequestions-valid", "--store", "{store}", "--timeout", "nan"], 2, "argument --timeout"),
    (["eval", "simplequestions-valid", "--store", "{store}", "--jobs", "0"], 2, "argument --jobs"),
    (["compile", "x", "--store", "{store}", "--timeout", "inf"], 2, "argument --timeout"),
    (["mcp", "--store", "{store}", "--timeout", "nan"], 2, "argument --timeout"),
    (["serve", "--store", "{store}", "--engines", "0"], 2, "argument --engines"),
    (["train", "--lr", "nan"], 2, "argument --lr"),
    # item 9: small ones
    (["sparql", "ASK {}", "--store", ""], 2, "the store path is empty"),
    (["ingest", "{f:good.nt}", "--store", ""], 2, "the store path is empty"),
    (["ask", "q", "--store", ""], 2, "the store path is empty"),
    (["ingest", "{f:good.nt}", "--store", "{f:notes}"], 2, "not a kbqa store"),
    (["ingest", "{f:good.nt}", "--store", "{f:good.nt}"], 2, "is a file, not a store directory"),
    (["sparql", "ASK {}", "--store", "{f:good.nt}"], 2, "is a file, not a store directory"),
    (["sparql", "", "--store", "{store}"], 2, "the query is empty"),
    (["sparql", "  \n ", "--store", "{store}"], 2, "the query is empty"),
    (["sparql", "@{f:empty.rq}", "--store", "{store}"], 2, "the query file is empty"),  # as the other @FILE errors
    (["ask", "", "--store", "{store}"], 2, "the question is empty"),
    (["ask", "   ", "--store", "{store}"], 2, "the question is empty"),
]


@pytest.mark.parametrize("argv,code,words", CASES, ids=[" ".join(c[0][:2]) + f" {i}" for i, c in enumerate(CASES)])
def test_cli_bad_input(small_store: Path, bad_files: dict[str, Path], run_cli, capsys: pytest.CaptureFixture[str],
                       tmp_path: Path, argv: list[str], code: int, words: str) -> None:
    before, notes = tree_digest(small_store), tree_digest(bad_files["notes"])
    new = tmp_path / "new-store"
    args = [a.replace("{store}", str(small_store)).replace("{new}", str(new)) for a in argv]
    for name, path in bad_files.items():
        args = [a.replace("{f:" + name + "}", str(path)) for a in args]
    try:
        got, out, err = run_cli(*args)
    except SystemExit as e:  # argparse's usage errors: one line naming the flag, after the usage line
        got, err = e.code, capsys.readouterr().err
    assert got == code, err
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("error") or ": error:" in ln or "Traceback" in ln]
    assert "Traceback" not in err and len(lines) <= 1, err
    assert "bug in kbqa" not in err
    if err:
        assert words in err, err
    assert tree_digest(small_store) == before
    assert tree_digest(bad_files["notes"]) == notes and not new.exists()  # nothing written anywhere
    assert (bad_files["good.nt"]).is_file()


@pytest.fixture(scope="module")
def server(small_store: Path):
    with LiveServer(create_app(ServerSettings(store=small_store))) as live:
        yield live.url


HTTP_CASES = [  # (method, path, kwargs, status)
    ("POST", "/v1/ask", {"content": b'{"question": "caf\\udce9 where"}'}, 422),
    ("POST", "/v1/generate", {"content": b'{"question": "\\ud800"}'}, 422),
    ("POST", "/v1/batch", {"content": b'{"questions": ["ok", "\\udfff x"]}'}, 422),
    ("POST", "/v1/compile", {"content": b'{"source": "AC1: \\ud800"}'}, 422),
    ("POST", "/v1/ask", {"content": b'{"question": "caf\xe9"}'}, 422),  # invalid UTF-8 JSON
    ("GET", "/sparql?query=ASK%20%7B%7D&format=foo", {}, 400),
    ("GET", "/sparql?query=ASK%20%7B%20FILTER(%22%E9%22)%20%7D", {}, 400),
    ("POST", "/sparql", {"content": "ASK {}".encode("utf-16"),
                         "headers": {"content-type": "application/sparql-query; charset=UTF-16"}}, 415),
    ("GET", "/sparql?query=ASK%20%7B%7D&default-graph-uri=not%20an%20iri", {}, 400),
]


@pytest.mark.parametrize("method,path,kwargs,status", HTTP_CASES)
def test_http_bad_input(server: str, method: str, path: str, kwargs: dict, status: int) -> None:
    headers = {"content-type": "application/json", **kwargs.pop("headers", {})}
    res = httpx.request(method, server + path, headers=headers, timeout=60, **kwargs)
    assert res.status_code == status, res.text
    assert set(res.json()["error"]) >= {"stage", "message"}


# Python with torch unimportable (as on a core install without the train extra): the import is blocked, our code
# runs as it is.
NO_TORCH = "import sys; sys.modules['torch'] = None; from kbqa.cli import main; sys.exit(main(sys.argv[1:]))"


def test_hf_backend_without_torch_is_a_usage_error(small_store: Path) -> None:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", NO_TORCH, "ask", "who is s1", "--store", str(small_store),
                           "--backend", "hf", "--model", "some-model"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "error: [usage] the hf backend needs torch, transformers, peft and gguf: pip install 'kbqa[train]'"]


# issue 24 item 9: XML cannot carry U+0000 (nor the other characters outside XML 1.0's Char), and RDF/XML cannot
# write a predicate whose IRI does not end in an XML name: 406 naming why and what to ask for, never a document
# that no XML parser reads. JSON carries both.
NUL_SELECT = 'SELECT ?x WHERE { BIND("a\\u0000b" AS ?x) }'
BAD_PREDICATE = 'CONSTRUCT { <http://x/a> <http://x/1> "v" } WHERE {}'
XML_CASES = [  # (query, format, status, words)
    (NUL_SELECT, "xml", 406, "U+0000, which XML 1.0 cannot carry"),
    ('SELECT ?x WHERE { BIND("bell\\u0007" AS ?x) }', "xml", 406, "U+0007"),
    ('CONSTRUCT { <http://x/a> <http://x/p> "a\\u0000b" } WHERE {}', "rdf+xml", 406, "U+0000"),
    (BAD_PREDICATE, "rdf+xml", 406, "the predicate <http://x/1> does not end in an XML name"),
    ('CONSTRUCT { <http://x/a> <http://x/p#> "v" } WHERE {}', "rdf+xml", 406, "<http://x/p#>"),
    (NUL_SELECT, "json", 200, ""),
    (BAD_PREDICATE, "turtle", 200, ""),
    ('SELECT ?x WHERE { BIND("tab\\there é" AS ?x) }', "xml", 200, ""),
    ('CONSTRUCT { <http://x/a> <http://x/1a> "v" } WHERE {}', "rdf+xml", 200, ""),
]


@pytest.mark.parametrize("query,fmt,status,words", XML_CASES)
def test_xml_results_are_well_formed_or_refused(server: str, query: str, fmt: str, status: int, words: str) -> None:
    import xml.etree.ElementTree as ET

    res = httpx.get(server + "/sparql", params={"query": query, "format": fmt}, timeout=60)
    assert res.status_code == status, res.text
    if status == 406:
        body = res.json()["error"]
        assert body["stage"] == "execute" and words in body["message"], body
    elif "xml" in fmt:
        ET.fromstring(res.content)  # well-formed, and the value is the one stored
    elif fmt == "json":
        assert res.json()["results"]["bindings"][0]["x"]["value"] == "a\x00b"


def test_rdfxml_name_rule_agrees_with_pyoxigraph() -> None:
    """`has_local_name` says exactly which predicates pyoxigraph's RDF/XML writer can name (else `<oxprefix:>`)."""
    import pyoxigraph as ox

    from kb_dumps.xml_check import has_local_name

    for iri in ["http://x/1a", "http://x/a.b", "http://x/-a", "http://x/é", "http://x/a%20b", "urn:x:a",
                "http://x/a:b", "http://x/1.a", "http://x/1", "http://x/", "http://x/p#", "urn:x:1", "http://x/·"]:
        out = ox.serialize([ox.Triple(ox.NamedNode("http://x/s"), ox.NamedNode(iri), ox.Literal("v"))],
                           format=ox.RdfFormat.RDF_XML).decode()
        assert has_local_name(iri) == ("oxprefix:" not in out), iri


# issue 24 item 5/8, from the environment: every numeric setting is checked where it is declared
# (kb_dumps/settings_types.py), so a bad KBQA_* value stops the verb with one usage line naming the variable.
ENV_CASES = [  # (variable, value, argv with {store}, words)
    ("KBQA_SERVER_PORT", "-1", ["serve", "--store", "{store}"], "greater than or equal to 1"),
    ("KBQA_SERVER_PORT", "70000", ["mcp", "--store", "{store}", "--transport", "http"], "less than or equal to 65535"),
    ("KBQA_SERVER_ENGINES", "0", ["serve", "--store", "{store}"], "greater than or equal to 1"),
    ("KBQA_SERVER_QUEUE_TIMEOUT_S", "inf", ["mcp", "--store", "{store}"], "finite number"),
    ("KBQA_SERVER_MAX_BODY_BYTES", "lots", ["serve", "--store", "{store}"], "valid integer"),
    ("KBQA_QUERY_TIMEOUT_S", "nan", ["ask", "who is s1", "--store", "{store}"], "finite number"),
    ("KBQA_QUERY_TIMEOUT_S", "1e308", ["serve", "--store", "{store}"], "less than or equal to 86400"),
    ("KBQA_ROW_CAP", "-5", ["eval", "bestiary", "--store", "{store}"], "greater than or equal to 0"),
    ("KBQA_TIMEOUT_S", "nan", ["ask", "who is s1", "--store", "{store}"], "finite number"),
    ("KBQA_EXPLORE_BUDGET_S", "-1", ["eval", "bestiary", "--store", "{store}"], "greater than 0"),
    ("KBQA_GROUNDING_THRESHOLD", "nan", ["ground", "s1", "--store", "{store}"], "finite number"),
    ("KBQA_ENDPOINT_RATE", "nan", ["ask", "who is s1", "--store", "{store}", "--translator", "replay",
                                   "--endpoint", "http://127.0.0.1:9/sparql"], "finite number"),
]


@pytest.mark.parametrize("var,value,argv,words", ENV_CASES, ids=[f"{c[0]}={c[1]} {c[2][0]}" for c in ENV_CASES])
def test_bad_setting_in_the_environment_is_a_usage_error(small_store: Path, tmp_path: Path, var: str, value: str,
                                                         argv: list[str], words: str) -> None:
    import os
    import subprocess
    import sys

    args = [a.replace("{store}", str(small_store)) for a in argv]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "KBQA_HOME": str(tmp_path / "home"), var: value}
    proc = subprocess.run([sys.executable, "-m", "kbqa.cli", *args], capture_output=True, text=True, timeout=120,
                          env=env, stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert lines[0].startswith("error: [usage] setting ") and f"(environment {var})" in lines[0], lines
    assert words in lines[0] and repr(value) in lines[0], lines


# issue 24 item 9: a text with no query form (only comments, PREFIX or BASE) is a bad query (exit 3) that says so,
# not "SPARQL Update is refused"
NO_FORM = ["# only a comment", "PREFIX ex: <http://e/>", "BASE <http://e/>\n# and a comment\n",
           "PREFIX ex: <http://e/> # SELECT in a comment"]


@pytest.mark.parametrize("query", NO_FORM)
def test_a_query_without_a_query_form_says_so(small_store: Path, run_cli, server: str, query: str) -> None:
    code, _, err = run_cli("sparql", query, "--store", small_store)
    assert code == 3, err
    assert "SELECT, ASK, CONSTRUCT or DESCRIBE" in err and "Update" not in err and len(err.strip().splitlines()) == 1
    res = httpx.post(server + "/sparql", content=query.encode(), timeout=60,
                     headers={"content-type": "application/sparql-query"})
    assert res.status_code == 400, res.text
    assert "SELECT, ASK, CONSTRUCT or DESCRIBE" in res.json()["error"]["message"]
