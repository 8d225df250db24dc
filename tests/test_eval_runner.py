"""The eval runner on real runs over wikidata-mini: expected figures, resume, manifest checks, stage attribution."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.attribution import STAGE_ORDER, Attribution, attribute, stage_rank
from eval.loaders import load
from eval.records import Record
from eval.runner import RESULTS_SCHEMA, Prediction, read_results, run_eval
from eval.summary import Summary
from kb_dumps.stage_errors import KBQAError
from kb_dumps.store import LocalStore

FIX = Path(__file__).parent / "fixtures" / "eval_runner"
SQ = FIX / "sq_valid_20.txt"
PREDS = FIX / "sq_predictions.jsonl"


@pytest.fixture(scope="module")
def records() -> list[Record]:
    return load(SQ)


@pytest.fixture(scope="module")
def predictions() -> dict[str, Prediction]:
    lines = [json.loads(x) for x in PREDS.read_text(encoding="utf-8").splitlines()]
    return {d["id"]: Prediction.from_dict(d) for d in lines}


@pytest.fixture(scope="module")
def store(wikidata_mini_store: Path):
    with LocalStore(wikidata_mini_store, timeout_s=20) as s:
        yield s


def predictor_of(predictions: dict[str, Prediction], calls: list[str] | None = None):
    def predict(record: Record) -> Prediction:
        if calls is not None:
            calls.append(record.id)
        return predictions.get(record.id, Prediction())
    return predict


def by_id(out: Path) -> dict[str, dict]:
    return {d["id"]: d for d in read_results(out / "results.jsonl")}


# Fixture design (tests/fixtures/eval_runner/sq_predictions.jsonl), records 1..20 of SimpleQuestions valid:
# 1-8 the gold query (4 with DISTINCT: same answers, no exact match; 1 and 3 renamed/reprefixed), 9-12 a
# query answering another question, 13-14 an empty query, 15 SERVICE, 16 a query that does not parse,
# 17 a wrong entity grounding, 18 a predictor-reported parse error, 19-20 no prediction.
EXPECTED_STAGES = {**{i: None for i in range(1, 9)}, **{i: "wrong-answer" for i in range(9, 13)},
                   13: "empty", 14: "empty", 15: "validate", 16: "parse", 17: "ground", 18: "parse",
                   19: "translate", 20: "translate"}


def test_small_real_run_gives_the_hand_computed_figures(records, predictions, store, tmp_path: Path) -> None:
    out = tmp_path / "run"
    summary = run_eval(records, predictor_of(predictions), out_dir=out, store=store,
                       settings={"system": "fixture"}, progress=False)
    assert (summary.n_records, summary.n_usable, summary.correct) == (20, 20, 8)
    # QALD-style: 8 right (P=R=1), 4 wrong answers (P=R=0), 8 empty (P=1, R=0): P=16/20, R=8/20.
    qald = summary.answer["qald"]
    assert qald["precision"] == pytest.approx(0.8) and qald["recall"] == pytest.approx(0.4)
    assert qald["f1"] == pytest.approx(0.4) and qald["f1_qald"] == pytest.approx(2 * 0.8 * 0.4 / 1.2)
    assert summary.answer["strict"] == qald  # no question has both answers empty
    assert summary.answer["gold_from_store"] == 20  # SimpleQuestions answers are partial: the store's are used
    assert summary.query["exact_match"] == pytest.approx(7 / 20)  # record 4 adds DISTINCT
    assert summary.query["parse_errors"] == 1
    assert summary.stages == {"translate": 2, "parse": 2, "validate": 1, "ground": 1, "assemble": 0, "execute": 0,
                              "empty": 2, "internal": 0, "wrong-answer": 4}
    assert summary.grounding["by_kind"]["entity"] == {"correct": 0, "total": 1, "accuracy": 0.0}
    assert summary.grounding["by_kind"]["property"]["accuracy"] == 1.0
    assert summary.f1_histogram["qald"][0] == 12 and summary.f1_histogram["qald"][-1] == 8

    lines = by_id(out)
    assert len(lines) == 20 and all(d["schema"] == RESULTS_SCHEMA for d in lines.values())
    for i, stage in EXPECTED_STAGES.items():
        assert lines[f"sq_valid_20-{i}"]["stage"] == stage, i
        assert lines[f"sq_valid_20-{i}"]["correct"] is (stage is None)
    assert lines["sq_valid_20-4"]["query"]["exact_match"] is False
    wrong = lines["sq_valid_20-9"]
    assert wrong["evidence"]["missing"] == ["wd:Q2405480"] and wrong["evidence"]["extra"] == ["wd:Q40348"]
    assert "missing wd:Q2405480" in wrong["stage_message"]
    ground = lines["sq_valid_20-17"]["evidence"]["wrong"][0]
    assert ground["placeholder"] == "subject" and ground["gold_in_candidates"] is False
    assert lines["sq_valid_20-18"]["evidence"]["error"]["ac"] == "AC2"
    assert "SERVICE" in lines["sq_valid_20-15"]["stage_message"]
    assert lines["sq_valid_20-1"]["pred_sample"] == [["http://www.wikidata.org/entity/Q1010"]]
    for name in ("manifest.json", "summary.json", "report.md", "report.html"):
        assert (out / name).is_file()
    saved = Summary.from_dict(json.loads((out / "summary.json").read_text(encoding="utf-8")))
    assert saved == summary


def test_resume_does_not_recompute_and_a_torn_line_is_redone(records, predictions, store, tmp_path: Path) -> None:
    out = tmp_path / "run"
    calls: list[str] = []
    first = run_eval(records, predictor_of(predictions, calls), out_dir=out, store=store, limit=10,
                     settings={"system": "fixture"}, progress=False)
    assert first.n_records == 10 and first.n_new == 10 and len(calls) == 10
    head = (out / "results.jsonl").read_text(encoding="utf-8")
    calls.clear()
    second = run_eval(records, predictor_of(predictions, calls), out_dir=out, store=store, limit=20,
                      settings={"system": "fixture"}, progress=False)
    assert calls == [f"sq_valid_20-{i}" for i in range(11, 21)]  # the first 10 are not recomputed
    assert second.n_records == 20 and second.n_new == 10 and second.correct == 8
    assert (out / "results.jsonl").read_text(encoding="utf-8").startswith(head)

    # A run killed mid-write leaves a torn last line: it is dropped and that question recomputed.
    text = (out / "results.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (out / "results.jsonl").write_text("".join(text[:-1]) + text[-1][:40], encoding="utf-8")
    calls.clear()
    third = run_eval(records, predictor_of(predictions, calls), out_dir=out, store=store, limit=20,
                     settings={"system": "fixture"}, progress=False)
    assert len(calls) == 1 and third.n_new == 1 and third.n_records == 20
    assert len(read_results(out / "results.jsonl")) == 20


def test_manifest_mismatch_is_refused_unless_restart(records, predictions, tmp_path: Path) -> None:
    out = tmp_path / "run"
    run_eval(records, predictor_of(predictions), out_dir=out, limit=3, settings={"system": "a"}, progress=False)
    with pytest.raises(KBQAError) as e:
        run_eval(records, predictor_of(predictions), out_dir=out, limit=3, settings={"system": "b"}, progress=False)
    assert e.value.info.stage == "usage" and e.value.exit_code == 2
    assert "settings differ" in str(e.value) and 'system: "a" -> "b"' in str(e.value) and "--restart" in str(e.value)
    other = load(FIX / "qald_gold_answers.json")
    with pytest.raises(KBQAError, match="the dataset file differ"):
        run_eval(other, predictor_of(predictions), out_dir=out, settings={"system": "a"}, progress=False)
    assert len(read_results(out / "results.jsonl")) == 3  # nothing was mixed in
    s = run_eval(records, predictor_of(predictions), out_dir=out, limit=2, settings={"system": "b"},
                 progress=False, restart=True)
    assert s.n_records == 2 and s.n_new == 2 and len(read_results(out / "results.jsonl")) == 2


def test_results_without_manifest_are_not_silently_reused(records, predictions, tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "results.jsonl").write_text(json.dumps({"schema": RESULTS_SCHEMA, "id": "x"}) + "\n")
    with pytest.raises(KBQAError, match="without a run manifest"):
        run_eval(records, predictor_of(predictions), out_dir=out, settings={}, progress=False)


def test_jobs_give_the_same_results_as_one_job(records, predictions, store, tmp_path: Path) -> None:
    one = run_eval(records, predictor_of(predictions), out_dir=tmp_path / "one", store=store, settings={},
                   progress=False)
    many = run_eval(records, predictor_of(predictions), out_dir=tmp_path / "many", store=store, settings={},
                    jobs=4, progress=False)
    assert (many.correct, many.stages, many.answer, many.query) == (one.correct, one.stages, one.answer, one.query)
    a, b = by_id(tmp_path / "one"), by_id(tmp_path / "many")
    assert {k: v["stage"] for k, v in a.items()} == {k: v["stage"] for k, v in b.items()}


def test_without_a_store_scores_at_query_level_only(records, predictions, tmp_path: Path) -> None:
    s = run_eval(records, predictor_of(predictions), out_dir=tmp_path / "run", settings={}, progress=False)
    assert s.answer is None and s.f1_histogram is None
    assert s.correct == 7  # exact matches only (record 4's DISTINCT is not one)
    assert s.stages["empty"] == 0 and s.stages["validate"] == 1  # SERVICE is refused on the text
    assert s.stages["wrong-answer"] == 7 and s.stages["translate"] == 2
    line = by_id(tmp_path / "run")["sq_valid_20-9"]
    assert line["answer"] is None and "query level" in line["stage_message"]


def test_gold_answers_from_the_file_are_used_without_running_the_gold_query(store, tmp_path: Path) -> None:
    recs = load(FIX / "qald_gold_answers.json")
    gold_query = {r.id: r.sparql for r in recs}
    wrong_empty = "SELECT ?x WHERE { wd:Q318926 wdt:P22 ?x }"  # empty on the KB, not the gold query
    preds = {"1": Prediction(gold_query["1"]), "2": Prediction(gold_query["2"]), "3": Prediction(gold_query["3"]),
             "4": Prediction(wrong_empty), "5": Prediction(gold_query["5"])}
    s = run_eval(recs, predictor_of(preds), out_dir=tmp_path / "run", store=store, settings={}, progress=False)
    lines = by_id(tmp_path / "run")
    assert all(lines[i]["gold_source"] == "file" for i in "12345")
    assert lines["1"]["correct"] and lines["3"]["correct"] and lines["5"]["correct"]
    # The file says Q64; the KB (and so the gold query) says Q1010: the file wins.
    assert lines["2"]["stage"] == "wrong-answer" and lines["2"]["evidence"]["missing"] == ["wd:Q64"]
    # Both empty, queries differ: right for QALD-style, wrong for strict.
    assert lines["4"]["answer"]["qald"]["f1"] == 1.0 and lines["4"]["answer"]["strict"]["f1"] == 0.0
    assert lines["4"]["stage"] == "empty" and "both results are empty" in lines["4"]["stage_message"]
    assert lines["6"]["usable"] is False and lines["6"]["answer"] is None and lines["6"]["stage"] is None
    assert (s.n_records, s.n_usable, s.correct) == (6, 5, 3)
    assert s.unusable_reasons == {"no question text in the file": 1}
    assert s.answer["both_empty"] == 2 and s.answer["both_empty_unmatched"] == 1
    assert s.answer["qald"]["f1"] == pytest.approx(4 / 5) and s.answer["strict"]["f1"] == pytest.approx(3 / 5)


def test_predictor_failures_and_timeouts_are_recorded(wikidata_mini_store: Path, records, tmp_path: Path) -> None:
    def predict(record: Record) -> Prediction:
        n = int(record.id.rsplit("-", 1)[1])
        if n == 1:
            raise KBQAError("the model server refused the request", stage="translate")
        if n == 2:
            raise ValueError("bad luck")
        if n == 3:
            return Prediction("SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }")
        return Prediction(stage_errors=[{"stage": "ground", "message": "no candidate for [x]"},
                                        {"stage": "validate", "message": "AC3 uses ?var9, never bound", "ac": "AC3"}])

    with LocalStore(wikidata_mini_store, timeout_s=1.0) as slow:
        s = run_eval(records[:4], predict, out_dir=tmp_path / "run", store=slow, settings={}, progress=False)
    lines = by_id(tmp_path / "run")
    assert lines["sq_valid_20-1"]["stage"] == "translate" and "refused" in lines["sq_valid_20-1"]["stage_message"]
    assert lines["sq_valid_20-2"]["stage"] == "translate"
    assert "ValueError: bad luck" in lines["sq_valid_20-2"]["stage_message"]
    assert lines["sq_valid_20-3"]["stage"] == "execute" and lines["sq_valid_20-3"]["exec_error"]["timed_out"]
    # Several reported errors: the one of the earliest stage is charged.
    assert lines["sq_valid_20-4"]["stage"] == "validate" and lines["sq_valid_20-4"]["evidence"]["errors"] == 2
    assert s.correct == 0 and s.stages["translate"] == 2 and s.stages["execute"] == 1


# ---- attribution, one case per stage ---------------------------------------------------------
def test_attribution_charges_the_first_failed_stage() -> None:
    assert attribute(correct=True, pred_sparql=None) is None
    assert attribute(correct=False, pred_sparql=None).stage == "translate"
    errs = [{"stage": "assemble", "message": "m1"}, {"stage": "parse", "message": "m2", "line": 3}]
    a = attribute(correct=False, stage_errors=errs, pred_sparql="SELECT * {}")
    assert (a.stage, a.message, a.evidence["error"]["line"]) == ("parse", "m2", 3)
    assert attribute(correct=False, stage_errors=[{"stage": "store", "message": "died"}]).stage == "execute"
    wrong = [{"placeholder": "film", "kind": "entity", "predicted": "wd:Q1", "gold": "wd:Q2"}]
    assert attribute(correct=False, pred_sparql="q", wrong_grounding=wrong).stage == "ground"
    perr = {"error": {"stage": "parse", "message": "Expected SelectQuery"}}
    assert attribute(correct=False, pred_sparql="q", query_score=perr).stage == "parse"
    assert attribute(correct=False, pred_sparql="q", query_score=perr, assembled=True).stage == "assemble"
    gold_bad = {"error": {"stage": "parse", "message": "gold query does not parse"}}
    assert attribute(correct=False, pred_sparql="q", query_score=gold_bad).stage == "wrong-answer"
    assert attribute(correct=False, pred_sparql="q", refused={"message": "SERVICE is refused"}).stage == "validate"
    assert attribute(correct=False, pred_sparql="q", exec_error={"message": "timeout"}).stage == "execute"
    empty = {"pred_empty": True, "both_empty": False, "strict": {"f1": 0.0}}
    assert attribute(correct=False, pred_sparql="q", answer=empty).stage == "empty"
    diff = {"missing": ["wd:Q1", "wd:Q2", "wd:Q3", "wd:Q4"], "extra": []}
    a = attribute(correct=False, pred_sparql="q", answer={"pred_empty": False, "strict": {"f1": 0.5}},
                  answer_diff=diff)
    assert a.stage == "wrong-answer" and a.message.endswith("missing wd:Q1, wd:Q2, wd:Q3 …")
    assert Attribution.from_dict(a.to_dict()) == a
    assert [stage_rank(s) for s in STAGE_ORDER] == list(range(len(STAGE_ORDER)))
