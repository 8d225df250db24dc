"""Benchmark loading: format detection, transparent .gz reading, and the registry of bundled benchmarks."""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from eval.loaders_formats import READERS, fail
from eval.records import Record
from kb_dumps.json_types import JsonObject, JsonValue
from kb_dumps.stage_errors import KBQAError

FORMATS = tuple(READERS)  # the names `--dataset-format` accepts
BENCHMARK_DIR = Path(__file__).resolve().parent / "benchmarks"

# name -> (file under eval/benchmarks, format, what it is). Files come from scripts/copy_benchmarks.py.
# The six Spider4SPARQL dev databases that come with a complete KG.
SPIDER4SPARQL_DBS = ("battle_death", "car_1", "concert_singer", "employee_hire_evaluation", "pets_1", "poker_player")

BENCHMARKS: dict[str, tuple[str, str, str]] = {
    "lcquad2-dev": ("lcquad2/dev.json.gz", "lcquad2", "LC-QuAD 2.0 dev (Wikidata)"),
    "wwq-dev": ("wikiwebquestions/dev.json.gz", "wwq", "WikiWebQuestions dev, gold result bindings (Wikidata)"),
    "wwq-train": ("wikiwebquestions/train.json.gz", "wwq", "WikiWebQuestions train (Wikidata)"),
    "wwq-train-alignments": ("wikiwebquestions/wikisp_train_alignments.json.gz", "wwq",
                             "WikiSP train alignments: entity hints, SPARQL with property names"),
    "qald7-train": ("qald/qald-7-train-en-wikidata.json.gz", "qald", "QALD-7 task 4 train (Wikidata)"),
    "qald9plus-train": ("qald/qald-9-plus-train-en.json.gz", "qald", "QALD-9-plus train, English (Wikidata)"),
    "rubq1-dev": ("rubq/RuBQ_1.0_dev.json.gz", "rubq", "RuBQ 1.0 dev, Russian + English (Wikidata)"),
    "rubq2-dev": ("rubq/RuBQ_2.0_dev.json.gz", "rubq", "RuBQ 2.0 dev, Russian + English (Wikidata)"),
    "simplequestions-valid": ("simplequestions-wikidata/valid_answerable.txt.gz", "simplequestions",
                              "SimpleQuestions-Wikidata valid, answerable triples"),
    "simplequestions-valid-all": ("simplequestions-wikidata/valid.txt.gz", "simplequestions",
                                  "SimpleQuestions-Wikidata valid, all (some triples absent from Wikidata)"),
    "simplequestions-train": ("simplequestions-wikidata/train_answerable.txt.gz", "simplequestions",
                              "SimpleQuestions-Wikidata train, answerable triples"),
    "bestiary": ("bestiary/beastiary_with_qald_format.json.gz", "qald", "BESTIARY (fantasy-creature KG), QALD JSON"),
    "grailqa-sample": ("freebase/grailqa_sample_1000.json.gz", "grailqa", "GrailQA sample of 1,000 (Freebase)"),
    # Spider4SPARQL dev: each over its own small KG, `spider4sparql/kgs/<db>.ttl.gz` (ingest with --profile generic)
    **{f"spider4sparql-{db}": (f"spider4sparql/{db}.json.gz", "qald",
                               f"Spider4SPARQL dev, {db} (its KG: spider4sparql/kgs/{db}.ttl.gz)")
       for db in SPIDER4SPARQL_DBS},
    # Spider4SPARQL train: 146 other databases, no dev KG among them (the generic profile's default case bank)
    "spider4sparql-train": ("spider4sparql/train.json.gz", "spider4sparql",
                            "Spider4SPARQL train, 146 databases other than the six dev KGs (no KG bundled)"),
}


def read_text(path: Path) -> str:
    """A file's text, gunzipped when it is gzip (by its magic bytes, whatever its name)."""
    try:
        with open(path, "rb") as f:
            head = f.read(2)
        opener = gzip.open if head == b"\x1f\x8b" else open
        with opener(path, "rt", encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError as e:
        raise KBQAError(f"benchmark file not found: {path}", stage="usage", file=str(path)) from e
    except (OSError, UnicodeDecodeError, EOFError) as e:
        raise KBQAError(f"cannot read the file as UTF-8 text (or gzip of it): {e}", stage="parse",
                        file=str(path)) from e


def _parse_json(path: Path, text: str) -> JsonValue:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise KBQAError(f"not valid JSON: {e.msg} (column {e.colno})", stage="parse", file=str(path),
                        line=e.lineno) from e


def _json_format(data: JsonValue) -> str | None:
    if isinstance(data, dict):
        return "qald" if isinstance(data.get("questions"), list) else None
    if not isinstance(data, list) or not data or not isinstance(data[0], dict):
        return None
    keys = set(data[0])
    if "sparql_wikidata" in keys:
        return "lcquad2"
    if "question_text" in keys and ("uid" in keys or "question_eng" in keys):
        return "rubq"
    if "sparql_query" in keys or "s_expression" in keys or {"ID", "webqsp_ID"} & keys:
        return "grailqa"
    if "utterance" in keys or {"input", "output", "sparql"} <= keys:
        return "wwq"
    if {"kg_name", "question", "query"} <= keys:
        return "spider4sparql"
    if "question" in keys and ("sparql" in keys or "query" in keys):
        return "qald"
    return None


_SQ_LINE = re.compile(r"Q\d+\t[PR]\d+\tQ\d+\t")


def _detect(path: Path, text: str) -> tuple[str, JsonValue]:
    stripped = text.lstrip()
    if stripped[:1] in ("[", "{"):
        data = _parse_json(path, text)
        fmt = _json_format(data)
        if fmt:
            return fmt, data
        raise KBQAError(f"JSON file of an unknown benchmark format; give it with --dataset-format, one of "
                        f"{', '.join(FORMATS)}", stage="parse", file=str(path))
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    if _SQ_LINE.match(first):
        return "simplequestions", None
    raise KBQAError(f"unknown benchmark format (neither JSON nor SimpleQuestions TSV); give it with "
                    f"--dataset-format, one of {', '.join(FORMATS)}", stage="parse", file=str(path))


def detect_format(path: str | Path) -> str:
    """The format name of a benchmark file (see FORMATS), from its content."""
    p = Path(path)
    return _detect(p, read_text(p))[0]


def load(path: str | Path, fmt: str | None = None, *, dataset: str | None = None, check_syntax: bool = True,
         limit: int | None = None) -> list[Record]:
    """Load every record of a benchmark file (`.gz` read transparently), detecting the format unless given.

    Records that cannot be evaluated come back with `usable=False` and a reason; a malformed file
    raises KBQAError (stage "parse") naming the file and the record id (or line, for TSV).
    """
    p = Path(path)
    text = read_text(p)
    name = dataset or p.name.split(".")[0]
    if fmt is not None and fmt not in READERS:
        raise KBQAError(f"unknown dataset format {fmt!r}; choose one of {', '.join(FORMATS)}", stage="usage")
    if fmt is None:
        fmt, data = _detect(p, text)
    else:
        data = None
    if fmt == "simplequestions":
        lines = text.splitlines()
        records = READERS[fmt](p, lines[:limit] if limit else lines, name, check_syntax)
    else:
        if data is None:
            data = _parse_json(p, text)
        if fmt == "qald" and isinstance(data, dict):
            if limit and isinstance(data.get("questions"), list):
                data = {**data, "questions": data["questions"][:limit]}
        elif not isinstance(data, list):
            raise fail(p, f"a {fmt} file must hold a JSON list of records")
        elif limit:
            data = data[:limit]
        records = READERS[fmt](p, data, name, check_syntax)
    seen: set[str] = set()
    for r in records:
        if r.id in seen:  # ids key resumable runs and results files: they must be unique
            raise fail(p, "duplicate record id", r.id)
        seen.add(r.id)
        r.meta.setdefault("format", fmt)
    return records


def resolve_benchmark(name_or_path: str | Path) -> tuple[Path, str | None, str]:
    """A registry name or a file path -> (path, format or None to detect, dataset name)."""
    key = str(name_or_path)
    if key in BENCHMARKS:
        rel, fmt, _ = BENCHMARKS[key]
        return BENCHMARK_DIR / rel, fmt, key
    p = Path(key)
    if p.exists():
        return p, None, p.name.split(".")[0]
    raise KBQAError(f"{key!r} is neither a known benchmark ({', '.join(BENCHMARKS)}) nor an existing file",
                    stage="usage")


def load_benchmark(name_or_path: str | Path, fmt: str | None = None, **kw: str | bool | int | None) -> list[Record]:
    """Load a registry benchmark by name, or any file in a supported format."""
    path, known_fmt, name = resolve_benchmark(name_or_path)
    kw.setdefault("dataset", name)
    return load(path, fmt or known_fmt, **kw)


@dataclass
class BenchmarkInfo:
    """One line of `kbqa eval --list`."""

    name: str
    path: str
    format: str
    count: int
    usable: int
    description: str
    error: str | None = None

    def to_dict(self) -> JsonObject:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: JsonObject) -> BenchmarkInfo:
        return cls(**d)


def _count_one(task: tuple[str, str, str, bool]) -> tuple[int, int, str | None]:
    """(records, usable records, error) of one registry file; run in a worker process by `_count_all`."""
    name, path, fmt, check_syntax = task
    try:
        recs = load(path, fmt, dataset=name, check_syntax=check_syntax)
    except KBQAError as e:
        return 0, 0, str(e)
    return len(recs), sum(r.usable for r in recs), None


def _count_all(tasks: list[tuple[str, str, str, bool]]) -> list[tuple[int, int, str | None]]:
    """`_count_one` over the tasks, in order. With the syntax check every gold query goes through rdflib (CPU-bound,
    minutes), so the files are then counted in one process per core (spawned: no state forked from a caller);
    without it reading takes seconds, less than starting the workers."""
    import multiprocessing
    import os
    from concurrent.futures import ProcessPoolExecutor

    workers = min(os.cpu_count() or 1, len(tasks))
    if workers <= 1 or not any(t[3] for t in tasks):
        return [_count_one(t) for t in tasks]
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(_count_one, tasks))


def list_benchmarks(check_syntax: bool = True, cache_dir: str | Path | None = None) -> list[BenchmarkInfo]:
    """Every registry benchmark with its record and usable-record counts (a broken file reports its error).

    Counting parses every gold query (minutes for all sets), so with `cache_dir` the counts are kept
    in `benchmark_counts.json` keyed by the file's sha256 and the loader code's hash."""
    import hashlib

    cache_path = Path(cache_dir) / "benchmark_counts.json" if cache_dir else None
    cache: dict = {}
    if cache_path and cache_path.is_file():
        try:
            cache = json.loads(cache_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            cache = {}
    code = hashlib.sha256(b"".join(Path(m).read_bytes() for m in sorted(Path(__file__).parent.glob("loaders*.py"))))
    keys: dict[str, str | None] = {}
    counted: dict[str, tuple[int, int, str | None]] = {}
    for name, (rel, _fmt, _desc) in BENCHMARKS.items():
        path = BENCHMARK_DIR / rel
        keys[name] = None
        if cache_path and path.is_file():
            keys[name] = f"{name}:{check_syntax}:{code.hexdigest()[:16]}:{hashlib.sha256(path.read_bytes()).hexdigest()}"
            if keys[name] in cache:
                counted[name] = (cache[keys[name]][0], cache[keys[name]][1], None)
    todo = [(name, str(BENCHMARK_DIR / rel), fmt, check_syntax) for name, (rel, fmt, _) in BENCHMARKS.items()
            if name not in counted]
    counted.update(zip([t[0] for t in todo], _count_all(todo), strict=True))
    out = []
    for name, (rel, fmt, desc) in BENCHMARKS.items():
        count, usable, error = counted[name]
        out.append(BenchmarkInfo(name, str(BENCHMARK_DIR / rel), fmt, count, usable, desc, error=error))
        if keys[name] and error is None:
            cache[keys[name]] = [count, usable]
    if cache_path and cache:
        try:
            cache_path.parent.mkdir(parents=True, exist_ok=True)
            cache_path.write_text(json.dumps(cache), encoding="utf-8")
        except OSError:
            pass  # a cache that cannot be written only costs time
    return out
