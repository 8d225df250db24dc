"""Ingestion: every input format (plain, gz, bz2), malformed input, idempotence, append, the lock."""

from __future__ import annotations

import bz2
import gzip
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kb_dumps.ingest import ingest
from kb_dumps.label_memory import LabelMemory
from kb_dumps.layout import StoreLayout
from kb_dumps.stage_errors import IngestError, StoreError
from kb_dumps.store import LocalStore

DUMPS = Path(__file__).parent / "fixtures" / "dumps"
EX = "http://example.org/"


def compressed(src: Path, tmp: Path, comp: str) -> Path:
    data = src.read_bytes()
    if comp == "":
        out = tmp / src.name
        out.write_bytes(data)
    elif comp == "gz":
        out = tmp / (src.name + ".gz")
        out.write_bytes(gzip.compress(data))
    else:
        out = tmp / (src.name + ".bz2")
        out.write_bytes(bz2.compress(data))
    return out


def count(store: Path) -> int:
    with LocalStore(store) as s:
        return int(s.query("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }").rows[0][0]["value"])


def labels_of(store: Path) -> LabelMemory:
    return LabelMemory(StoreLayout.of(store).labels, readonly=True)


@pytest.mark.parametrize("comp", ["", "gz", "bz2"])
@pytest.mark.parametrize("name,expected", [("tiny.nt", 11), ("tiny.nq", 3), ("tiny.ttl", 4), ("tiny.rdf", 3)])
def test_rdf_formats_load_with_labels(tmp_path: Path, name: str, expected: int, comp: str) -> None:
    src = compressed(DUMPS / name, tmp_path, comp)
    report = ingest([src], tmp_path / "kb", progress=False)
    assert report.profile == "generic"
    assert report.triples_added == expected
    assert count(tmp_path / "kb") == expected  # named graphs are queried as one union
    mem = labels_of(tmp_path / "kb")
    alice = mem.get(EX + "alice")
    assert alice is not None and alice.label == "Alice"
    assert mem.get(EX + "bob").label == "Bob"


def test_label_memory_generic_kinds_aliases_popularity(tmp_path: Path) -> None:
    ingest([DUMPS / "tiny.nt"], tmp_path / "kb", progress=False)
    mem = labels_of(tmp_path / "kb")
    alice = mem.get(EX + "alice")
    assert alice.label == "Alice"  # English preferred; the Spanish label is not an asked language
    assert alice.aliases == ["Ally"]
    assert alice.description == "a person in the example KB"
    assert alice.kind == "entity"
    assert alice.popularity == 2  # knows + type; label/alias/comment triples do not count
    assert mem.get(EX + "knows").kind == "property"
    assert mem.get(EX + "Person").kind == "class"
    assert mem.get(EX + "Person").popularity == 2
    assert mem.get(EX + "bob").popularity == 3  # object of knows, type, age


def test_languages_order(tmp_path: Path) -> None:
    ingest([DUMPS / "tiny.nt"], tmp_path / "kb", languages=("es", "en"), progress=False)
    alice = labels_of(tmp_path / "kb").get(EX + "alice")
    assert alice.label == "Alicia"
    assert "Alice" in alice.aliases


@pytest.mark.parametrize("comp", ["", "gz"])
def test_wikidata_json_truthy_statements(tmp_path: Path, comp: str) -> None:
    src = compressed(DUMPS / "wikidata-tiny.json", tmp_path, comp)
    report = ingest([src], tmp_path / "kb", progress=False)
    assert report.profile == "wikidata"
    with LocalStore(tmp_path / "kb") as s:
        occ = s.query("SELECT ?o WHERE { <http://www.wikidata.org/entity/Q42> "
                      "<http://www.wikidata.org/prop/direct/P106> ?o }")
        # preferred rank wins over normal; deprecated never
        assert [r[0]["value"] for r in occ.rows] == ["http://www.wikidata.org/entity/Q36180"]
        cit = s.query("SELECT ?o WHERE { <http://www.wikidata.org/entity/Q42> "
                      "<http://www.wikidata.org/prop/direct/P27> ?o }")
        assert cit.rows == []  # somevalue is skipped, the deprecated value too
        born = s.query("SELECT ?o WHERE { <http://www.wikidata.org/entity/Q42> "
                       "<http://www.wikidata.org/prop/direct/P569> ?o }").rows[0][0]
        assert born["value"] == "1952-03-11T00:00:00Z"
        assert born["datatype"].endswith("#dateTime")
        pop = s.query("SELECT ?o WHERE { <http://www.wikidata.org/entity/Q42> "
                      "<http://www.wikidata.org/prop/direct/P1082> ?o }").rows[0][0]
        assert pop["value"] == "100" and pop["datatype"].endswith("#decimal")
        geo = s.query("SELECT ?o WHERE { <http://www.wikidata.org/entity/Q42> "
                      "<http://www.wikidata.org/prop/direct/P625> ?o }").rows[0][0]
        assert geo["value"] == "Point(0.1167 52.2)"
    mem = labels_of(tmp_path / "kb")
    q42 = mem.get("http://www.wikidata.org/entity/Q42")
    assert q42.label == "Douglas Adams"
    assert q42.description == "English writer and humorist"
    assert q42.aliases == ["Douglas Noel Adams", "DNA"]
    p19 = mem.get("http://www.wikidata.org/entity/P19")
    assert p19.kind == "property" and p19.aliases == ["birthplace"]
    assert p19.popularity >= 1
    assert mem.get("http://www.wikidata.org/entity/Q5").kind == "class"  # object of P31


def test_freebase_dump(tmp_path: Path) -> None:
    src = compressed(DUMPS / "freebase-tiny.nt", tmp_path, "bz2")
    report = ingest([src], tmp_path / "kb", progress=False)
    assert report.profile == "freebase"
    mem = labels_of(tmp_path / "kb")
    titanic = mem.get("http://rdf.freebase.com/ns/m.0abc")
    assert titanic.label == "Titanic"
    assert titanic.description == "1997 film by James Cameron"
    assert titanic.aliases == ["Titanic (1997 film)"]
    assert mem.get("http://rdf.freebase.com/ns/film.film").kind == "class"
    assert mem.get("http://rdf.freebase.com/ns/film.film.directed_by").kind == "property"


BAD = {
    "bad.nt": ('<http://e.org/a> <http://e.org/p> <http://e.org/b> .\n<http://e.org/a> <http://e.org/p> "open\n'
               '<http://e.org/c> <http://e.org/p> <http://e.org/d> .\n', 2),
    "bad.nq": ('<http://e.org/a> <http://e.org/p> <http://e.org/b> <http://e.org/g> .\n'
               '<http://e.org/a> <http://e.org/p> <http://e.org/b> <http://e.org/g> <x> .\n', 2),
    "bad.ttl": ("@prefix e: <http://e.org/> .\ne:a e:p e:b .\ne:c e:p [ .\n", 3),
    "bad.rdf": ('<?xml version="1.0"?>\n<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">\n'
                '<rdf:Description rdf:about="http://e.org/a">\n</rdf:RDF>\n', 4),
    "bad.json": ('[\n{"type":"item","id":"Q1","labels":{},"claims":{}},\n{"type":"item", "id": \n]\n', 3),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_malformed_input_names_file_and_line_and_keeps_store(tmp_path: Path, name: str) -> None:
    store = tmp_path / "kb"
    ingest([DUMPS / "tiny.nt"], store, progress=False)
    before = count(store)
    version_before = StoreLayout.of(store).current
    text, line = BAD[name]
    bad = tmp_path / name
    bad.write_text(text)
    with pytest.raises(IngestError) as e:
        ingest([bad], store, append=True, progress=False)
    assert e.value.info.file == str(bad)
    assert e.value.info.line == line, str(e.value)
    assert name in str(e.value)
    assert count(store) == before  # the store is as it was
    assert StoreLayout.of(store).current == version_before
    assert not list(store.glob(".building-*"))  # nothing half-written left behind


def test_malformed_input_into_new_store_leaves_no_store(tmp_path: Path) -> None:
    bad = tmp_path / "bad.nt"
    bad.write_text(BAD["bad.nt"][0])
    with pytest.raises(IngestError):
        ingest([bad], tmp_path / "kb", progress=False)
    assert not StoreLayout.of(tmp_path / "kb").exists()


@pytest.mark.parametrize("name", ["bad.nt", "bad.nq", "bad.json"])
def test_skip_bad_lines_counts_and_reports(tmp_path: Path, name: str) -> None:
    bad = tmp_path / name
    bad.write_text(BAD[name][0])
    report = ingest([bad], tmp_path / "kb", skip_bad_lines=True, progress=False)
    src = report.sources[0]
    assert src.skipped == 1
    assert src.skipped_examples[0][0] == BAD[name][1]
    assert count(tmp_path / "kb") == src.triples


def test_skip_bad_lines_refused_for_turtle(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="line-based"):
        ingest([DUMPS / "tiny.ttl"], tmp_path / "kb", skip_bad_lines=True, progress=False)


def test_rerun_same_content_is_a_no_op_even_under_another_name(tmp_path: Path) -> None:
    store = tmp_path / "kb"
    ingest([DUMPS / "tiny.nt"], store, progress=False)
    version = StoreLayout.of(store).current
    again = ingest([DUMPS / "tiny.nt"], store, progress=False)
    assert not again.changed and again.sources[0].status == "unchanged"
    renamed = tmp_path / "renamed-copy.nt"
    shutil.copy(DUMPS / "tiny.nt", renamed)
    third = ingest([renamed], store, progress=False)
    assert not third.changed
    assert StoreLayout.of(store).current == version
    assert count(store) == 11


def test_append_adds_a_new_source_and_refuses_without_flag(tmp_path: Path) -> None:
    store = tmp_path / "kb"
    ingest([DUMPS / "tiny.nt"], store, progress=False)
    with pytest.raises(IngestError, match="--append"):
        ingest([DUMPS / "wikidata-tiny.json"], store, progress=False)
    extra = tmp_path / "extra.nt"
    extra.write_text('<http://example.org/carol> <http://www.w3.org/2000/01/rdf-schema#label> "Carol" .\n'
                     '<http://example.org/carol> <http://example.org/knows> <http://example.org/alice> .\n')
    report = ingest([extra], store, append=True, progress=False)
    assert report.triples_added == 2
    assert count(store) == 13
    mem = labels_of(store)
    assert mem.get(EX + "carol").label == "Carol"
    assert mem.get(EX + "alice").popularity == 3  # one more statement about alice
    assert mem.generation == 2
    assert [r.id for r in mem.iter_rows(since_generation=1)] == [EX + "alice", EX + "knows", EX + "carol"] or \
        {r.id for r in mem.iter_rows(since_generation=1)} >= {EX + "carol"}
    manifest = json.loads(StoreLayout.of(store).manifest_path.read_text())
    assert [s["name"] for s in manifest["sources"]] == ["tiny.nt", "extra.nt"]


LOCK_SCRIPT = """
import sys, time
from kb_dumps.label_memory import LabelMemory
original = LabelMemory.fill_missing_labels
def slow(self, *args):
    time.sleep(float(sys.argv[3]))  # hold the lock long enough for the second writer to try
    return original(self, *args)
LabelMemory.fill_missing_labels = slow
if __name__ == "__main__":
    from kbqa.cli import main
    sys.exit(main(["ingest", sys.argv[1], "--store", sys.argv[2], "--no-progress"]))
"""


def test_lock_keeps_a_second_writer_out(tmp_path: Path) -> None:
    """Two real processes: the second fails cleanly while the first writes; the store ends whole."""
    script = tmp_path / "slow_ingest.py"
    script.write_text(LOCK_SCRIPT)
    store = tmp_path / "kb"
    first = subprocess.Popen([sys.executable, str(script), str(DUMPS / "tiny.nt"), str(store), "4"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not list(store.glob(".building-*")) and time.time() < deadline:
        time.sleep(0.05)
    assert list(store.glob(".building-*")), "the first writer never started"
    second = subprocess.run([sys.executable, "-m", "kbqa.cli", "ingest", str(DUMPS / "tiny.ttl"), "--store", str(store),
                             "--no-progress"], capture_output=True, text=True, timeout=120)
    assert second.returncode == 4
    assert "being written by another process" in second.stderr
    assert "Traceback" not in second.stderr
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert count(store) == 11


def test_lock_error_is_a_store_error(tmp_path: Path) -> None:
    from kb_dumps.ingest import store_lock

    with store_lock(tmp_path / "kb"):
        with pytest.raises(StoreError, match="another process"):
            with store_lock(tmp_path / "kb"):
                pass


def test_missing_source_is_a_clear_error(tmp_path: Path, run_cli) -> None:  # noqa: ANN001
    code, out, err = run_cli("ingest", tmp_path / "nope.nt", "--store", tmp_path / "kb")
    assert code == 3
    assert "nope.nt" in err and "no such file" in err
    assert "Traceback" not in err


def test_cli_ingest_and_rerun(tmp_path: Path, run_cli) -> None:  # noqa: ANN001
    code, out, err = run_cli("ingest", DUMPS / "tiny.nt", "--store", tmp_path / "kb")
    assert code == 0 and "11 triples" in out
    code, out, err = run_cli("ingest", DUMPS / "tiny.nt", "--store", tmp_path / "kb", "--format", "json")
    assert code == 0 and json.loads(out)["changed"] is False


NO_DOT = ('<http://e.org/a> <http://e.org/p> "ok" .\n<http://e.org/a> <http://e.org/p> "x"\n'
          '<http://e.org/c> <http://e.org/p> "y" .\n')


@pytest.mark.parametrize("profile", [None, "generic"])  # None: the profile is detected (a second reader)
@pytest.mark.parametrize("text, words", [
    (NO_DOT, "Triples must be followed by a dot"),
    (NO_DOT.rstrip("\n").rsplit("\n", 1)[0], "Triples must be followed by a dot"),  # the bad line is the last one
    ('<http://e.org/a> <http://e.org/p> "ok" .\n<http://e.org/a> <http://e.org/p> <http://e.org/b',
     "the line ends inside a triple"),
])
def test_a_bad_ntriples_line_is_reported_at_its_own_line(tmp_path: Path, text: str, words: str,
                                                         profile: str | None) -> None:
    """Issue 15: a line left without its dot was reported at the next line, as "Unexpected end of file", or
    as a traceback (the profile detector's re-parse)."""
    bad = tmp_path / "bad.nt"
    bad.write_text(text)
    with pytest.raises(IngestError) as e:
        ingest([bad], tmp_path / "kb", profile=profile, progress=False)
    assert e.value.info.line == 2 and words in e.value.info.message, str(e.value)
    skipped = ingest([bad], tmp_path / "kb2", profile=profile, skip_bad_lines=True, progress=False)
    assert skipped.sources[0].skipped_examples[0][0] == 2 and skipped.triples_added == len(
        text.splitlines()) - 1


def test_triples_already_present_are_not_counted_as_added(tmp_path: Path, run_cli) -> None:
    store = tmp_path / "kb"
    ingest([DUMPS / "tiny.nt"], store, progress=False)
    overlap = tmp_path / "overlap.nt"  # two triples of tiny.nt and one new one
    overlap.write_text("".join((DUMPS / "tiny.nt").read_text().splitlines(keepends=True)[:2])
                       + '<http://example.org/zed> <http://example.org/knows> <http://example.org/alice> .\n')
    report = ingest([overlap], store, append=True, progress=False)
    assert (report.triples_added, report.triples_present) == (1, 2) and count(store) == 12
    assert json.loads((StoreLayout.of(store).current / "manifest.json").read_text())["triples"] == 12
    again = tmp_path / "again.nt"
    again.write_text(overlap.read_text() + "\n")  # same triples, other bytes: read again, nothing new
    code, out, _ = run_cli("ingest", again, "--store", store, "--append", "--no-progress")
    assert code == 0 and "0 triples added (3 read were already present)" in out, out
