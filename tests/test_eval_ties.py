"""Gold answers a `ORDER BY … LIMIT 1` query could equally have given (eval/ties.py), on real pyoxigraph stores:
a first place shared by several rows gives each of them as a gold answer; a first place held alone, a recorded row
that is not among the tied ones, a key that cannot be read back, and other query forms give none. Then the train
labelling (`label_candidates` with the gold query) scores a candidate that keeps another tied row as right."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyoxigraph as ox
import pytest

from eval.ties import order_keys, tied_answers
from kb_dumps.json_types import JsonObject
from kb_dumps.results import sparql_json
from kb_dumps.store import run_query

NS = "http://example.org/town/"
TOWN = f"""@prefix t: <{NS}person#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
<{NS}person> a rdfs:Class ; rdfs:label "person" .
<{NS}person/1> a <{NS}person> ; t:name "Nadia Ferro" ; t:city "Avonlea" ; t:age 61 .
<{NS}person/2> a <{NS}person> ; t:name "Owen Dale" ; t:city "Avonlea" ; t:age 34 .
<{NS}person/3> a <{NS}person> ; t:name "Priya Lund" ; t:city "Brightwater" ; t:age 61 .
<{NS}person/4> a <{NS}person> ; t:name "Quentin Hale" ; t:city "Brightwater" ; t:age 27 .
<{NS}person/5> a <{NS}person> ; t:name "Rosa Imrie" ; t:city "Calder" ; t:age 45 .
"""
PREFIX = f"PREFIX t: <{NS}person#>\n"
MOST_COMMON_CITY = PREFIX + (f"SELECT ?city (COUNT(*) AS ?n) WHERE {{ ?p a <{NS}person> ; t:city ?city }} "
                             "GROUP BY ?city ORDER BY DESC(?n) LIMIT 1")
OLDEST_NAME = PREFIX + f"SELECT ?name WHERE {{ ?p a <{NS}person> ; t:name ?name ; t:age ?age }} ORDER BY DESC(?age) LIMIT 1"


@pytest.fixture(scope="module")
def run() -> Callable[[str], JsonObject]:
    store = ox.Store()
    store.load(TOWN.encode(), ox.RdfFormat.TURTLE)
    return lambda q: sparql_json(run_query(store, q, row_cap=1000))


def _values(answers: list[JsonObject], var: str) -> set[str]:
    return {a["results"]["bindings"][0][var]["value"] for a in answers}


def test_a_shared_first_place_gives_each_tied_row(run: Callable[[str], JsonObject]) -> None:
    recorded = run(MOST_COMMON_CITY)
    tied = tied_answers(MOST_COMMON_CITY, recorded, run)
    assert _values(tied, "city") == {"Avonlea", "Brightwater"}  # two people each; Calder (one) is not tied
    assert all(a["head"]["vars"] == ["city", "n"] and a["results"]["bindings"][0]["n"]["value"] == "2" for a in tied)


def test_results_in_the_store_and_record_shapes_are_read(run: Callable[[str], JsonObject]) -> None:
    # a record's gold_result() / QueryResult.to_dict() shape for the recorded answer and for what `run` returns
    store = ox.Store()
    store.load(TOWN.encode(), ox.RdfFormat.TURTLE)
    recorded = run_query(store, MOST_COMMON_CITY, row_cap=10).to_dict()
    assert set(recorded) >= {"kind", "vars", "rows"}
    tied = tied_answers(MOST_COMMON_CITY, recorded, lambda q: run_query(store, q, row_cap=1000))
    assert _values(tied, "city") == {"Avonlea", "Brightwater"}


def test_a_key_the_query_does_not_project_is_read_and_left_out(run: Callable[[str], JsonObject]) -> None:
    # the oldest person: two are 61; the key (?age) is not projected, so it is added to read the tie, then dropped
    tied = tied_answers(OLDEST_NAME, run(OLDEST_NAME), run)
    assert _values(tied, "name") == {"Nadia Ferro", "Priya Lund"}
    assert all(set(a["results"]["bindings"][0]) == {"name"} for a in tied)


def test_a_first_place_held_alone_gives_nothing(run: Callable[[str], JsonObject]) -> None:
    youngest = OLDEST_NAME.replace("DESC(?age)", "ASC(?age)")
    assert tied_answers(youngest, run(youngest), run) == []


def test_a_recorded_row_outside_the_tie_gives_nothing(run: Callable[[str], JsonObject]) -> None:
    # an answer made on other data (a row the store does not put first) is not widened
    calder = {"head": {"vars": ["city", "n"]}, "results": {"bindings": [
        {"city": {"type": "literal", "value": "Calder"},
         "n": {"type": "literal", "value": "1", "datatype": "http://www.w3.org/2001/XMLSchema#integer"}}]}}
    assert tied_answers(MOST_COMMON_CITY, calder, run) == []


@pytest.mark.parametrize("query", [
    MOST_COMMON_CITY.replace("LIMIT 1", "LIMIT 2"),                    # not a single first place
    MOST_COMMON_CITY.replace("ORDER BY DESC(?n) ", ""),                # no order
    MOST_COMMON_CITY.replace("DESC(?n)", "DESC(COUNT(?p))"),          # an aggregate inside ORDER BY
    OLDEST_NAME.replace("DESC(?age)", "DESC(?age + 1)"),               # an expression
])
def test_other_query_forms_give_nothing(run: Callable[[str], JsonObject], query: str) -> None:
    assert order_keys(query) is None
    assert tied_answers(query, {"head": {"vars": ["city", "n"]}, "results": {"bindings": [{}]}}, run) == []


def test_a_key_missing_from_a_grouped_projection_gives_nothing(run: Callable[[str], JsonObject]) -> None:
    # ?n is ordered on but not projected, and the query groups: the key cannot be added to the projection
    query = PREFIX + (f"SELECT ?city WHERE {{ ?p a <{NS}person> ; t:city ?city }} GROUP BY ?city "
                      "ORDER BY DESC(?n) LIMIT 1")
    recorded = {"head": {"vars": ["city"]}, "results": {"bindings": [{"city": {"type": "literal", "value": "Avonlea"}}]}}
    assert tied_answers(query, recorded, run) == []


def test_train_labels_accept_another_tied_row(ingest_turtle: Callable[[str, str], Path]) -> None:
    """A candidate keeping the other tied city is wrong against the recorded row alone and right with the gold query
    given (the label the explore ranker is fitted on)."""
    from kbqa.training.ranker_data import label_candidates, result_json
    from kbqa.training.train_kgs import TrainQuestion
    from kbqa.translators.explore import ExploreTranslator

    tr = ExploreTranslator(ingest_turtle(TOWN, "town"), fallback="never", budget_s=30.0)
    try:
        first = result_json(tr.store.query(MOST_COMMON_CITY))["results"]["bindings"][0]
        other = next(a for a in tied_answers(MOST_COMMON_CITY, {"head": {"vars": ["city", "n"]},
                                                                "results": {"bindings": [first]}},
                                             lambda q: result_json(tr.store.query(q)))
                     if a["results"]["bindings"][0]["city"] != first["city"])
        q = TrainQuestion("town-1", "town", "Which city do the most people live in?", "", other)
        strict = label_candidates(tr, q)
        tied = label_candidates(tr, q, MOST_COMMON_CITY)
    finally:
        tr.close()
    assert tied["tied"] == 2 and "tied" not in strict
    assert len(strict["candidates"]) == len(tied["candidates"])
    gained = [(a["f1"], b["f1"]) for a, b in zip(strict["candidates"], tied["candidates"], strict=True)
              if a["f1"] != b["f1"]]
    assert gained and all(b > a for a, b in gained)  # labels only rise, and some candidate rises
    assert max(c["f1"] for c in tied["candidates"]) == 1.0 > max(c["f1"] for c in strict["candidates"])


def test_eval_reports_a_tied_gold_beside_accuracy(ingest_turtle: Callable[[str, str], Path], tmp_path: Path) -> None:
    """`kbqa eval`'s runner on a real store: a prediction keeping the other tied row is wrong (accuracy unchanged)
    and right with ties accepted; the results line, the summary and report.md say so; a question without ties and
    a wrong answer on a tied question are told apart."""
    from eval.loaders_formats import make_record
    from eval.runner import Prediction, read_results, run_eval
    from kb_dumps.store import LocalStore

    with LocalStore(ingest_turtle(TOWN, "town_eval"), timeout_s=20) as store:
        rows = store.query(MOST_COMMON_CITY.replace("LIMIT 1", "")).rows
        other = next(r for r in rows[1:] if r[1] == rows[0][1])  # tied with the first, not the engine's first
        oldest = OLDEST_NAME.replace("DESC(?age)", "ASC(?age)")  # the youngest: no tie
        records = [
            make_record("tied", {"en": "Which city do the most people live in?"}, MOST_COMMON_CITY, kb="generic",
                        dataset="town", answers=[other], answer_vars=["city", "n"]),
            make_record("tied-wrong", {"en": "Which city do the fewest people live in?"}, MOST_COMMON_CITY,
                        kb="generic", dataset="town", answers=[other], answer_vars=["city", "n"]),
            make_record("plain", {"en": "Who is the youngest?"}, oldest, kb="generic", dataset="town",
                        answers=[[{"type": "literal", "value": "Quentin Hale"}]], answer_vars=["name"]),
        ]
        fewest = MOST_COMMON_CITY.replace("DESC(?n)", "ASC(?n)")
        preds = {"tied": Prediction(sparql=MOST_COMMON_CITY), "tied-wrong": Prediction(sparql=fewest),
                 "plain": Prediction(sparql=oldest)}
        summary = run_eval(records, lambda r: preds[r.id], out_dir=tmp_path, store=store, progress=False)
    lines = {d["id"]: d for d in read_results(tmp_path / "results.jsonl")}
    assert (lines["tied"]["correct"], lines["tied"]["correct_ties_accepted"], lines["tied"]["gold_tied"]) == \
        (False, True, 2)
    assert (lines["tied-wrong"]["correct"], lines["tied-wrong"]["correct_ties_accepted"]) == (False, False)
    assert lines["tied-wrong"]["gold_tied"] == 2
    assert (lines["plain"]["correct"], lines["plain"]["correct_ties_accepted"], lines["plain"]["gold_tied"]) == \
        (True, True, None)
    assert summary.gold_tied == 2 and summary.accuracy == pytest.approx(1 / 3)
    assert summary.accuracy_ties_accepted == pytest.approx(2 / 3)
    for report in ("report.md", "report.html"):
        assert "2 gold answers are one row of several tied" in (tmp_path / report).read_text(encoding="utf-8")


def test_kbqa_eval_prints_the_ties_line(ingest_turtle: Callable[[str, str], Path], tmp_path: Path) -> None:
    """The real CLI on a QALD file written for the test: the text summary names the tied gold and the accuracy
    with ties accepted; an escaped `#` in a prefixed name draws no rdflib warning."""
    import json
    import os
    import subprocess
    import sys

    from kb_dumps.store import LocalStore

    store = ingest_turtle(TOWN, "town_cli")
    with LocalStore(store, timeout_s=20) as s:
        rows = s.query(MOST_COMMON_CITY.replace("LIMIT 1", "")).rows
    other = next(r for r in rows[1:] if r[1] == rows[0][1])
    gold = {"head": {"vars": ["city", "n"]}, "results": {"bindings": [{"city": other[0], "n": other[1]}]}}
    escaped = MOST_COMMON_CITY.replace("PREFIX t: <http://example.org/town/person#>",
                                       "PREFIX t: <http://example.org/town/>").replace("t:city", "t:person\\#city")
    bench = tmp_path / "town.json"
    bench.write_text(json.dumps({"dataset": {"id": "town"}, "questions": [
        {"id": "1", "question": [{"language": "en", "string": "Which city do the most people live in?"}],
         "query": {"sparql": escaped}, "answers": [gold]}]}), encoding="utf-8")
    preds = tmp_path / "preds.jsonl"
    preds.write_text(json.dumps({"id": "1", "sparql": MOST_COMMON_CITY}) + "\n", encoding="utf-8")
    # a process of its own: rdflib's logging goes to that process's stderr as a user sees it
    done = subprocess.run([sys.executable, "-m", "kbqa.cli", "eval", str(bench), "--predictions", str(preds),
                           "--store", str(store), "--out", str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    out, err = done.stdout, done.stderr
    assert done.returncode == 0, err
    assert "0 fully correct" in out
    assert "ties       1 gold answer(s) one row of several tied" in out and "counting any tied row 100.0%" in out
    assert "does not look like a valid URI" not in out + err
