"""Benchmark loaders on the real files bundled in eval/benchmarks, and on malformed fixtures."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyoxigraph
import pytest

from eval.loaders import (
    BENCHMARK_DIR,
    BENCHMARKS,
    FORMATS,
    detect_format,
    list_benchmarks,
    load,
    load_benchmark,
)
from eval.loaders_sparql import prepare_gold_sparql
from eval.records import Record
from kb_dumps.stage_errors import KBQAError

FIX = Path(__file__).parent / "fixtures" / "eval"

# name -> (records, usable records), counted on the files copied by scripts/copy_benchmarks.py.
EXPECTED = {
    "lcquad2-dev": (1067, 1054),  # 13 have no question text ("n/a", "na", None)
    "wwq-dev": (454, 454),
    "wwq-train": (2431, 2431),  # 10 use SERVICE wikibase:label, rewritten
    "wwq-train-alignments": (2431, 2431),
    "qald7-train": (100, 100),
    "qald9plus-train": (371, 370),  # id 202 uses `:a` with no default prefix
    "rubq1-dev": (300, 300),
    "rubq2-dev": (580, 580),
    "simplequestions-valid": (2821, 2821),
    "simplequestions-valid-all": (4867, 4867),
    "simplequestions-train": (19481, 19481),
    "bestiary": (100, 100),
    "grailqa-sample": (1000, 1000),
    "spider4sparql-battle_death": (16, 16),
    "spider4sparql-car_1": (91, 91),
    "spider4sparql-concert_singer": (43, 43),
    "spider4sparql-employee_hire_evaluation": (36, 36),
    "spider4sparql-pets_1": (41, 41),
    "spider4sparql-poker_player": (40, 40),
    "spider4sparql-train": (8659, 8283),  # 376 gold queries rdflib cannot parse (most: `ORDER` where it expects the end)
}

_CACHE: dict[str, list[Record]] = {}


def records(name: str) -> list[Record]:
    if name not in _CACHE:
        _CACHE[name] = load_benchmark(name, check_syntax=name not in TEXT_LEVEL_ONLY)
    return _CACHE[name]


def test_registry_files_exist_and_are_gzip():
    assert set(BENCHMARKS) == set(EXPECTED)
    for rel, fmt, _ in BENCHMARKS.values():
        path = BENCHMARK_DIR / rel
        assert path.is_file(), f"{path} missing: run scripts/copy_benchmarks.py"
        assert path.read_bytes()[:2] == b"\x1f\x8b"
        assert fmt in FORMATS


# Train files too slow to parse in full with rdflib in CI (spider4sparql-train: ~3 min; grailqa-sample's long Freebase
# queries and the two WWQ train files ~1 min each under load): counted at text level in full, and with the syntax
# check on their first records. The dev sets (lcquad2-dev, wwq-dev, ...) stay parsed in full.
TEXT_LEVEL_ONLY = {
    "spider4sparql-train": ((8659, 8659), 400, 389),
    "grailqa-sample": ((1000, 1000), 300, 300),
    "wwq-train": ((2431, 2431), 300, 300),
    "wwq-train-alignments": ((2431, 2431), 300, 300),
}


@pytest.mark.slow  # every benchmark file parsed in full: CI runs it, `make test-fast` does not
@pytest.mark.parametrize("name", sorted(set(EXPECTED) - set(TEXT_LEVEL_ONLY)))
def test_real_benchmark_counts(name):
    recs = records(name)
    usable = sum(r.usable for r in recs)
    print(f"{name}: {len(recs)} records, {usable} usable")
    assert (len(recs), usable) == EXPECTED[name]
    for r in recs:
        assert r.usable or r.reason, f"{r.id} unusable without a reason"
        assert r.dataset == name
        if r.usable:
            assert r.question and (r.sparql or r.has_gold_answers)
    assert detect_format(BENCHMARK_DIR / BENCHMARKS[name][0]) == BENCHMARKS[name][1]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TEXT_LEVEL_ONLY))
def test_bank_source_counts(name):
    (count, text_usable), first, first_usable = TEXT_LEVEL_ONLY[name]
    recs = load_benchmark(name, check_syntax=False)
    assert (len(recs), sum(r.usable for r in recs)) == (count, text_usable)
    assert all(r.dataset == name and r.question and r.sparql for r in recs)
    checked = load_benchmark(name, limit=first)
    assert (len(checked), sum(r.usable for r in checked)) == (first, first_usable)
    assert all(r.usable or r.reason for r in checked)
    assert len(recs) >= EXPECTED[name][1] >= first_usable  # the full syntax-checked count stays in EXPECTED


@pytest.mark.slow
def test_list_benchmarks_reports_every_set():
    infos = {b.name: b for b in list_benchmarks(check_syntax=False)}
    assert set(infos) == set(EXPECTED)
    for name, info in infos.items():
        assert info.error is None
        assert info.count == EXPECTED[name][0]
        # Without the syntax check only text-level problems make a record unusable.
        assert EXPECTED[name][1] <= info.usable <= info.count
    assert infos["lcquad2-dev"].usable == 1054
    assert json.loads(json.dumps(infos["wwq-dev"].to_dict()))["count"] == 454


def test_lcquad2_records():
    recs = {r.id: r for r in records("lcquad2-dev")}
    r = recs["808"]
    with gzip.open(BENCHMARK_DIR / "lcquad2" / "dev.json.gz", "rt", encoding="utf-8") as f:
        raw = next(x for x in json.load(f) if str(x["uid"]) == "808")  # read, not typed: a dev question
    assert r.questions["en"] == raw["question"] and r.questions["en"].startswith("Was ")
    assert r.sparql.startswith("PREFIX wd: <http://www.wikidata.org/entity/>")  # prefixes added
    assert "ASK WHERE" in r.sparql and r.meta["intermediate_sparql"].startswith("ASK")
    assert r.answers is None  # LC-QuAD gives no answers: the gold query must run
    unusable = recs["6036"]
    assert not unusable.usable and "no question text" in unusable.reason
    assert unusable.sparql  # kept, counted, not dropped


def test_qald7_multirow_and_boolean_answers():
    recs = {r.id: r for r in records("qald7-train")}
    assert recs["1"].answer_vars == ["uri"]
    assert recs["1"].answers == [[{"type": "uri", "value": "http://www.wikidata.org/entity/Q4175282"}]]
    assert recs["2"].boolean is True and recs["2"].gold_result()["kind"] == "ask"
    assert recs["14"].answers[0][0]["datatype"].endswith("#dateTime")
    assert all(r.meta["kb"] == "wikidata" for r in recs.values())


def test_qald9plus_unparseable_gold_is_unusable_with_reason():
    bad = [r for r in records("qald9plus-train") if not r.usable]
    assert [r.id for r in bad] == ["202"]
    assert "does not parse" in bad[0].reason


def test_wwq_dev_gold_bindings_keep_columns():
    recs = records("wwq-dev")
    multi = [r for r in recs if len(r.answer_vars) == 2]
    assert multi, "WikiWebQuestions dev has two-column gold results"
    r = multi[0]
    assert r.answer_vars == ["x", "y"] and all(len(row) == 2 for row in r.answers)
    assert recs[0].answers == [[{"type": "uri", "value": "http://www.wikidata.org/entity/Q512187"}]]


def test_wwq_train_label_service_rewritten_not_dropped():
    rewritten = [r for r in records("wwq-train") if "sparql_notes" in r.meta and "SERVICE" in r.meta["original_sparql"]]
    assert len(rewritten) == 10
    for r in rewritten:
        assert r.usable and "SERVICE" not in r.sparql and "bd:" not in r.sparql
        assert 'FILTER(LANG(?x) = "en")' in r.sparql


def test_wwq_alignments_entities_and_named_sparql():
    r = records("wwq-train-alignments")[0]
    assert r.questions["en"] == "what is the name of justin bieber brother?"
    assert r.meta["entities"] == {"Justin Bieber": "Q34086"}
    assert "wdt:sibling" in r.meta["sparql_with_names"]


def test_rubq_languages_and_no_answer_questions():
    recs = records("rubq2-dev")
    r = recs[0]
    assert set(r.questions) == {"ru", "en"} and r.question.startswith("Which country")
    no_answer = [r for r in recs if r.meta.get("no_answer")]
    assert len(no_answer) == 100
    assert all(r.usable and r.sparql is None and r.answers == [] for r in no_answer)
    assert "wd_names" not in r.answers[0][0]  # only SPARQL-JSON keys kept


def test_simplequestions_inverse_property():
    recs = records("simplequestions-valid")
    direct, inverse = recs[0], recs[1]
    assert direct.sparql.endswith("{ <http://www.wikidata.org/entity/Q318926> "
                                  "<http://www.wikidata.org/prop/direct/P19> ?x . }")
    assert inverse.meta["inverse"] and inverse.meta["property"] == "P57"
    assert "?x <http://www.wikidata.org/prop/direct/P57> <http://www.wikidata.org/entity/Q2568216>" in inverse.sparql
    assert inverse.answers == [[{"type": "uri", "value": "http://www.wikidata.org/entity/Q14949730"}]]
    assert inverse.id == "valid_answerable-2"


def test_grailqa_and_bestiary_kbs():
    g = records("grailqa-sample")[0]
    assert g.meta["kb"] == "freebase" and g.answer_vars == ["value"]
    assert g.answers == [[{"type": "uri", "value": "http://rdf.freebase.com/ns/m.0yrltsn"}]]
    values = [r for r in records("grailqa-sample") if r.answers and r.answers[0][0]["type"] == "literal"]
    assert len(values) == 3
    b = records("bestiary")
    assert all(r.meta["kb"] == "generic" for r in b)
    assert sum(r.boolean is not None for r in b) == 31


def test_cwq_style_freebase_file(tmp_path):
    recs = load(FIX / "cwq_sample.json")
    assert recs[0].meta["format"] == "grailqa" and recs[0].meta["compositionality_type"] == "conjunction"
    assert recs[0].answers[1] == [{"type": "uri", "value": "http://rdf.freebase.com/ns/m.01xvjb"}]
    assert recs[1].answers == [[{"type": "literal", "value": "1.83"}]]
    assert not recs[1].usable and recs[1].reason == "no question text in the file"
    assert recs[1].sparql.startswith("PREFIX ns: <http://rdf.freebase.com/ns/>")


def test_gz_read_transparently_and_format_forced(tmp_path):
    src = (FIX / "cwq_sample.json").read_bytes()
    gz = tmp_path / "cwq.json.gz"
    gz.write_bytes(gzip.compress(src))
    assert [r.id for r in load(gz)] == [r.id for r in load(FIX / "cwq_sample.json", fmt="grailqa")]
    with pytest.raises(KBQAError, match="unknown dataset format"):
        load(gz, fmt="nope")


def test_label_service_fixture():
    recs = {r.id: r for r in load(FIX / "label_service_wwq.json")}
    manual, auto, around, hint = recs["LS-1"], recs["LS-2"], recs["LS-3"], recs["LS-4"]
    assert manual.usable and "<http://schema.org/description> ?x" in manual.sparql
    assert auto.usable
    assert 'OPTIONAL { ?item <http://www.w3.org/2000/01/rdf-schema#label> ?itemLabel FILTER(LANG(?itemLabel) = "en") }' \
        in auto.sparql
    assert not around.usable and "wikibase:around" in around.reason
    assert not hint.usable and "hint:Prior" in hint.reason


def test_rewritten_label_queries_run_offline_on_pyoxigraph():
    recs = {r.id: r for r in load(FIX / "label_service_wwq.json")}
    store = pyoxigraph.Store()
    wd = "http://www.wikidata.org/entity/"
    store.add(pyoxigraph.Quad(pyoxigraph.NamedNode(wd + "Q1299"), pyoxigraph.NamedNode("http://schema.org/description"),
                              pyoxigraph.Literal("English rock band", language="en")))
    store.add(pyoxigraph.Quad(pyoxigraph.NamedNode(wd + "Q42"),
                              pyoxigraph.NamedNode("http://www.wikidata.org/prop/direct/P31"),
                              pyoxigraph.NamedNode(wd + "Q5")))
    rows = list(store.query(recs["LS-1"].sparql))
    assert [str(r["x"].value) for r in rows] == ["English rock band"]
    rows = list(store.query(recs["LS-2"].sparql))
    assert [r["item"].value for r in rows] == [wd + "Q42"] and rows[0]["itemLabel"] is None


@pytest.mark.parametrize("fixture, qid, line, message", [
    ("malformed_qald.json", "7", None, "'language' and 'string'"),
    ("malformed_lcquad2.json", "42", None, "sparql_wikidata"),
    ("malformed_wwq.json", "WebQTest-1", None, "'results' must be a list"),
    ("malformed_rubq.json", "9", None, "'answers' must be a list of terms"),
    ("malformed_grailqa.json", "101", None, "answer_argument"),
    ("malformed_simplequestions.txt", "malformed_simplequestions-3", 3, "expected 4 tab-separated fields"),
])
def test_malformed_file_names_file_and_record(fixture, qid, line, message):
    with pytest.raises(KBQAError) as exc:
        load(FIX / fixture)
    info = exc.value.info
    assert info.stage == "parse" and info.qid == qid and info.line == line
    assert info.file.endswith(fixture) and message in info.message
    assert fixture in str(exc.value) and f"record {qid}" in str(exc.value)


def test_invalid_json_names_the_line():
    with pytest.raises(KBQAError) as exc:
        load(FIX / "broken.json")
    assert exc.value.info.stage == "parse" and exc.value.info.line == 2
    assert "not valid JSON" in str(exc.value)


def test_unknown_format_and_missing_file(tmp_path):
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps([{"foo": 1}]))
    with pytest.raises(KBQAError, match="--dataset-format"):
        detect_format(odd)
    with pytest.raises(KBQAError, match="neither a known benchmark"):
        load_benchmark(tmp_path / "missing.json")


def test_record_round_trip():
    for name in ("wwq-dev", "qald7-train", "rubq2-dev"):
        for r in records(name)[:20]:
            assert Record.from_dict(json.loads(json.dumps(r.to_dict()))) == r


def test_prepare_keeps_declared_prefixes_and_adds_missing_ones():
    p = prepare_gold_sparql("PREFIX wd: <http://example.org/> SELECT ?x WHERE { wd:Q1 wdt:P31 ?x }")
    assert p.reason is None and p.sparql.count("PREFIX wd:") == 1 and "PREFIX wdt:" in p.sparql
    assert prepare_gold_sparql(None).sparql is None
    rubq_psn = prepare_gold_sparql("SELECT ?a WHERE { ?a p:P2046/psn:P2046/wikibase:quantityAmount ?sq }")
    assert rubq_psn.reason is None and "PREFIX psn:" in rubq_psn.sparql


def test_wwq_accepts_spinach_question_records_and_names_a_missing_field(tmp_path: Path) -> None:
    """Issue 15: SPINACH's copy of WikiWebQuestions ({id, question, sparql}) read as "no question text"."""
    spinach = tmp_path / "spinach_wwq.json"
    spinach.write_text(json.dumps([{"id": "WebQTest-1", "question": "what is the capital of france?",
                                    "sparql": "SELECT ?x WHERE { wd:Q142 wdt:P36 ?x }"}]))
    [rec] = load(spinach, "wwq")
    assert rec.usable and rec.questions == {"en": "what is the capital of france?"}
    nothing = tmp_path / "no_text.json"
    nothing.write_text(json.dumps([{"id": "q9", "text": "?", "sparql": "ASK {}"}]))
    with pytest.raises(KBQAError, match=r"record q9: .*'utterance', 'question' or 'input'; this one has only "
                                        r"id, sparql, text"):
        load(nothing, "wwq")


def _qald_file(tmp_path: Path, dataset: object) -> Path:
    path = tmp_path / "qald_x.json"
    question = {"id": "1", "question": [{"language": "en", "string": "Who is Q42?"}],
                "query": {"sparql": "SELECT ?x WHERE { ?x <http://x/p> <http://x/o> }"},
                "answers": [{"head": {"vars": ["x"]}, "results": {"bindings": []}}]}
    path.write_text(json.dumps({"dataset": dataset, "questions": [question]}), encoding="utf-8")
    return path


def test_qald_dataset_as_a_string_id_is_read(tmp_path):  # issue 24: was an AttributeError (stage internal)
    (rec,) = load(_qald_file(tmp_path, "qald-9-test-multilingual"), fmt="qald")
    assert rec.meta["dataset_id"] == "qald-9-test-multilingual" and rec.questions["en"] == "Who is Q42?"
    (rec,) = load(_qald_file(tmp_path, {"id": "qald-9-train"}), fmt="qald")
    assert rec.meta["dataset_id"] == "qald-9-train"


@pytest.mark.parametrize("dataset, words", [(5, "'dataset' must be an object"), ([1], "not list"),
                                            ({"id": [1]}, "'id' must be a string")])
def test_qald_bad_dataset_field_names_file_and_field(tmp_path, dataset, words):
    with pytest.raises(KBQAError) as exc:
        load(_qald_file(tmp_path, dataset), fmt="qald")
    assert exc.value.info.stage == "parse" and exc.value.info.file.endswith("qald_x.json")
    assert words in exc.value.info.message
