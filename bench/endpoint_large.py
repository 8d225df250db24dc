"""`explore` over a remote SPARQL endpoint against the local store: Virtuoso and `oxigraph serve-read-only`, on small
Spider4SPARQL dev KGs and on one endpoint holding all Spider train KGs and the dev KGs together (issue 25 item 3).

  nice -n 10 .venv/bin/python -m bench.endpoint_large small [--dbs concert_singer,pets_1] [--n N]
  nice -n 10 .venv/bin/python -m bench.endpoint_large large --train-kgs DIR [--engines oxigraph,virtuoso] [--n 7]

`small`: for each dev KG, the local store (`kbqa ingest` of the dump) and a remote store directory over a private
Virtuoso (kb_dumps/virtuoso_server.py, Debian's defaults: ResultSetMaxRows 10,000) loaded with the same dump, its
label memory from `ingest_endpoint`; the KG's dev questions through `Engine` + `explore` (the shipped ranker) on
both. `large`: one store / one endpoint with every `*.nt.gz` of DIR (the Spider train KGs; ../shared/data/
spider4sparql/train_kgs on the maintainers' machine: a bench input, never a run-time dependency) plus the six dev
KGs; the label memory paged out of the endpoint, the schema memory built over it in a fresh process (seconds,
peak RSS), then the first N dev questions of each dev KG asked there, against the per-KG local stores.
Accuracy is the share of questions whose answer F1 is 1 (eval/answer_metrics.py, the files' gold answers), as
bench/explore.py reports it; p50/p99 are seconds per question (`Engine.ask`, warm). Not a test: prints figures
(JSON with --out).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.explore import SPIDER_KGS, ask_each, explore, gold_answers, predicted, summary
from eval.answer_metrics import score_question
from eval.loaders import SPIDER4SPARQL_DBS, load_benchmark
from kb_dumps.endpoint_ingest import ingest_endpoint
from kb_dumps.ingest import ingest
from kb_dumps.layout import StoreLayout
from kb_dumps.oxigraph_server import OxigraphServer
from kb_dumps.virtuoso_server import VirtuosoServer

ROOT = Path(__file__).resolve().parents[1]

SCHEMA_IN_A_FRESH_PROCESS = """
import json, resource, sys, time
from grounding.schema import build_schema
from kb_dumps.label_memory import LabelMemory
from kb_dumps.layout import StoreLayout
from kb_dumps.profiles import get_profile
from kb_dumps.store import open_store
store = sys.argv[1]
layout = StoreLayout.of(store)
memory = LabelMemory(layout.labels, readonly=True)
t0 = time.perf_counter()
with open_store(store, timeout_s=600) as kb:
    schema = build_schema(kb, get_profile(layout.profile_name), memory)
seconds = time.perf_counter() - t0
schema.save(store)
print(json.dumps({"seconds": seconds, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  **{k: schema.meta[k] for k in ("classes", "predicates", "values")}}))
"""


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def build_schema_measured(store: Path) -> dict[str, Any]:
    """The schema memory of `store` built in a fresh process: seconds, peak RSS, sizes."""
    out = subprocess.run([sys.executable, "-c", SCHEMA_IN_A_FRESH_PROCESS, str(store)], capture_output=True,
                         text=True, cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if out.returncode != 0:
        raise RuntimeError(f"schema build failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def questions(dbs: list[str], n: int | None) -> dict[str, list]:
    return {db: [r for r in load_benchmark(f"spider4sparql-{db}", check_syntax=False) if r.usable][:n] for db in dbs}


def local_store(db: str, work: Path) -> Path:
    path = work / "local" / db
    if not (path / "current").exists():
        ingest([SPIDER_KGS / f"{db}.ttl.gz"], path, profile="generic", progress=False)
    return path


def remote_store(url: str, path: Path, engine: str, labels_of: Path | None = None) -> dict[str, Any]:
    """A remote store directory for the endpoint at `url` at `path`, then its schema memory (measured). Its label
    memory is paged out of the endpoint (`ingest_endpoint`), or with `labels_of` the local store's (the same rows
    on the small KGs, where both are built: the large bench can skip the endpoint's ids phase)."""
    t0 = time.perf_counter()
    if labels_of is None:
        rep = ingest_endpoint(url, path, profile="generic", progress=False, replace=True)
        out: dict[str, Any] = {"label_rows": rep.label_rows, "ingest_s": round(time.perf_counter() - t0, 2),
                               "pages": rep.pages, "phases": rep.phases}
    else:
        layout = StoreLayout.of(labels_of)
        path.mkdir(parents=True, exist_ok=True)  # a schema memory built by an earlier run is kept (--work)
        if not (path / "labels.sqlite").exists():
            (path / "labels.sqlite").symlink_to(layout.labels)
        manifest = {**layout.manifest(), "endpoint": {"url": url, "dialect": engine}, "sources": [], "triples": 0}
        (path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
        out = {"label_memory": f"the local store's ({labels_of.name})"}
    if labels_of is None or not (path / "schema" / "schema.json").is_file():
        out["schema"] = build_schema_measured(path)
    return out


def run_scored(name: str, records: list, store_dir: Path, translator: Any) -> list[dict]:
    """bench/explore.py's run_set, each answer scored twice: against the file's gold answers (`f1`) and against the
    gold query run on the same store (`f1_same_kg`): on the merged KG a class shared by several Spider databases
    (`…/ontop/student`) holds all their rows, so the file's per-database answer is no longer the KG's answer."""
    rows = []
    for rec, res, seconds, store in ask_each(records, store_dir, translator):
        pred = predicted(res)
        f1 = score_question(gold_answers(rec, store, "generic", False), pred, kb="generic").qald.f1
        same = score_question(gold_answers(rec, store, "generic", True), pred, kb="generic").qald.f1
        rows.append({"set": name, "id": rec.id, "f1": f1, "f1_same_kg": same, "seconds": seconds,
                     "stage": None if res.ok else str(res.failed_stage)})
    return rows


def ask_all(name: str, recs: list, store: Path, budgets: list[float], rows: dict[str, list[dict]]) -> None:
    """The questions through `explore` once per search budget; rows["<setup>@<budget>s"] += the results."""
    for b in budgets:
        rows.setdefault(f"{name}@{b:g}s", []).extend(
            run_scored(recs[0].id.rsplit("-", 1)[0] if recs else name, recs, store, explore(store, budget_s=b)))


def compare(name: str, rows: dict[str, list[dict]]) -> dict[str, Any]:
    """Summaries per setup and the questions whose F1 differs between the first setup and each other."""
    table = {k: summary(v) for k, v in rows.items()}
    for k, v in rows.items():
        if v and "f1_same_kg" in v[0]:
            table[k]["perfect_gold_query_same_kg"] = round(sum(r["f1_same_kg"] >= 0.999 for r in v) / len(v), 3)
    for k, v in rows.items():  # against the local store at the same budget
        base = "local@" + k.split("@")[-1] if "@" in k else None
        local = next((r for name, r in rows.items() if name.endswith(base or "-")), None) if base else None
        if local is not None and local is not v:
            table[k]["differ_from_local"] = sum(abs(a["f1"] - b["f1"]) > 1e-9 for a, b in zip(local, v, strict=True))
    for k, s in table.items():
        print(f"{name:16} {k:22} {json.dumps(s)}")
    return table


# ---- small: Virtuoso vs the local store on single dev KGs -------------------------------------------------------
def bench_small(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    report: dict[str, Any] = {}
    recs = questions(args.dbs, args.n)
    every: dict[str, list[dict]] = {}
    for db in args.dbs:
        local = local_store(db, work)
        rows: dict[str, list[dict]] = {}
        ask_all("local", recs[db], local, args.budgets, rows)
        report[db] = {}
        for engine in args.engines:
            if engine == "oxigraph":
                server: Any = OxigraphServer(local, timeout_s=args.engine_timeout)
            else:
                server = VirtuosoServer([SPIDER_KGS / f"{db}.ttl.gz"], folder=work / f"virtuoso-{db}",
                                        timeout_s=args.engine_timeout)
            with server as srv:
                remote = work / f"remote-{engine}" / db
                report[db][engine] = remote_store(srv.url, remote, engine)
                if engine == "virtuoso":
                    report[db][engine].update(triples=srv.triples, load_s=round(srv.load_seconds, 2))
                ask_all(engine, recs[db], remote, args.budgets, rows)
        report[db]["table"] = compare(db, rows)
        for k, v in rows.items():
            every.setdefault(k, []).extend(v)
    report["all"] = compare("+".join(args.dbs), every)
    return report


# ---- large: every train KG and the dev KGs behind one endpoint ----------------------------------------------------
def sources(train_kgs: Path) -> list[Path]:
    train = sorted(train_kgs.glob("*.nt.gz"))
    if not train:
        raise SystemExit(f"no *.nt.gz under {train_kgs}")
    return [*train, *(SPIDER_KGS / f"{db}.ttl.gz" for db in SPIDER4SPARQL_DBS)]


def bench_large(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    files = sources(args.train_kgs)
    report: dict[str, Any] = {"files": len(files)}
    recs = questions(list(SPIDER4SPARQL_DBS), args.n)
    rows: dict[str, list[dict]] = {}
    for db in SPIDER4SPARQL_DBS:
        ask_all("per-KG local", recs[db], local_store(db, work), args.budgets, rows)
    print(json.dumps({k: summary(v) for k, v in rows.items()}))
    big = work / "big-local"
    if not (big / "current").exists():
        t0 = time.perf_counter()
        rep = ingest(files, big, profile="generic", progress=False)
        report["oxigraph_load"] = {"triples": rep.triples_added, "seconds": round(time.perf_counter() - t0, 1),
                                   "label_rows": rep.label_rows}
        print(json.dumps(report["oxigraph_load"]))
    for engine in args.engines:
        remote = work / f"big-remote-{engine}"
        if engine == "oxigraph":
            server: Any = OxigraphServer(big, timeout_s=args.engine_timeout)
        else:
            server = VirtuosoServer(files, folder=work / "virtuoso-big", buffers=args.virtuoso_buffers,
                                    timeout_s=args.engine_timeout)
        with server as srv:
            if engine == "virtuoso":
                report["virtuoso_load"] = {"triples": srv.triples, "seconds": round(srv.load_seconds, 1)}
                print(json.dumps(report["virtuoso_load"]))
            report[f"{engine}_remote"] = remote_store(srv.url, remote, engine,
                                                      big if args.label_memory == "local" else None)
            print(json.dumps(report[f"{engine}_remote"]))
            for db in SPIDER4SPARQL_DBS:
                ask_all(engine, recs[db], remote, args.budgets, rows)
            print(json.dumps({k: summary(v) for k, v in rows.items() if k.startswith(engine)}))
    report["table"] = compare("all dev KGs", rows)
    report["per_db"] = {db: compare(db, {k: [r for r in v if r["set"] == db] for k, v in rows.items()})
                        for db in SPIDER4SPARQL_DBS}
    return report


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=["small", "large"])
    p.add_argument("--dbs", default="concert_singer,pets_1", type=lambda v: v.split(","), help="small: dev KGs")
    p.add_argument("--n", type=int, default=None, help="at most N questions per dev KG (default: all)")
    p.add_argument("--train-kgs", type=Path, default=ROOT.parent / "shared" / "data" / "spider4sparql" / "train_kgs")
    p.add_argument("--engines", default="oxigraph,virtuoso", type=lambda v: v.split(","))
    p.add_argument("--label-memory", choices=["endpoint", "local"], default="endpoint",
                   help="large: page the label memory out of the endpoint, or reuse the big local store's")
    p.add_argument("--budgets", default="2", type=lambda v: [float(x) for x in v.split(",")],
                   help="explore's search budgets in seconds (2: the default); each setup runs once per budget")
    p.add_argument("--engine-timeout", type=int, default=600, help="the servers' own query time limit, seconds")
    p.add_argument("--virtuoso-buffers", type=int, default=100_000, help="large: 8 KB pages of Virtuoso's cache")
    p.add_argument("--work", type=Path, default=None, help="scratch folder (kept when given: stores are reused)")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    work = args.work or Path(tempfile.mkdtemp(prefix="kbqa-bench-endpoint-large-"))
    work.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"load_average_start": load_average(), "cpus": os.cpu_count()}
    print(f"load average at start: {report['load_average_start']} ({os.cpu_count()} cores)")
    t0 = time.perf_counter()
    try:
        report[args.mode] = (bench_small if args.mode == "small" else bench_large)(args, work)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    report["seconds"] = round(time.perf_counter() - t0, 1)
    report["peak_rss_mb_bench"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    report["load_average_end"] = load_average()
    print(f"load average at end: {report['load_average_end']}; {report['seconds']} s")
    if args.out:
        args.out.write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
