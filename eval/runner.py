"""The eval runner: a predictor function over benchmark records, scored per question, resumable, with reports."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import sys
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from eval.answer_metrics import AnswersInput, as_answers, score_question
from eval.attribution import attribute, wrong_placeholders
from eval.loaders_sparql import prepare_gold_sparql
from eval.query_metrics import per_placeholder, score_query
from eval.records import Record
from eval.report import write_reports
from eval.summary import Summary, summarise
from eval.ties import tied_on_store
from kb_dumps.json_types import JsonObject, JsonValue
from kb_dumps.profiles import get_profile
from kb_dumps.stage_errors import EXIT_USAGE, ErrorInfo, KBQAError
from kb_dumps.store import check_query_text
from kb_dumps.store_types import QueryResult, Store

# Gold answers: a store's result, or the file's in `QueryResult.to_dict()` shape.
GoldAnswers = QueryResult | JsonObject

RESULTS_SCHEMA = "kbqa-eval-results/1"
MANIFEST_SCHEMA = "kbqa-eval-manifest/1"
# Files whose code decides a score: a change to any of them makes old results incomparable.
_SCORING_FILES = ("records.py", "loaders.py", "loaders_formats.py", "loaders_sparql.py", "query_metrics.py",
                  "answer_metrics.py", "attribution.py", "runner.py", "ties.py")
_SAMPLE_ROWS = 5  # predicted rows kept in results.jsonl (the full answers can be large)


@dataclass
class Prediction:
    """What a predictor returns for one record, as plain data.

    `grounding`: {placeholder: {"kind", "predicted" (IRI or None), "gold" (IRI, when known),
    "candidates"?: [...]}}. `answers`: answers the system computed itself (anything
    `eval.answer_metrics.as_answers` reads), used when no store is given. `stage_errors`: ErrorInfo
    dicts, each with its `stage`.
    """

    sparql: str | None = None
    desq: str | None = None
    stage_errors: list[JsonObject] = field(default_factory=list)
    steps: JsonValue = None  # the report's steps, as JSON
    grounding: dict[str, JsonObject] | None = None
    answers: AnswersInput | None = None

    def to_dict(self) -> JsonObject:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: JsonObject) -> Prediction:
        return cls(d.get("sparql"), d.get("desq"), list(d.get("stage_errors") or []), d.get("steps"),
                   d.get("grounding"), d.get("answers"))


Predictor = Callable[[Record], Prediction]


def _short_rows(res: QueryResult) -> list[list[str | None]]:
    if res.kind == "ask":
        return [[str(res.boolean).lower()]]
    return [[None if t is None else t["value"] for t in row] for row in res.rows[:_SAMPLE_ROWS]]


def _answer_diff(gold: AnswersInput, pred: AnswersInput, kb: str) -> JsonObject:
    """Up to five missing and five extra answers (first column, normalised), for the evidence."""
    g, p = as_answers(gold), as_answers(pred)
    if g.kind != "select" or p.kind != "select":
        return {"gold": g.as_boolean, "predicted": p.as_boolean}
    profile = get_profile(kb)

    def show(key: tuple) -> str:
        return profile.compact(key[1]) if key[0] == "iri" else str(key[1])

    gv = {r[0] for r in g.rows if r and r[0]}
    pv = {r[0] for r in p.rows if r and r[0]}
    return {"missing": sorted(show(v) for v in gv - pv)[:5], "extra": sorted(show(v) for v in pv - gv)[:5],
            "n_gold": len(g.rows), "n_pred": len(p.rows)}


def _run(store: Store, sparql: str) -> tuple[QueryResult | None, JsonObject | None]:
    try:
        return store.query(sparql), None
    except KBQAError as e:
        d = e.info.to_dict()
        d["stage"] = "execute"
        if getattr(e, "timed_out", False):
            d["timed_out"] = True
        return None, d


def _gold_answers(record: Record, store: Store | None, out: JsonObject) -> GoldAnswers | None:
    """The gold answers: the file's, unless they are partial (SimpleQuestions) and a store can give them all;
    `out` gets their source, or the gold query's failure."""
    if record.has_gold_answers and not (record.meta.get("answers_partial") and store is not None and record.sparql):
        out["gold_source"] = "file"
        return record.gold_result()
    if store is not None and record.sparql:
        res, err = _run(store, record.sparql)
        if err:
            out["gold_error"] = {**err, "message": "gold query failed: " + err["message"]}
            return None
        out["gold_source"] = "store"
        return res
    return None


def _predicted_answers(pred: Prediction, store: Store | None, kb: str, out: JsonObject
                       ) -> tuple[AnswersInput, bool, JsonObject | None]:
    """(the predicted answers, whether they are known — possibly empty —, the refusal of its query): the system's
    own, else its query run on the store; with neither, the question is scored at query level only (no
    answer-level figure, not even for a missing query). `out` gets the run's figures and errors."""
    pred_ans: AnswersInput = None
    answered = False
    refused = None
    runnable = prepare_gold_sparql(pred.sparql, kb=kb, check_syntax=False) if pred.sparql else None
    parse_failed = bool(out["query"] and (out["query"].get("error") or {}).get("stage") == "parse"
                        and not str(out["query"]["error"].get("message", "")).startswith("gold "))
    has_query = bool(pred.sparql and pred.sparql.strip()) and not parse_failed
    if has_query and runnable is not None:  # refused before running (SERVICE, update): a text check, no store
        try:
            if runnable.reason:
                raise KBQAError(runnable.reason, stage="validate")
            check_query_text(runnable.sparql or "")
        except KBQAError as e:
            refused = {**e.info.to_dict(), "stage": "validate"}
    if pred.answers is not None:
        pred_ans, answered = pred.answers, True
    elif store is not None:
        # No query, or one that cannot run: the system gave no answer (GERBIL's "could not answer").
        answered = True
        if has_query and refused is None:
            res, err = _run(store, runnable.sparql or "")  # type: ignore[union-attr]
            out["exec_error"], pred_ans = err, res
            if res is not None:
                out["n_pred"], out["pred_sample"] = len(res.rows), _short_rows(res)
                if res.truncated:
                    out["pred_truncated"] = True
    return pred_ans, answered, refused


def score_record(record: Record, pred: Prediction, *, store: Store | None = None, kb: str | None = None,
                 system: str = "") -> JsonObject:
    """Score one prediction against its record; the results.jsonl line (see eval/README.md, "Runner")."""
    kb = record.meta.get("kb") or kb or "wikidata"
    out: JsonObject = {"schema": RESULTS_SCHEMA, "id": record.id, "dataset": record.dataset, "system": system,
                           "question": record.question, "usable": record.usable, "reason": record.reason, "kb": kb,
                           "gold_sparql": record.sparql, "pred_sparql": pred.sparql, "desq": pred.desq,
                           "stage_errors": pred.stage_errors, "steps": pred.steps, "grounding": pred.grounding,
                           "query": None, "answer": None, "placeholders": None, "gold_source": None,
                           "gold_error": None, "n_gold": None, "n_pred": None, "pred_sample": None,
                           "exec_error": None, "correct": False, "correct_ties_accepted": False, "gold_tied": None,
                           "stage": None, "stage_message": None, "evidence": None}
    if not record.usable:
        return out
    if record.sparql:
        out["query"] = score_query(pred.sparql, record.sparql, kb).to_dict()
    known = {n: g["gold"] for n, g in (pred.grounding or {}).items() if isinstance(g, dict) and g.get("gold")}
    if known:
        predicted = {n: (pred.grounding or {})[n].get("predicted") for n in known}
        kinds = {n: (pred.grounding or {})[n].get("kind") for n in known if (pred.grounding or {})[n].get("kind")}
        out["placeholders"] = per_placeholder(predicted, known, kinds, kb=kb).to_dict()

    gold = _gold_answers(record, store, out)
    pred_ans, answered, refused = _predicted_answers(pred, store, kb, out)
    if gold is not None:
        g = as_answers(gold)
        out["n_gold"] = len(g.rows) if g.kind == "select" else 1
    if gold is not None and answered:
        ans = score_question(gold, pred_ans, gold_sparql=record.sparql, pred_sparql=pred.sparql, kb=kb)
        out["answer"] = ans.to_dict()

    if out["answer"] is not None:
        out["correct"] = out["answer"]["strict"]["f1"] >= 1.0 - 1e-9
    elif out["query"] is not None:
        out["correct"] = bool(out["query"]["exact_match"])
    out["correct_ties_accepted"] = out["correct"]
    if out["answer"] is not None and gold is not None and store is not None and record.sparql:
        tied = tied_on_store(record.sparql, gold, store)
        if tied:
            out["gold_tied"] = len(tied)
            out["correct_ties_accepted"] = out["correct"] or any(
                score_question(t, pred_ans, kb=kb).strict.f1 >= 1.0 - 1e-9 for t in tied)
    wrong = wrong_placeholders(pred.grounding, out["placeholders"], kb)
    att = attribute(correct=out["correct"], stage_errors=pred.stage_errors, pred_sparql=pred.sparql,
                    assembled=bool(pred.desq or pred.grounding), query_score=out["query"], wrong_grounding=wrong,
                    refused=refused, exec_error=out["exec_error"], answer=out["answer"],
                    answer_diff=_answer_diff(gold, pred_ans, kb) if out["answer"] is not None else None)
    if att is not None:
        out["stage"], out["stage_message"], out["evidence"] = att.stage, att.message, att.evidence
    return out


# ---- run manifest and resume ------------------------------------------------------------------
def code_version() -> str:
    """The package version and a hash of the scoring code (results from other code are not mixed)."""
    try:
        version = importlib.metadata.version("kbqa")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    h = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for name in _SCORING_FILES:
        h.update((here / name).read_bytes())
    return f"kbqa {version}; eval {h.hexdigest()[:12]}"


def dataset_hash(records: list[Record], dataset_path: str | Path | None) -> str:
    """sha256 of the dataset file when given, else of the records' JSON (the file stands for its records)."""
    h = hashlib.sha256()
    if dataset_path is not None:
        with open(dataset_path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    else:
        for r in records:
            h.update(json.dumps(r.to_dict(), sort_keys=True, ensure_ascii=False).encode())
    return h.hexdigest()


def _canonical(obj: JsonValue) -> JsonValue:  # what json.dumps writes (default=str) read back
    return json.loads(json.dumps(obj, sort_keys=True, default=str))


def _check_manifest(out: Path, manifest: JsonObject, restart: bool) -> None:
    mpath, rpath = out / "manifest.json", out / "results.jsonl"
    if restart:
        for name in ("manifest.json", "results.jsonl", "summary.json", "report.md", "report.html"):
            (out / name).unlink(missing_ok=True)
    if mpath.is_file():
        try:
            old = json.loads(mpath.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise _usage(f"{mpath} is not a run manifest ({e}); use --restart to start over", mpath) from None
        for key, what in (("dataset_sha256", "the dataset file"), ("settings", "the settings"),
                          ("code_version", "the code version")):
            before, now = _canonical(old.get(key)), _canonical(manifest[key])
            if before != now:
                raise _usage(f"{out} holds results of another run: {what} differ ({_diff(before, now)}); results "
                             "are not mixed — use another --out, or --restart to discard them", mpath)
    elif rpath.is_file() and rpath.stat().st_size:
        raise _usage(f"{rpath} exists without a run manifest, so it cannot be checked; use --restart to discard "
                     "it or another --out", rpath)
    out.mkdir(parents=True, exist_ok=True)
    if not mpath.is_file():
        mpath.write_text(json.dumps(manifest, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")


def _brief(x: JsonValue) -> str:
    s = json.dumps(x, sort_keys=True, default=str)
    return s if len(s) <= 100 else s[:97] + "..."


def _diff(before: JsonValue, now: JsonValue) -> str:
    """What changed, key by key for dicts (the settings), else before/now."""
    if isinstance(before, dict) and isinstance(now, dict):
        keys = sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))
        return "; ".join(f"{k}: {_brief(before.get(k))} -> {_brief(now.get(k))}" for k in keys)
    return f"before {_brief(before)}, now {_brief(now)}"


def _usage(message: str, path: Path) -> KBQAError:
    e = KBQAError(message, stage="usage", file=str(path))
    e.exit_code = EXIT_USAGE
    return e


def read_results(path: str | Path) -> list[JsonObject]:
    """The lines of a results.jsonl; a torn last line (a run killed mid-write) is dropped, others must parse."""
    p = Path(path)
    if not p.is_file():
        return []
    lines = p.read_text(encoding="utf-8").splitlines()
    out = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except json.JSONDecodeError as e:
            if i == len(lines):
                break
            raise KBQAError(f"results line is not JSON: {e.msg}", stage="parse", file=str(p), line=i) from None
        if d.get("schema") != RESULTS_SCHEMA:
            raise KBQAError(f"results line of schema {d.get('schema')!r}, expected {RESULTS_SCHEMA}", stage="parse",
                            file=str(p), line=i)
        out.append(d)
    return out


def _rewrite_clean(path: Path, rows: list[JsonObject]) -> None:
    # Drops a torn last line so that appended lines start on a fresh line.
    tmp = path.with_suffix(".jsonl.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for d in rows:
            f.write(json.dumps(d, ensure_ascii=False, default=str) + "\n")
    tmp.replace(path)


def _safe_predict(predictor: Predictor, record: Record) -> Prediction:
    try:
        pred = predictor(record)
    except KBQAError as e:
        return Prediction(stage_errors=[{**i.to_dict(), "qid": record.id} for i in e.errors])
    except Exception as e:  # noqa: BLE001 - one question's crash must not end the run; it is recorded
        info = ErrorInfo(stage="translate", message=f"the predictor failed: {type(e).__name__}: {e}", qid=record.id)
        return Prediction(stage_errors=[info.to_dict()])
    if isinstance(pred, dict):
        pred = Prediction.from_dict(pred)
    return pred


def run_eval(records: Iterable[Record], predictor: Predictor, *, out_dir: str | Path, store: Store | None = None,
             kb: str | None = None, limit: int | None = None, jobs: int = 1, settings: JsonObject | None = None,
             progress: bool = True, restart: bool = False, dataset_path: str | Path | None = None,
             dataset: str | None = None) -> Summary:
    """Run `predictor` over the records (the first `limit`), score each, write results and reports.

    Resumable: records whose id is already in `out_dir/results.jsonl` are not recomputed. The run
    manifest (dataset hash, settings, code version) is written first and checked on resume; a
    mismatch raises KBQAError (stage "usage") unless `restart` discards the old results.
    `kb`: the KB profile for scoring when a record does not say (records carry `meta["kb"]`).
    """
    records = list(records)
    settings = dict(settings or {})
    system = str(settings.get("system", "predictor"))
    out = Path(out_dir)
    name = dataset or (records[0].dataset if records else "") or "dataset"
    manifest = {"schema": MANIFEST_SCHEMA, "dataset": name,
                "dataset_path": str(dataset_path) if dataset_path else None,
                "dataset_sha256": dataset_hash(records, dataset_path), "n_records": len(records),
                "settings": _canonical(settings), "code_version": code_version()}
    _check_manifest(out, manifest, restart)
    rpath = out / "results.jsonl"
    previous = read_results(rpath)
    _rewrite_clean(rpath, previous)
    done = {d["id"]: d for d in previous}
    selected = records[:limit] if limit else records
    pending = [r for r in selected if r.id not in done]

    lock = threading.Lock()

    def work(rec: Record) -> JsonObject:
        pred = _safe_predict(predictor, rec) if rec.usable else Prediction()
        line = score_record(rec, pred, store=store, kb=kb, system=system)
        with lock, open(rpath, "a", encoding="utf-8") as f:
            f.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")
        return line

    from tqdm import tqdm

    bar = tqdm(total=len(pending), desc=f"eval {name}", unit="q",
               disable=not (progress and sys.stderr.isatty()))
    try:
        if jobs > 1:
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                for line in pool.map(work, pending):
                    done[line["id"]] = line
                    bar.update(1)
        else:
            for rec in pending:
                line = work(rec)
                done[line["id"]] = line
                bar.update(1)
    finally:
        bar.close()
    results = [done[r.id] for r in selected if r.id in done]
    summary = summarise(results, dataset=name, system=system, settings=settings, code=manifest["code_version"],
                        out_dir=str(out), n_new=len(pending))
    write_reports(out, [summary], results)
    return summary
