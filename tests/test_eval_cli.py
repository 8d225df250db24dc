"""`kbqa eval` end to end: a predictions file on wikidata-mini, resume, refused mixes, malformed files, exit codes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

FIX = Path(__file__).parent / "fixtures" / "eval_runner"
SQ = FIX / "sq_valid_20.txt"
PREDS = FIX / "sq_predictions.jsonl"


def test_predictions_run_resume_and_refused_mix(run_cli, wikidata_mini_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    code, stdout, stderr = run_cli("eval", SQ, "--predictions", PREDS, "--store", wikidata_mini_store, "--out", out,
                                   "--limit", 12)
    assert code == 0, stderr
    assert "12 question(s), 12 usable, 8 fully correct" in stdout and "12 computed now, 0 resumed" in stdout
    assert "wrong-answer 4" in stdout and str(out / "report.html") in stdout

    code, stdout, stderr = run_cli("eval", SQ, "--predictions", PREDS, "--store", wikidata_mini_store, "--out", out,
                                   "--format", "json")
    assert code == 0, stderr
    summary = json.loads(stdout)
    assert summary["n_records"] == 20 and summary["n_new"] == 8 and summary["correct"] == 8
    assert summary["answer"]["strict"]["f1"] == pytest.approx(0.4)
    assert summary["settings"]["mode"] == "predictions" and summary["settings"]["store"]
    lines = (out / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 20 and {json.loads(x)["id"] for x in lines} == {f"sq_valid_20-{i}" for i in range(1, 21)}

    # Other predictions into the same folder: refused, nothing mixed; --restart starts over.
    changed = tmp_path / "sq_predictions.jsonl"
    changed.write_text(PREDS.read_text(encoding="utf-8").replace("wd:Q2275923", "wd:Q318926"), encoding="utf-8")
    code, stdout, stderr = run_cli("eval", SQ, "--predictions", changed, "--store", wikidata_mini_store, "--out", out)
    assert code == 2
    assert "settings differ" in stderr and "predictions_sha256" in stderr and "--restart" in stderr
    assert len((out / "results.jsonl").read_text(encoding="utf-8").splitlines()) == 20
    code, stdout, stderr = run_cli("eval", SQ, "--predictions", changed, "--store", wikidata_mini_store, "--out", out,
                                   "--restart", "--limit", 3)
    assert code == 0, stderr
    assert "3 computed now, 0 resumed" in stdout


def test_without_store_query_level_only(run_cli, tmp_path: Path) -> None:
    code, stdout, stderr = run_cli("eval", SQ, "--predictions", PREDS, "--out", tmp_path / "q", "--jobs", 2)
    assert code == 0, stderr
    assert "7 fully correct" in stdout and "answer F1" not in stdout and "exact match 35.0" in stdout


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "preds.jsonl"
    p.write_text(text, encoding="utf-8")
    return p


def test_malformed_predictions_name_the_line(run_cli, tmp_path: Path) -> None:
    good = '{"id": "sq_valid_20-1", "sparql": "SELECT ?x WHERE { wd:Q318926 wdt:P19 ?x }"}\n'
    p = write(tmp_path, good + "\n" + '{"id": "sq_valid_20-2", "sparql": \n')
    code, _, stderr = run_cli("eval", SQ, "--predictions", p, "--out", tmp_path / "o")
    assert code == 3 and f"{p}:3" in stderr and "not a JSON object" in stderr
    p = write(tmp_path, good + '{"sparql": "SELECT * {}"}\n')
    code, _, stderr = run_cli("eval", SQ, "--predictions", p, "--out", tmp_path / "o")
    assert code == 3 and f"{p}:2" in stderr and 'without "id"' in stderr
    p = write(tmp_path, good + good)
    code, _, stderr = run_cli("eval", SQ, "--predictions", p, "--out", tmp_path / "o")
    assert code == 3 and "duplicate prediction id" in stderr
    p = write(tmp_path, '{"id": "nope-1", "sparql": "SELECT * {}"}\n')
    code, _, stderr = run_cli("eval", SQ, "--predictions", p, "--out", tmp_path / "o")
    assert code == 3 and "no prediction id matches" in stderr and "'sq_valid_20-1'" in stderr
    code, _, stderr = run_cli("eval", SQ, "--predictions", tmp_path / "missing.jsonl", "--out", tmp_path / "o")
    assert code != 0 and "predictions file not found" in stderr
    assert not (tmp_path / "o" / "results.jsonl").exists()


def test_benchmark_path_with_explicit_format_and_usage_errors(run_cli, tmp_path: Path) -> None:
    copy = tmp_path / "my_questions.data"
    shutil.copy(FIX / "qald_gold_answers.json", copy)
    p = write(tmp_path, '{"id": "1", "sparql": "SELECT ?x WHERE { wd:Q318926 wdt:P19 ?x }", '
                        '"answers": [{"type": "uri", "value": "http://www.wikidata.org/entity/Q1010"}]}\n')
    code, stdout, stderr = run_cli("eval", copy, "--dataset-format", "qald", "--predictions", p,
                                   "--out", tmp_path / "o", "--format", "json")
    assert code == 0, stderr
    s = json.loads(stdout)
    # The system's own answers are scored against the file's gold answers (no store involved).
    assert s["dataset"] == "my_questions" and s["n_usable"] == 5 and s["answer"]["n"] == 1 and s["correct"] == 1
    assert s["unusable_reasons"] == {"no question text in the file": 1}
    code, _, stderr = run_cli("eval")
    assert code == 2 and "give a BENCHMARK" in stderr
    with pytest.raises(SystemExit) as e:  # argparse: one predictor source at a time
        run_cli("eval", SQ, "--predictions", p, "--translator", "cases")
    assert e.value.code == 2


def test_backend_cases_runs_the_whole_system(run_cli, wikidata_mini_store: Path, tmp_path: Path) -> None:
    """--backend cases: Engine.ask with the case bank on each question; results carry the translate step."""
    import json
    import shutil

    store = tmp_path / "wdm"
    shutil.copytree(wikidata_mini_store, store, symlinks=True)  # the bank is written into the store
    code, _, stderr = run_cli("cases", "build", "--store", store, "--sets", "simplequestions-train", "--limit", "300",
                              "--no-progress")
    assert code == 0, stderr
    code, stdout, stderr = run_cli("eval", SQ, "--translator", "cases", "--store", store, "--limit", "5",
                                   "--out", tmp_path / "o", "--format", "json")
    assert code == 0, stderr
    summary = json.loads(stdout)
    assert summary["n_records"] == 5 and summary["answer"] is not None
    rows = [json.loads(line) for line in (tmp_path / "o" / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 5
    for row in rows:  # every question went through the translator first
        steps = row["steps"] or []
        assert steps and steps[0]["stage"] in ("translate", "repair"), row["id"]


def test_desq_predictions_are_compiled_through_the_engine(run_cli, wikidata_mini_store: Path, tmp_path: Path) -> None:
    code, stdout, stderr = run_cli("eval", SQ, "--predictions", FIX / "desq_predictions.jsonl", "--store",
                                   wikidata_mini_store, "--out", tmp_path / "o", "--limit", 3)
    assert code == 0, stderr
    lines = {d["id"]: d for d in map(json.loads, (tmp_path / "o" / "results.jsonl").read_text().splitlines())}
    first = lines["sq_valid_20-1"]  # DeSQ with guessed URIs the label memory confirms: compiled, right answer
    assert first["correct"] and "wd:Q318926 wdt:P19" in first["pred_sparql"] and first["desq"].startswith("FORMAT")
    assert first["grounding"]["sasha_vujacic"]["predicted"] == "http://www.wikidata.org/entity/Q318926"
    second = lines["sq_valid_20-2"]  # DeSQ without a GROUNDING section: the parse error is charged
    assert second["stage"] == "parse" and "GROUNDING" in second["stage_message"]
    assert lines["sq_valid_20-3"]["correct"]  # plain SPARQL lines mix with DeSQ ones
    assert "2 fully correct" in stdout


def test_oracle_compiles_decompose_of_the_gold_without_uris(run_cli, wikidata_mini_store: Path,
                                                            tmp_path: Path) -> None:
    code, stdout, stderr = run_cli("eval", SQ, "--oracle", "--store", wikidata_mini_store, "--out", tmp_path / "o",
                                   "--limit", 4, "--format", "json")
    assert code == 0, stderr
    summary = json.loads(stdout)
    assert summary["system"] == "oracle" and summary["n_records"] == 4
    assert summary["grounding"]["overall"]["total"] == 8  # one entity and one property per question
    lines = {d["id"]: d for d in map(json.loads, (tmp_path / "o" / "results.jsonl").read_text().splitlines())}
    first = lines["sq_valid_20-1"]
    grounding_block = first["desq"].split("GROUNDING", 1)[1]
    assert "Q318926" not in grounding_block and "P19" not in grounding_block  # the URIs were removed
    gold = {g["gold"] for g in first["grounding"].values()}
    assert gold == {"http://www.wikidata.org/entity/Q318926", "http://www.wikidata.org/prop/direct/P19"}
    for d in lines.values():  # wrong ones are charged to a stage with evidence; right ones are not
        assert d["correct"] == (d["stage"] is None) and (d["correct"] or d["stage_message"])


@pytest.mark.slow
def test_list_shows_each_benchmark_and_its_usable_count(run_cli) -> None:
    code, stdout, _ = run_cli("eval", "--list", "--format", "json")
    assert code == 0
    rows = {d["name"]: d for d in map(json.loads, stdout.splitlines())}
    assert rows["qald9plus-train"]["count"] == 371 and rows["qald9plus-train"]["usable"] == 370
    assert rows["simplequestions-valid"]["usable"] == 2821 and all(d["error"] is None for d in rows.values())
