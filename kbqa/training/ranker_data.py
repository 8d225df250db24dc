"""The candidates file of the `explore` ranker: every train question's checked candidates, labelled, as JSON lines.

Generating candidates is the slow part (the search runs and each candidate is executed); fitting and k-fold
choices then read this file in minutes. One line per question:

    {"id", "kg", "text", "seconds", "candidates": [{"features": {...}, "f1": float, "family": str, "shape": str}, ...]}

A candidate's `features` are `graph_features` (explore/features/structure.py) without the question's own words, which
`question_features(text)` gives again at fit time. `f1` is the answer F1 of the candidate's answers against the
gold answers (1.0: the answers equal the gold; a train gold query ending `ORDER BY … LIMIT 1` whose first place is
shared accepts each tied row, eval/ties.py, and the line says `"tied": n`); `shape` its structure-prior label
(features/prior.py `graph_shape`), so that fitting can set the prior features out of fold. The file is appended question by question and a rerun skips the
ids it already holds, so an interrupted run resumes.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from eval.ties import select_json
from kb_dumps.json_types import JsonObject
from kb_dumps.stage_errors import KBQAError
from kbqa.training.train_kgs import TrainQuestion, ensure_store, list_kgs, read_questions

if TYPE_CHECKING:
    from eval.records import Record
    from kb_dumps.store_types import QueryResult, Store
    from kbqa.translators.explore import ExploreTranslator

log = logging.getLogger(__name__)
ROW_CAP = 10_000  # the train answers are cut at 10,000 rows too
QUESTION_KEYS = ("qw:", "q0:", "q1:", "q_")


def result_json(res: QueryResult) -> JsonObject:
    """A store result as a SPARQL JSON result (what the answer metrics read)."""
    if res.kind == "ask":
        return {"boolean": bool(res.boolean)}
    return select_json(res.vars, res.rows)


def label_candidates(translator: ExploreTranslator, question: TrainQuestion,
                     gold_query: str | None = None) -> JsonObject:
    """Run the search on one question and score each checked candidate's answers against the gold. With
    `gold_query` (the gold query, runnable on the translator's store), a gold answer that `LIMIT 1` picked among
    rows tied on the order keys counts each tied row as a gold answer (eval/ties.py): the candidate's F1 is its
    best against any of them, and the line's `tied` says how many there were."""
    from eval.answer_metrics import score_question
    from eval.ties import tied_on_store
    from kbqa.translators.explore.features.prior import graph_shape
    from kbqa.translators.explore.features.structure import graph_features
    from kbqa.translators.explore.lower.text import write
    from kbqa.translators.explore.rank.check import CHECK_ROW_CAP

    golds = [question.gold, *tied_on_store(gold_query, question.gold, translator.store)]
    _a, ranked, info = translator.search(question.question)
    # a candidate cut at the check's row cap is run again in full only when the gold is that large too (against
    # a smaller gold its F1 is low whatever the rows past the cap)
    big_gold = _gold_rows(question.gold) >= CHECK_ROW_CAP // 2
    cands = []
    for g in ranked:
        try:
            res = g.result  # the search's own execution
            if res is None or (big_gold and res.kind != "ask" and len(res.rows) >= CHECK_ROW_CAP):
                res = translator.store.query(write(g, translator.schema, desq=False), row_cap=ROW_CAP, timeout_s=5.0)
            answers = result_json(res)
            f1 = max(score_question(gold, answers).qald.f1 for gold in golds)
        except KBQAError:  # the store refuses or times out now: it answers nothing
            f1 = 0.0
        feats = {k: round(v, 5) for k, v in graph_features(g).items() if not k.startswith(QUESTION_KEYS)}
        cands.append({"features": feats, "f1": round(float(f1), 4), "family": g.family, "shape": graph_shape(g)})
    line = {"id": question.id, "kg": question.kg, "text": question.question,
            "seconds": round(float(info.get("seconds", 0.0)), 4), "candidates": cands}
    if len(golds) > 1:
        line["tied"] = len(golds) - 1
    return line


def _gold_rows(gold: JsonObject | None) -> int:
    if not gold:
        return 0
    if "results" in gold:
        return len(gold["results"].get("bindings") or [])
    return len(gold.get("rows") or [])


def read_candidates(path: str | Path) -> list[JsonObject]:
    out = []
    p = Path(path)
    with p.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except ValueError:
                # a line cut by an interrupted run (the last one) is dropped; anywhere else it is an error
                if f.readline():
                    raise KBQAError(f"{p}:{lineno}: not a JSON line", stage="usage") from None
    return out


def collect(folder: str | Path, work: str | Path, out: str | Path, *, kgs: list[str] | None = None,
            limit: int | None = None, budget_s: float | None = None, progress: bool = True,
            ids: set[str] | None = None) -> Path:
    """Write (or complete) the candidates file `out` for the train KGs of `folder` (stores under `work`); with
    `ids`, for those questions only."""
    from eval.loaders_formats import spider4sparql_query
    from kbqa.translators.explore import ExploreTranslator
    from kbqa.translators.explore.context import DEFAULT_BUDGET_S

    out_path = Path(out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    done = {q["id"] for q in read_candidates(out_path)} if out_path.is_file() else set()
    per_kg = read_questions(folder, kgs if kgs is not None else list_kgs(folder))
    todo = {kg: [q for q in qs[:limit] if q.id not in done and (ids is None or q.id in ids)]
            for kg, qs in per_kg.items()}
    total = sum(len(v) for v in todo.values())
    from tqdm import tqdm

    bar = tqdm(total=total, desc="ranker candidates", unit="q", disable=not progress)
    with out_path.open("a", encoding="utf-8") as f:
        for kg, questions in todo.items():
            if not questions:
                continue
            store_dir = ensure_store(folder, kg, work)
            tr = ExploreTranslator(store_dir, budget_s=budget_s or DEFAULT_BUDGET_S, fallback="never")
            try:
                for q in questions:
                    t0 = time.perf_counter()
                    try:
                        line = label_candidates(tr, q, spider4sparql_query(q.sparql) if q.sparql else None)
                    except KBQAError as e:  # a question the search cannot take: no candidates, counted as a miss
                        line = {"id": q.id, "kg": kg, "text": q.question, "seconds": time.perf_counter() - t0,
                                "candidates": [], "error": str(e)}
                    f.write(json.dumps(line, ensure_ascii=False) + "\n")
                    f.flush()
                    bar.update(1)
            finally:
                tr.close()
    bar.close()
    return out_path


def splice_candidates(base: str | Path, replacement: str | Path, out: str | Path) -> int:
    """Write `base` to `out` with each question that `replacement` also holds taken from `replacement` (the same
    order, the other rows untouched): two code versions' candidates compared on the questions searched again.
    Returns how many rows were replaced."""
    new = {r["id"]: r for r in read_candidates(replacement)}
    n = 0
    with Path(out).open("w", encoding="utf-8") as f:
        for r in read_candidates(base):
            if r["id"] in new:
                r, n = new[r["id"]], n + 1
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return n


def iter_groups(rows: list[JsonObject]) -> Iterator[tuple[JsonObject, list[dict[str, float]], list[float]]]:
    """Per question: its row, each candidate's full features (the question's words and the listwise `d:*` added
    back) and F1."""
    from kbqa.translators.explore.features.listwise import with_list_features
    from kbqa.translators.explore.features.structure import question_features

    for r in rows:
        qf = question_features(r["text"])
        feats = with_list_features([{**c["features"], **qf} for c in r["candidates"]])
        yield r, feats, [float(c["f1"]) for c in r["candidates"]]


def benchmark_gold(rec: Record, store: Store, kb: str) -> JsonObject | None:
    """A benchmark record's gold answers: its gold query run on the same store (a file may name one answer of
    many, as SimpleQuestions does), else the answers the file gives."""
    if rec.sparql:
        from eval.loaders_sparql import prepare_gold_sparql

        gold = prepare_gold_sparql(rec.sparql, kb=kb, check_syntax=False).sparql or rec.sparql
        try:
            return result_json(store.query(gold, row_cap=ROW_CAP))
        except KBQAError:  # the store cannot run it (Blazegraph-only, refused): the file's answers
            pass
    return rec.gold_result()


def collect_sets(specs: list[tuple[str, Path]], out: str | Path, *, limit: int | None = None,
                 budget_s: float | None = None, progress: bool = True) -> Path:
    """The candidates file for benchmark sets asked on stores (`--set BENCHMARK@STORE`); `kg` is the set's name."""
    from tqdm import tqdm

    from eval.loaders import load_benchmark
    from kbqa.translators.explore import ExploreTranslator
    from kbqa.translators.explore.context import DEFAULT_BUDGET_S

    out_path = Path(out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    done = {q["id"] for q in read_candidates(out_path)} if out_path.is_file() else set()
    with out_path.open("a", encoding="utf-8") as f:
        for name, store_dir in specs:
            records = [r for r in load_benchmark(name, check_syntax=False) if r.usable][:limit]
            tr = ExploreTranslator(store_dir, budget_s=budget_s or DEFAULT_BUDGET_S, fallback="never")
            try:
                for rec in tqdm(records, desc=f"ranker candidates {name}", unit="q", disable=not progress):
                    qid = f"{name}:{rec.id}"
                    if qid in done:
                        continue
                    q = TrainQuestion(qid, name, rec.question, rec.sparql or "",
                                      benchmark_gold(rec, tr.store, tr.profile.name))
                    try:
                        line = label_candidates(tr, q)
                    except KBQAError as e:
                        line = {"id": qid, "kg": name, "text": q.question, "seconds": 0.0, "candidates": [],
                                "error": str(e)}
                    f.write(json.dumps(line, ensure_ascii=False) + "\n")
                    f.flush()
            finally:
                tr.close()
    return out_path
