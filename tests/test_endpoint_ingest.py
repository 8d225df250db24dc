"""`kbqa ingest --endpoint`: the label memory paged out of a real Oxigraph server equals a dump ingestion's,
and an interrupted run (stopped after N pages, or killed) resumes to the same memory as an uninterrupted one."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from endpoint_servers import closed_port_url

from kb_dumps.endpoint_ingest import PROGRESS_KEY, ingest_endpoint
from kb_dumps.ingest import ingest
from kb_dumps.layout import StoreLayout
from kb_dumps.oxigraph_server import OxigraphServer, oxigraph_binary
from kb_dumps.stage_errors import EndpointError, IngestError

try:
    oxigraph_binary()
except Exception:  # noqa: BLE001
    pytest.skip("the oxigraph server (pip install oxigraph, test extra) is not installed", allow_module_level=True)

FIXTURES = Path(__file__).parent / "fixtures"
RDFS, SKOS, OWL = "http://www.w3.org/2000/01/rdf-schema#", "http://www.w3.org/2004/02/skos/core#", \
    "http://www.w3.org/2002/07/owl#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"


def _kg() -> str:
    """A generic KG with what the label memory distinguishes: labels in several languages and untagged,
    aliases, descriptions, classes (typed objects, subclass ends), declared properties, blank nodes,
    self-loops, ids with no label (named from their local name), a text predicate with an IRI object."""
    e = "http://kg.example.org/"
    lines = [f"<{e}knows> <{RDF_TYPE}> <{OWL}ObjectProperty> .", f"<{e}Person> <{RDFS}subClassOf> <{e}Agent> ."]
    for i in range(120):
        s = f"<{e}person{i}>"
        lines.append(f'{s} <{RDFS}label> "Person {i}"@en .')
        if i % 3 == 0:
            lines.append(f'{s} <{RDFS}label> "Person {i} (de)"@de .')
        if i % 4 == 0:
            lines.append(f'{s} <{RDFS}label> "P{i}" .')
        if i % 5 == 0:
            lines.append(f'{s} <{SKOS}altLabel> "Someone \\"{i}\\""@en .')
            lines.append(f'{s} <{SKOS}altLabel> "Quelqu\'un {i}"@fr .')  # a language not asked for
        lines.append(f'{s} <{RDFS}comment> "person number {i}\\nsecond line"@en .')
        lines.append(f"{s} <{RDF_TYPE}> <{e}Person> .")
        lines.append(f"{s} <{e}knows> <{e}person{(i * 7) % 120}> .")
        lines.append(f"{s} <{e}bornIn> <{e}cityNumber{i % 9}> .")  # cities: no label at all
    lines += [f"_:b1 <{e}knows> <{e}person1> .", f"<{e}person2> <{e}knows> _:b2 .",
              f"<{e}person3> <{RDFS}label> <{e}person4> ."]
    return "\n".join(lines) + "\n"


def _rows(store: Path, with_rowid: bool = False) -> dict[str, tuple]:
    con = sqlite3.connect(f"file:{StoreLayout.of(store).labels}?mode=ro", uri=True)
    out = {}
    for rowid, i, kind, label, aliases, desc, pop in con.execute(
            "SELECT rowid, id, kind, label, aliases, description, popularity FROM labels"):
        al = json.loads(aliases)
        out[i] = (rowid, kind, label, al, desc, pop) if with_rowid else (kind, label, sorted(al), desc, pop)
    con.close()
    return out


@pytest.fixture(scope="module")
def kg(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("epkg")
    (root / "kg.nt").write_text(_kg(), encoding="utf-8")
    ingest([root / "kg.nt"], root / "dump", profile="generic", languages=("en", "de"), progress=False)
    with OxigraphServer(root / "dump") as srv:
        reference = root / "reference"
        ingest_endpoint(srv.url, reference, profile="generic", languages=("en", "de"), page_size=7, progress=False)
        yield srv, root, reference


def test_same_memory_as_the_dump_ingestion(kg) -> None:  # noqa: ANN001
    srv, root, reference = kg
    dump, remote = _rows(root / "dump"), _rows(reference)
    assert remote == dump and len(remote) > 130
    assert remote["http://kg.example.org/knows"][0] == "property"
    assert remote["http://kg.example.org/Agent"][0] == "class"
    assert remote["http://kg.example.org/cityNumber3"][1] == "city number3"  # from the local name
    layout = StoreLayout.of(reference)
    assert layout.exists() and layout.endpoint == {"url": srv.url, "dialect": "generic"}
    assert not layout.oxigraph.exists() and not layout.endpoint_building.exists()  # no triples copied


def test_wikidata_profile_matches_the_dump_for_every_labelled_id(tmp_path: Path) -> None:
    dump = tmp_path / "dump"
    ingest([FIXTURES / "desq_real" / "assemble_kb.nt"], dump, profile="wikidata", progress=False)
    with OxigraphServer(dump) as srv:
        ingest_endpoint(srv.url, tmp_path / "labelled", page_size=4, progress=False)  # profile detected
        ingest_endpoint(srv.url, tmp_path / "all", profile="wikidata", all_ids=True, page_size=4, progress=False)
    full, labelled, everything = _rows(dump), _rows(tmp_path / "labelled"), _rows(tmp_path / "all")
    assert everything == full
    assert labelled == {k: v for k, v in full.items() if v[1] or v[2] or v[3] or v[0] != "entity"}
    assert StoreLayout.of(tmp_path / "labelled").profile_name == "wikidata"


def test_stopped_after_some_pages_and_resumed_gives_the_same_memory(kg, tmp_path: Path, run_cli) -> None:  # noqa: ANN001
    srv, _, reference = kg
    store = tmp_path / "resumed"
    args = ["ingest", "--endpoint", srv.url, "--store", store, "--profile", "generic", "--lang", "en,de",
            "--page-size", "7", "--max-pages", "9"]
    runs = 0
    while True:
        code, out, err = run_cli(*args)
        assert code == 0, err
        runs += 1
        if "label-memory rows" in out:
            break
        assert "run the same command again to resume" in out and runs < 40
    assert runs > 3 and ("resumed" in out)
    assert _rows(store, with_rowid=True) == _rows(reference, with_rowid=True)
    code, _, err = run_cli(*args)  # a complete store is not rebuilt by accident
    assert code == 2 and "--replace" in err


def test_killed_mid_run_and_resumed_gives_the_same_memory(kg, tmp_path: Path) -> None:  # noqa: ANN001
    srv, _, reference = kg
    store = tmp_path / "killed"
    cmd = [sys.executable, "-m", "kbqa.cli", "ingest", "--endpoint", str(srv.url), "--store", str(store),
           "--profile", "generic", "--lang", "en,de", "--page-size", "7", "--no-progress"]
    env = {**os.environ, "KBQA_ENDPOINT_RATE": "25"}  # ~40 ms a page: time to kill it in the middle
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    progress = StoreLayout.of(store).endpoint_building / "labels.sqlite"
    pages = 0
    deadline = time.monotonic() + 60
    while pages < 12 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
        try:
            con = sqlite3.connect(f"file:{progress}?mode=ro", uri=True)
            row = con.execute("SELECT value FROM meta WHERE key = ?", (PROGRESS_KEY,)).fetchone()
            con.close()
            pages = json.loads(row[0])["pages"] if row else 0
        except sqlite3.Error:
            pass
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL and pages >= 12, pages
    assert not StoreLayout.of(store).exists()
    done = subprocess.run(cmd, env={**os.environ}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "resumed" in done.stdout
    assert _rows(store, with_rowid=True) == _rows(reference, with_rowid=True)


def test_refusals_and_an_unreachable_endpoint(kg, tmp_path: Path) -> None:  # noqa: ANN001
    srv, root, reference = kg
    store = tmp_path / "s"
    with pytest.raises(EndpointError, match="not reachable"):
        ingest_endpoint(closed_port_url(), store, profile="generic", progress=False,
                        endpoint_options={"retries": 0})
    assert not StoreLayout.of(store).exists()
    ingest_endpoint(srv.url, store, profile="generic", languages=("en",), page_size=7, max_pages=2, progress=False)
    with pytest.raises(IngestError, match="interrupted ingestion with other settings"):
        ingest_endpoint(srv.url, store, profile="generic", languages=("en", "de"), progress=False)
    report = ingest_endpoint(srv.url, store, profile="generic", languages=("en", "de"), page_size=7, replace=True,
                             progress=False)
    assert report.complete and not report.resumed
    assert _rows(store, with_rowid=True) == _rows(reference, with_rowid=True)
    with pytest.raises(IngestError, match="dump sources need a local store"):
        ingest([root / "kg.nt"], store, append=True, progress=False)
    with pytest.raises(IngestError, match="already holds a local store"):
        ingest_endpoint(srv.url, root / "dump", profile="generic", progress=False)


def test_profile_file_overrides_a_query_and_declares_prefixes(kg, tmp_path: Path) -> None:  # noqa: ANN001
    srv, _, reference = kg
    profile = tmp_path / "kg.json"
    outgoing = ("SELECT ?id (COUNT(*) AS ?n) WHERE { VALUES ?id { {{ids}} } ?id ?p ?o "
                "FILTER(" + "!(isLiteral(?o) && ?p IN ({{text_predicate_list}}))) } GROUP BY ?id")
    profile.write_text(json.dumps({"name": "kg", "prefixes": {"kg": "http://kg.example.org/"},
                                   "endpoint_queries": {"popularity": outgoing}}), encoding="utf-8")
    report = ingest_endpoint(srv.url, tmp_path / "s", profile=str(profile), languages=("en", "de"), progress=False)
    assert report.complete
    got, ref = _rows(tmp_path / "s"), _rows(reference)
    assert set(got) == set(ref)
    city = "http://kg.example.org/cityNumber1"  # only ever an object: no outgoing statement
    assert got[city][4] == 0 and ref[city][4] > 0
    assert StoreLayout.of(tmp_path / "s").profile_name == str(profile.resolve())
    profile.write_text(json.dumps({"endpoint_queries": {"texts": "SELECT ?key WHERE { {{nope}} }"}}))
    with pytest.raises(IngestError, match="unknown placeholder"):
        ingest_endpoint(srv.url, tmp_path / "t", profile=str(profile), progress=False)


WHOLE_KG_IDS = """SELECT DISTINCT ?key WHERE {
  { ?key ?p ?o FILTER(!(isLiteral(?o) && ?p IN ({{text_predicate_list}}))) }
  UNION { ?s ?p ?key FILTER(isIRI(?s)) }
  FILTER(isIRI(?key))
  FILTER(STR(?key) > {{after}})
} ORDER BY STR(?key) LIMIT {{limit}}"""


def test_ids_by_predicate_group_equal_the_whole_kg_pages(kg, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:  # noqa: ANN001
    """The ids phase reads groups of predicates: one unsorted page per group whose ids fit a page, a predicate
    larger than a page at once (an engine without a row cap) or keyset-paged (where one request may not hold it);
    the memory, rowids included, is the one the whole-KG key pages give (an override without {{predicates}})."""
    import kb_dumps.endpoint_ingest as endpoint_ingest

    srv, _, reference = kg
    profile = tmp_path / "whole.json"
    profile.write_text(json.dumps({"endpoint_queries": {"ids": WHOLE_KG_IDS, "ids_sorted": WHOLE_KG_IDS}}),
                       encoding="utf-8")
    pages = {}
    for name, page, most in (("grouped", 50_000, None), ("large-alone", 7, None), ("sorted", 7, 50)):
        if most:  # a request may hold at most 50 rows: rdf:type, knows, bornIn (>= 120 ids each) are keyset-paged
            monkeypatch.setattr(endpoint_ingest, "MAX_PAGE_ROWS", most)
        got = ingest_endpoint(srv.url, tmp_path / name, profile="generic", languages=("en", "de"), page_size=page,
                              progress=False)
        assert _rows(tmp_path / name, with_rowid=True) == _rows(reference, with_rowid=True), name
        pages[name] = got.phases["ids"]["pages"]
    runs = 0  # the keyset-paged predicates stopped every 5 pages and resumed inside them: the same memory
    while not ingest_endpoint(srv.url, tmp_path / "stopped", profile="generic", languages=("en", "de"), page_size=7,
                              max_pages=5, progress=False).complete:
        runs += 1
        assert runs < 100
    assert runs > 10 and _rows(tmp_path / "stopped", with_rowid=True) == _rows(reference, with_rowid=True)
    whole = ingest_endpoint(srv.url, tmp_path / "whole", profile=str(profile), languages=("en", "de"), page_size=7,
                            progress=False)
    assert whole.label_rows > 130 and _rows(tmp_path / "whole", with_rowid=True) == _rows(reference, with_rowid=True)
    assert pages["grouped"] == 1 and pages["large-alone"] < pages["sorted"] and pages["sorted"] > 3 * 120 // 7, pages
    con = sqlite3.connect(f"file:{StoreLayout.of(tmp_path / 'sorted').labels}?mode=ro", uri=True)
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    con.close()
    assert tables == {"labels", "meta"}  # the staging tables are gone


def test_a_failing_ids_page_is_a_staged_error_and_leaves_no_store(kg, tmp_path: Path, run_cli) -> None:  # noqa: ANN001
    srv, _, _ = kg
    profile = tmp_path / "bad.json"  # an ids query the endpoint refuses (HTTP 400) after the first phases ran
    profile.write_text(json.dumps({"endpoint_queries": {"ids": "SELECT ?key WHERE { VALUES ?p { {{predicates}} } "
                                                                "?key ?p ?o FILTER(STR(?key) > {{after}}) "
                                                                "} ORDER BY STR(?key) LIMIT {{limit}} NOT SPARQL"}}))
    store = tmp_path / "s"
    args = ["ingest", "--endpoint", srv.url, "--store", store, "--profile", profile, "--page-size", "7",
            "--no-progress"]
    code, out, err = run_cli(*args)
    assert code == 3 and err.count("\n") == 1, err
    assert err.startswith("error: [execute] ids page of ") and "run the same command again to resume" in err, err
    assert not StoreLayout.of(store).exists() and StoreLayout.of(store).endpoint_building.exists()
    code, _, err2 = run_cli(*args)  # the rerun resumes where it stopped: the same page fails, nothing rebuilt
    assert code == 3 and "ids page of " in err2 and not StoreLayout.of(store).exists()
