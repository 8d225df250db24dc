"""`kbqa eval`: score predictions (a JSONL file, the Engine, or the decompose oracle) on a benchmark, offline."""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from kb_dumps.json_types import JsonObject
from kb_dumps.stage_errors import EXIT_USAGE, KBQAError
from kbqa.commands.common import (
    add_chooser_flag,
    add_endpoint_flags,
    add_format_flag,
    integer,
    print_json,
    resolve_store,
    seconds,
    store_dir,
    subparser,
    translator_choice,
)
from kbqa.frontends import FRONTENDS
from kbqa.settings import SettingValue, get_translator_settings

if TYPE_CHECKING:
    from eval.records import Record
    from eval.runner import Predictor
    from eval.summary import Summary
    from kb_dumps.label_memory import LabelMemory
    from kbqa.pipeline import Engine
    from kbqa.result import Result

EXAMPLE = """kbqa eval simplequestions-valid --predictions preds.jsonl --store kb/ --limit 100 --out runs/sq
  kbqa eval my_questions.json --dataset-format qald --predictions preds.jsonl
  kbqa eval bestiary --oracle --store kb/bestiary --limit 20
  kbqa eval bestiary --translator explore --store kb/bestiary --limit 20
  kbqa eval --list

predictions file: one JSON object per line, {"id": ..., "sparql": ...} or {"id": ..., "desq": ...}
(optional: "answers", "grounding", "stage_errors", "steps"). Resuming: run the same command again;
--restart discards the results in --out."""


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from eval.loaders import FORMATS
    from kbqa.backends import BACKENDS
    from kbqa.translators import TRANSLATORS

    p = subparser(sub, "eval", "evaluate a KBQA system offline on a benchmark (query- and answer-level, per-stage "
                               "failures, HTML report)", EXAMPLE)
    p.add_argument("benchmark", nargs="?", help="a known benchmark name (see --list) or the path of a benchmark file")
    p.add_argument("--list", action="store_true", help="list the known benchmarks and their usable record counts")
    p.add_argument("--dataset-format", choices=FORMATS, default=None,
                   help="format of the benchmark file (default: detected from its content)")
    p.add_argument("--store", type=store_dir, default=None, metavar="DIR",
                   help="store to run queries on (answer-level scoring). With --predictions and no --store only "
                        "query-level figures (plus answers the file gives) are computed; --translator/--oracle use "
                        "the default bundled store")
    add_endpoint_flags(p)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--predictions", type=Path, metavar="FILE.jsonl", help="predictions of any system, JSONL")
    mode.add_argument("--translator", metavar="NAME", choices=TRANSLATORS.names(),
                      help="run the engine on the questions with this translator (when neither --predictions nor "
                           "--oracle is given: setting KBQA_TRANSLATOR, else explore): "
                           f"{', '.join(TRANSLATORS.names())}; the scored questions are always left out of the case "
                           "bank")
    old = tuple(n for n in TRANSLATORS.names() if n != "model")  # the deprecated `--backend explore` spelling
    p.add_argument("--backend", metavar="NAME", choices=(*BACKENDS.names(), *old),
                   help=f"the model translator's provider ({', '.join(BACKENDS.names())}; implies --translator model)")
    p.add_argument("--model", default=None, help="model name or path of --backend, as for `kbqa ask`")
    p.add_argument("--model-url", default=None, metavar="URL",
                   help="OpenAI-compatible model server URL (…/v1) of --backend openai")
    p.add_argument("--replay", type=Path, default=None, metavar="FILE", help="replay JSONL of --translator replay")
    p.add_argument("--frontend", choices=FRONTENDS.names(), default="desq",
                   help="with --translator: the language the translator writes (default desq)")
    add_chooser_flag(p)
    mode.add_argument("--oracle", action="store_true",
                      help="replace the model by decompose(gold) with URIs removed: scores grounding + assembly")
    p.add_argument("--limit", type=integer(1, None, "a number of records"), default=None, metavar="N",
                   help="evaluate the first N records only")
    p.add_argument("--jobs", type=integer(1, 256, "a number of parallel questions"), default=1, metavar="N",
                   help="questions evaluated in parallel (threads)")
    p.add_argument("--out", type=Path, default=None, metavar="DIR",
                   help="output folder (default: .kbqa/eval/<benchmark>-<system>)")
    p.add_argument("--restart", action="store_true", help="discard the results already in --out and start over")
    p.add_argument("--no-execute", action="store_true",
                   help="generate only: ground and assemble against --store but run no query (query-level figures); "
                        "for benchmarks whose facts the store does not hold")
    p.add_argument("--timeout", type=seconds, default=None, help="seconds per query (default: settings, 10)")
    add_format_flag(p)
    return p


# ---- predictions file ---------------------------------------------------------------------------
def read_predictions(path: Path) -> dict[str, JsonObject]:
    """id -> prediction dict; a line that is not a JSON object or lacks an id is an error naming the line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise KBQAError(f"predictions file not found: {path}", stage="usage", file=str(path)) from None
    except (OSError, UnicodeDecodeError) as e:
        raise KBQAError(f"cannot read the predictions file: {e}", stage="parse", file=str(path)) from None
    out: dict[str, JsonObject] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except json.JSONDecodeError as e:
            raise KBQAError(f"not a JSON object: {e.msg} (column {e.colno})", stage="parse", file=str(path),
                            line=n) from None
        if not isinstance(d, dict):
            raise KBQAError("a prediction line must be a JSON object with \"id\"", stage="parse", file=str(path),
                            line=n)
        if d.get("id") is None or str(d["id"]).strip() == "":
            raise KBQAError("prediction without \"id\" (each line needs the id of its benchmark record)",
                            stage="parse", file=str(path), line=n)
        rid = str(d["id"])
        if rid in out:
            raise KBQAError(f"duplicate prediction id {rid!r}", stage="parse", file=str(path), line=n, qid=rid)
        for key in ("sparql", "desq"):
            if d.get(key) is not None and not isinstance(d[key], str):
                raise KBQAError(f"\"{key}\" must be a string", stage="parse", file=str(path), line=n, qid=rid)
        d["_line"] = n
        out[rid] = d
    return out


def prediction_from_engine(result: Result, text: str, gold: dict[str, str] | None = None) -> JsonObject:
    """An Engine `Result` -> prediction fields: SPARQL, stage errors, steps, and the grounding per
    placeholder (chosen IRI, candidate ids, and the gold IRI when known — the oracle knows it)."""
    d = result.to_dict()
    grounding = {}
    for g in d.get("grounding") or []:
        entry = {"kind": g.get("kind"), "predicted": g.get("chosen"),
                 "candidates": [c.get("id") for c in g.get("candidates") or []][:10]}
        if gold and g.get("name") in gold:
            entry["gold"] = gold[g["name"]]
        grounding[g["name"]] = entry
    return {"sparql": d.get("sparql"), "desq": text, "stage_errors": list(d.get("errors") or []),
            "steps": d.get("steps"), "grounding": grounding or None}


def _file_predictor(preds: dict[str, JsonObject], path: Path, store_dir: Path | None, engines: list[Engine],
                    engine_kw: dict[str, SettingValue]) -> Predictor:
    """A predictor over a predictions file; a `desq`-only line is compiled through kbqa.pipeline.Engine."""
    from eval.runner import Prediction

    needs_engine = [d for d in preds.values() if not d.get("sparql") and d.get("desq")]
    engine = None
    if needs_engine:
        from kbqa.pipeline import Engine  # lazily: eval never imports kbqa; only this CLI wires it

        engine = Engine.from_settings(resolve_store(store_dir), **engine_kw)
        engines.append(engine)

    def predict(record: Record) -> Prediction:
        d = preds.get(record.id)
        if d is None:
            return Prediction(stage_errors=[{"stage": "translate", "qid": record.id,
                                             "message": f"no prediction for this id in {path.name}"}])
        fields = {k: d.get(k) for k in ("sparql", "desq", "stage_errors", "steps", "grounding", "answers")}
        if not fields["sparql"] and fields["desq"] and engine is not None and not fields["stage_errors"]:
            gold = {n: g["gold"] for n, g in (fields["grounding"] or {}).items() if isinstance(g, dict) and g.get("gold")}
            fields = {**fields, **prediction_from_engine(engine.compile(fields["desq"], frontend="desq"),
                                                         fields["desq"], gold)}
        return Prediction.from_dict(fields)

    return predict


def _oracle_predictor(store_dir: Path, engines: list[Engine], closers: list[LabelMemory], engine_kw: dict[str, SettingValue],
                      execute: bool = True) -> Predictor:
    """decompose(gold) with the URIs removed from its grounding block, compiled by the Engine: what
    grounding + assembly alone achieve when the model's output is perfect but for the URIs."""
    from assembler.plan import Placeholder, walk
    from eval.runner import Prediction
    from kb_dumps.label_memory import LabelMemory
    from kb_dumps.layout import StoreLayout
    from kbqa.frontends.decompose import decompose
    from kbqa.frontends.desq import parse_desq, to_desq_text
    from kbqa.pipeline import Engine

    layout = StoreLayout.of(store_dir)
    labels = LabelMemory(layout.labels, readonly=True)
    closers.append(labels)
    engine = Engine.from_settings(store_dir, **engine_kw)
    engines.append(engine)

    def predict(record: Record) -> Prediction:
        if not record.sparql:
            return Prediction(stage_errors=[{"stage": "translate", "qid": record.id,
                                             "message": "no gold query to decompose (the oracle needs one)"}])
        dec = decompose(record.sparql, record.meta.get("kb") or engine.profile, labels)
        if not dec.ok or not dec.desq_text:
            return Prediction(stage_errors=[{"stage": "translate", "qid": record.id,
                                             "message": f"decompose could not express the gold query: {dec.error}"}])
        parsed = parse_desq(dec.desq_text)
        for line in parsed.grounding:
            line.uri = None
        for node in walk(parsed.plan):
            if isinstance(node, Placeholder):
                node.guessed_uri = None
        text = to_desq_text(parsed)
        result = engine.compile(text, frontend="desq", execute=execute)
        return Prediction.from_dict(prediction_from_engine(result, text, dec.mapping))

    return predict


def _engine_predictor(store_dir: Path, frontend: str, records: list[Record], engines: list[Engine],
                      engine_kw: dict[str, SettingValue]) -> Predictor:
    """The whole system: Engine.ask with the translator of `engine_kw` (its settings). The questions being scored
    are excluded from the case bank (by id and by text), so no scored question is ever its own example."""
    from eval.runner import Prediction
    from kbqa.pipeline import Engine

    engine = Engine.from_settings(store_dir, **engine_kw)
    engines.append(engine)  # closing the engine closes the translator it made
    engine.translator.exclude({r.id for r in records}, {q for r in records for q in r.questions.values()})

    def predict(record: Record) -> Prediction:
        result = engine.ask(record.question, frontend=frontend, qid=record.id)
        return Prediction.from_dict(prediction_from_engine(result, result.text))

    return predict


# ---- the verb -------------------------------------------------------------------------------------
def _list(args: argparse.Namespace) -> int:
    from eval.loaders import list_benchmarks
    from kbqa.settings import get_settings

    infos = list_benchmarks(cache_dir=get_settings().store.home / "cache")
    if args.format == "json":
        for info in infos:
            print_json(info.to_dict())
        return 0
    width = max(len(i.name) for i in infos)
    print(f"{'benchmark'.ljust(width)}  {'format':<15} {'records':>7} {'usable':>7}  description")
    for i in infos:
        line = f"{i.name.ljust(width)}  {i.format:<15} {i.count:>7} {i.usable:>7}  {i.description}"
        print(line + (f"  [error: {i.error}]" if i.error else ""))
    return 0


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", s).strip("-") or "run"


def run(args: argparse.Namespace) -> int:
    if args.list:
        return _list(args)
    if not args.benchmark:
        e = KBQAError("give a BENCHMARK (a name from `kbqa eval --list` or a file path), or --list", stage="usage")
        e.exit_code = EXIT_USAGE
        raise e
    return _run(args)


def _run_settings(fmt: str, records: list[Record], store_dir: Path | None, endpoint: str | None, timeout: float,
                  row_cap: int) -> JsonObject:
    """The run's `settings` (its manifest: a resumed run must match them), with a warning when the store's KB is
    not the benchmark's."""
    from kb_dumps.layout import StoreLayout

    kbs = {r.meta.get("kb") for r in records if r.usable}
    store_info = None
    if store_dir is not None:
        layout = StoreLayout.of(store_dir)
        store_info = str(layout.current)
        if kbs and layout.profile_name not in kbs and layout.profile_name != "generic":
            print(f"warning: the store's KB profile is {layout.profile_name}, the benchmark's queries are for "
                  f"{', '.join(sorted(str(k) for k in kbs))}: answers will not match", file=sys.stderr)
    elif not any(r.has_gold_answers for r in records):
        print("note: no --store and no gold answers in the file: query-level figures only", file=sys.stderr)
    settings: JsonObject = {"dataset_format": fmt, "store": store_info, "timeout_s": timeout, "row_cap": row_cap}
    remote = endpoint or ((StoreLayout.of(store_dir).endpoint or {}).get("url") if store_dir is not None else None)
    if remote:  # results from another endpoint are not mixed into a resumed run
        settings["endpoint"] = remote
    return settings


def _predictor(args: argparse.Namespace, name: str, records: list[Record], store_dir: Path | None,
               engine_kw: dict[str, SettingValue], settings: JsonObject, engines: list[Engine], closers: list[LabelMemory]
               ) -> tuple[Predictor, Path, int]:
    """(predictor, output folder, jobs) of the mode asked for: the oracle, the engine with a translator, or a
    predictions file; `settings` gets the system's name."""
    from kbqa.settings import get_settings

    cfg = get_settings().store
    jobs = max(1, args.jobs)
    if args.oracle:
        settings.update(system="oracle", mode="oracle")
        out = args.out or cfg.home / "eval" / f"{_slug(name)}-oracle"
        predictor = _oracle_predictor(store_dir, engines, closers, engine_kw,  # type: ignore[arg-type]
                                      execute=not args.no_execute)
        if jobs > 1:  # the Engine's label memory and grounder are not shared across threads
            print("note: --oracle runs with --jobs 1", file=sys.stderr)
            jobs = 1
    elif args.predictions is None:
        translator, backend = translator_choice(args)
        engine_kw.update(translator=translator, backend=backend, model=args.model, endpoint=args.model_url,
                         replay_path=args.replay, explore_chooser=args.explore_chooser)
        msettings = get_translator_settings(**{k: v for k, v in engine_kw.items()
                                               if k in ("translator", "backend", "model", "explore_chooser")})
        # a chooser is another system: its own name, and its own default folder (never resumed from explore's)
        system = msettings.who + (f"+chooser-{msettings.explore_chooser}" if msettings.translator == "explore" and
                                  msettings.explore_chooser else "")
        settings.update(system=f"engine:{system}:{args.frontend}", mode="engine")
        out = args.out or cfg.home / "eval" / f"{_slug(name)}-{_slug(system)}-{args.frontend}"
        predictor = _engine_predictor(store_dir, args.frontend, records, engines, engine_kw)  # type: ignore[arg-type]
        jobs = 1  # one translator and one Engine, used in turn
    else:
        preds = read_predictions(args.predictions)
        _check_ids(preds, records, name, args.predictions)
        settings.update(system=f"predictions:{args.predictions.name}", mode="predictions",
                        predictions=str(args.predictions.resolve()), predictions_sha256=_sha256(args.predictions))
        out = args.out or cfg.home / "eval" / f"{_slug(name)}-{_slug(args.predictions.stem)}"
        predictor = _file_predictor(preds, args.predictions, store_dir, engines, engine_kw)
        if engines:
            jobs = 1
    return predictor, out, jobs


def _run(args: argparse.Namespace) -> int:
    from eval.loaders import load, resolve_benchmark
    from eval.runner import run_eval
    from kb_dumps.store import open_store
    from kb_dumps.store_types import DEFAULT_ROW_CAP
    from kbqa.settings import get_settings

    cfg = get_settings().store
    path, known_fmt, name = resolve_benchmark(args.benchmark)
    fmt = args.dataset_format or known_fmt
    records = load(path, fmt, dataset=name)
    timeout = args.timeout or cfg.query_timeout_s
    row_cap = cfg.row_cap or DEFAULT_ROW_CAP
    if (args.oracle or args.predictions is not None) and (args.backend or args.model or args.replay):
        raise KBQAError("--backend / --model / --replay choose the translator of an engine run; they do not apply to "
                        "--predictions or --oracle", stage="usage")
    engine_mode = args.oracle or args.predictions is None  # the oracle and the translators need a store
    endpoint = args.sparql_endpoint
    if endpoint and engine_mode and args.store is None:
        raise KBQAError("--translator / --oracle with --endpoint need --store DIR for the label memory and index "
                        "(a remote store: `kbqa ingest --endpoint URL --store DIR`, then `kbqa index`)", stage="usage")
    store_dir = resolve_store(args.store) if engine_mode else args.store
    engine_kw = {"sparql_endpoint": endpoint, "endpoint_dialect": args.endpoint_dialect, "query_timeout_s": timeout,
                 "row_cap": row_cap}
    settings = _run_settings(fmt, records, store_dir, endpoint, timeout, row_cap)
    engines: list[Engine] = []
    closers: list[LabelMemory] = []
    predictor, out, jobs = _predictor(args, name, records, store_dir, engine_kw, settings, engines, closers)
    if args.no_execute:
        settings["execute"] = False
    store = (open_store(store_dir, endpoint=endpoint, timeout_s=timeout, row_cap=row_cap,
                        dialect=args.endpoint_dialect)
             if (store_dir is not None or endpoint) and not args.no_execute else None)
    try:
        summary = run_eval(records, predictor, out_dir=out, store=store, limit=args.limit, jobs=jobs,
                           settings=settings, progress=True, restart=args.restart, dataset_path=path, dataset=name)
    finally:
        for c in [*engines, *closers, *([store] if store is not None else [])]:
            c.close()
    if args.format == "json":
        print_json(summary.to_dict())
        return 0
    _print_text(summary, out)
    return 0


def _check_ids(preds: dict[str, JsonObject], records: list[Record], name: str, path: Path) -> None:
    ids = {r.id for r in records}
    matched = sum(1 for k in preds if k in ids)
    if preds and not matched:
        raise KBQAError(f"no prediction id matches a record id of {name} (first prediction id {next(iter(preds))!r}, "
                        f"first record id {records[0].id if records else None!r}): every question would score 0",
                        stage="parse", file=str(path))
    if matched < len(preds):
        print(f"warning: {len(preds) - matched} prediction id(s) are not in {name}; ignored", file=sys.stderr)


def _print_text(s: Summary, out: Path) -> None:
    a, q = s.answer or {}, s.query or {}
    print(f"{s.dataset} / {s.system}: {s.n_records} question(s), {s.n_usable} usable, {s.correct} fully correct "
          f"({100 * s.accuracy:.1f}%); {s.n_new} computed now, {s.n_records - s.n_new} resumed")
    if a.get("qald"):
        print(f"  answer F1  QALD-style {100 * a['qald']['f1']:.1f} (macro-F1 {100 * a['qald']['f1_qald']:.1f})   "
              f"strict {100 * a['strict']['f1']:.1f} (macro-F1 {100 * a['strict']['f1_qald']:.1f})   "
              f"over {a['n']} question(s); both empty {a['both_empty']} ({a['both_empty_unmatched']} unmatched)")
    if q:
        print(f"  query      exact match {100 * q['exact_match']:.1f}   triple F1 {100 * q['triples_f1']:.1f}   "
              f"entity F1 {100 * q['entities_f1']:.1f}   property F1 {100 * q['properties_f1']:.1f}")
    if s.gold_tied:
        print(f"  ties       {s.gold_tied} gold answer(s) one row of several tied on ORDER BY … LIMIT 1; fully correct "
              f"counting any tied row {100 * (s.accuracy_ties_accepted or 0.0):.1f}%")
    failed = ", ".join(f"{k} {v}" for k, v in s.stages.items() if v)
    print(f"  failures   {failed or 'none'}")
    print(f"  report     {out / 'report.html'}  (also results.jsonl, summary.json, report.md)")
