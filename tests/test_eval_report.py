"""Eval reports: summaries from results lines, Markdown, and report.html opened in headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from eval.loaders import load
from eval.records import Record
from eval.report import compare_runs, markdown_report
from eval.runner import Prediction, run_eval
from eval.summary import Summary, summarise
from kb_dumps.store import LocalStore

FIX = Path(__file__).parent / "fixtures" / "eval_runner"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="module")
def real_run(wikidata_mini_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 20-question SimpleQuestions run of test_eval_runner, on the real wikidata-mini store."""
    records = load(FIX / "sq_valid_20.txt")
    lines = [json.loads(x) for x in (FIX / "sq_predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    preds = {d["id"]: Prediction.from_dict(d) for d in lines}

    def predict(record: Record) -> Prediction:
        return preds.get(record.id, Prediction())

    out = tmp_path_factory.mktemp("eval") / "run"
    with LocalStore(wikidata_mini_store) as store:
        run_eval(records, predict, out_dir=out, store=store, settings={"system": "fixture"}, progress=False)
    return out


def test_report_html_opens_in_headless_chromium(real_run: Path, tmp_path: Path) -> None:
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("chromium not found (Debian: apt-get install -y chromium); CI installs it")
    html = (real_run / "report.html").read_text(encoding="utf-8")
    # Self-contained: no script, no stylesheet or image fetched from anywhere.
    assert not re.search(r"""(src|href)\s*=\s*["'](https?:|//)""", html, re.I)
    assert "<script" not in html.lower()
    proc = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                           (real_run / "report.html").resolve().as_uri()],
                          capture_output=True, text=True, timeout=180)
    dom = proc.stdout
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "<title>kbqa evaluation report</title>" in dom
    table = re.search(r'<table class="summary">(.*?)</table>', dom, re.S)
    assert table, "the summary table is missing from the rendered page"
    assert "sq_valid_20" in table.group(1) and "<th>strict F1</th>" in table.group(1)
    assert "<td>40.0</td>" in table.group(1)  # fully correct: 8 of 20
    images = re.findall(r'<img[^>]*src="data:image/png;base64,([A-Za-z0-9+/=]+)"', dom)
    assert len(images) >= 2  # failures per stage, answer-F1 histogram (and grounding by kind)
    import base64

    assert all(base64.b64decode(b)[:8] == b"\x89PNG\r\n\x1a\n" for b in images)
    assert "Failures per stage" in dom and "wrong-answer" in dom


def test_markdown_report_and_summary_json(real_run: Path) -> None:
    md = (real_run / "report.md").read_text(encoding="utf-8")
    assert "| dataset | system | questions | usable | correct % |" in md
    assert "| sq_valid_20 | fixture | 20 | 20 | 40.0 | 40.0 | 53.3 | 40.0 | 53.3 | 0 (0) | 35.0 |" in md
    assert "| fixture | 2 | 2 | 1 | 1 | 0 | 0 | 2 | 0 | 4 |" in md  # failures per stage, in pipeline order
    assert "## Grounding accuracy by kind" in md and "0.0 (0/1)" in md
    assert "| sq_valid_20-19 | translate | no predicted query |" in md
    data = json.loads((real_run / "summary.json").read_text(encoding="utf-8"))
    assert data["schema"] == "kbqa-eval-summary/1" and data["correct"] == 8
    assert Summary.from_dict(data).to_dict() == data


def test_summarise_hand_made_results() -> None:
    def line(i: int, **kw) -> dict:
        base = {"id": str(i), "usable": True, "correct": False, "stage": None, "query": None, "answer": None,
                "placeholders": None}
        return {**base, **kw}

    prf = {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    zero = {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    ans = {"qald": prf, "strict": prf, "gold_empty": False, "pred_empty": False, "both_empty": False}
    both = {"qald": prf, "strict": zero, "gold_empty": True, "pred_empty": True, "both_empty": True,
            "query_match": False}
    q = {"exact_match": True, "triples": prf, "entities": prf, "properties": prf, "error": None}
    ph = {"by_kind": {"entity": {"correct": 1, "total": 2, "accuracy": 0.5}}}
    results = [line(1, correct=True, answer=ans, query=q, gold_source="file", placeholders=ph),
               line(2, stage="empty", answer=both, gold_source="store",
                    placeholders={"by_kind": {"entity": {"correct": 2, "total": 2, "accuracy": 1.0},
                                              "property": {"correct": 0, "total": 1, "accuracy": 0.0}}}),
               line(3, usable=False, reason="no question text in the file")]
    s = summarise(results, dataset="d", system="s")
    assert (s.n_records, s.n_usable, s.correct, s.accuracy) == (3, 2, 1, 0.5)
    assert s.answer["qald"]["f1"] == 1.0 and s.answer["strict"]["f1"] == 0.5
    assert s.answer["both_empty"] == 1 and s.answer["both_empty_unmatched"] == 1
    assert (s.answer["gold_from_file"], s.answer["gold_from_store"]) == (1, 1)
    assert s.query == {"n": 1, "exact_match": 1.0, "triples_f1": 1.0, "entities_f1": 1.0, "properties_f1": 1.0,
                       "parse_errors": 0}
    assert s.stages["empty"] == 1 and sum(s.stages.values()) == 1
    assert s.grounding["by_kind"]["entity"] == {"correct": 3, "total": 4, "accuracy": 0.75}
    assert s.grounding["overall"] == {"correct": 3, "total": 5, "accuracy": 0.6}
    assert s.f1_histogram["qald"] == [0] * 9 + [2] and s.f1_histogram["strict"] == [1] + [0] * 8 + [1]
    assert s.unusable_reasons == {"no question text in the file": 1}
    assert "1 × no question text in the file" in markdown_report([s])


def test_comparing_runs_puts_them_side_by_side(real_run: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    data = json.loads((real_run / "summary.json").read_text(encoding="utf-8"))
    data["system"] = "second"
    (other / "summary.json").write_text(json.dumps(data), encoding="utf-8")
    summaries = compare_runs([real_run, other], tmp_path / "cmp")
    assert [s.system for s in summaries] == ["fixture", "second"]
    saved = json.loads((tmp_path / "cmp" / "summary.json").read_text(encoding="utf-8"))
    assert isinstance(saved, list) and len(saved) == 2
    html = (tmp_path / "cmp" / "report.html").read_text(encoding="utf-8")
    assert html.count("<tr><td>sq_valid_20</td>") == 2
    assert html.count('src="data:image/png;base64,') == 4  # metrics per run, stages, F1 histogram, grounding
