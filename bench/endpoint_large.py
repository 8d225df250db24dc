"""`explore` over a remote SPARQL endpoint against the local store: Virtuoso and `oxigraph serve-read-only`, on small
Spider4SPARQL dev KGs and on one endpoint holding all Spider train KGs and the dev KGs together (issue 25 item 3).

  nice -n 10 .venv/bin/python -m bench.endpoint_large small [--dbs concert_singer,pets_1] [--n N]
  nice -n 10 .venv/bin/python -m bench.endpoint_large large --train-kgs DIR [--engines oxigraph,virtuoso] [--n 7]
  nice -n 10 .venv/bin/python -m bench.endpoint_large ingest --train-kgs DIR [--engines oxigraph] [--page-size N]
  nice -n 10 .venv/bin/python -m bench.endpoint_large why --train-kgs DIR [--dbs employee_hire_evaluation,pets_1] [--n 7]

`small`: for each dev KG, the local store (`kbqa ingest` of the dump) and a remote store directory over a private
Virtuoso (kb_dumps/virtuoso_server.py, Debian's defaults: ResultSetMaxRows 10,000) loaded with the same dump, its
label memory from `ingest_endpoint`; the KG's dev questions through `Engine` + `explore` (the shipped ranker) on
both. `large`: one store / one endpoint with every `*.nt.gz` of DIR (the Spider train KGs; ../shared/data/
spider4sparql/train_kgs on the maintainers' machine: a bench input, never a run-time dependency) plus the six dev
KGs; the label memory paged out of the endpoint, the schema memory built over it in a fresh process (seconds,
peak RSS), then the first N dev questions of each dev KG asked there, against the per-KG local stores.
`ingest`: `kbqa ingest --endpoint` of that merged endpoint's label memory in a fresh process (wall time, peak RSS
of the client and of the oxigraph server, seconds per phase and the slowest page), its rows against the local
label memory built from the same files in the same run's work folder (equal rows, rows only on one side, which
fields differ); with `--whole-kg-page` also one page of the former whole-KG ids query, timed, as the baseline.
`why`: the questions whose answer is right on the per-KG store and not on the merged one (scored against the gold
query run on each store), with both queries' classes and predicates and what explore linked on the merged store
(the merged local store: the same engine and data as the oxigraph endpoint, without HTTP).
Accuracy is the share of questions whose answer F1 is 1 (eval/answer_metrics.py, the files' gold answers), as
bench/explore.py reports it, beside it accuracy against the gold query run on the same store
(`perfect_gold_query_same_kg`) and with any row tied with a gold `ORDER BY … LIMIT 1` first place accepted
(`perfect_ties_accepted`: engines break ties differently); p50/p99 are seconds per question (`Engine.ask`, warm).
Not a test: prints figures (JSON with --out).
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

from bench.explore import SPIDER_KGS, ask_each, explore, f1_ties_accepted, gold_answers, predicted, summary
from eval.answer_metrics import score_question
from eval.loaders import SPIDER4SPARQL_DBS, load_benchmark
from kb_dumps.endpoint_ingest import ingest_endpoint
from kb_dumps.ingest import ingest
from kb_dumps.layout import StoreLayout
from kb_dumps.oxigraph_server import OxigraphServer
from kb_dumps.virtuoso_server import VirtuosoServer

ROOT = Path(__file__).resolve().parents[1]

INGEST_IN_A_FRESH_PROCESS = """
import json, resource, sys, time
from kb_dumps.endpoint_ingest import ingest_endpoint
t0 = time.perf_counter()
rep = ingest_endpoint(sys.argv[1], sys.argv[2], profile="generic", page_size=int(sys.argv[3]), replace=True,
                      progress=False)
print(json.dumps({"seconds": round(time.perf_counter() - t0, 1), "label_rows": rep.label_rows, "pages": rep.pages,
                  "rows_read": rep.rows_read, "phases": rep.phases,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

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
        gold = gold_answers(rec, store, "generic", False)
        f1 = score_question(gold, pred, kb="generic").qald.f1
        same = score_question(gold_answers(rec, store, "generic", True), pred, kb="generic").qald.f1
        # the file's row of a first place several rows share, or any of them read on this engine (eval/ties.py)
        f1_tied, n_tied = f1_ties_accepted(rec, gold, pred, f1, store, "generic")
        rows.append({"set": name, "id": rec.id, "f1": f1, "f1_same_kg": same, "f1_tied": f1_tied,
                     "tied": n_tied, "seconds": seconds, "stage": None if res.ok else str(res.failed_stage)})
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


# ---- why: what explore chose on the merged KG where the per-KG store was right ---------------------------------
def bench_why(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    import re

    big = work / "big-local"
    if not (big / "current").exists():
        ingest(sources(args.train_kgs), big, profile="generic", progress=False)
    if not (StoreLayout.of(big).current / "schema" / "schema.json").is_file():
        print(json.dumps({"schema": build_schema_measured(big)}))
    recs = questions(args.dbs, args.n)
    iris = re.compile(r"<(http://valuenet/ontop/[^>]*)>")
    out: dict[str, Any] = {"questions": 0, "right_per_kg": 0, "right_merged": 0, "lost": []}
    for db in args.dbs:
        per: dict[str, tuple[float, str | None]] = {}
        local = local_store(db, work)
        for rec, res, _s, store in ask_each(recs[db], local, explore(local)):
            per[rec.id] = (score_question(gold_answers(rec, store, "generic", True), predicted(res), kb="generic")
                           .qald.f1, res.sparql)
        for rec, res, _s, store in ask_each(recs[db], big, explore(big)):
            f1 = score_question(gold_answers(rec, store, "generic", True), predicted(res), kb="generic").qald.f1
            out["questions"] += 1
            out["right_per_kg"] += per[rec.id][0] >= 0.999
            out["right_merged"] += f1 >= 0.999
            if per[rec.id][0] >= 0.999 > f1:
                details = (res.translation or {}).get("details") or {}
                linked = [(lk["kind"], lk["iri"].rsplit("/", 1)[-1], lk["text"], round(lk["score"], 2))
                          for lk in details.get("linked", []) if lk["kind"] in ("class", "predicate", "value")]
                lost = {"id": rec.id, "f1_merged": round(f1, 3),
                        "per_kg": sorted(set(iris.findall(per[rec.id][1] or ""))),
                        "merged": sorted(set(iris.findall(res.sparql or ""))),
                        "search": details.get("search"), "linked": linked[:12]}
                out["lost"].append(lost)
                print(json.dumps(lost))
    print(json.dumps({k: v for k, v in out.items() if k != "lost"}))
    return out


# ---- ingest: the label memory paged out of the merged endpoint, against the local one ------------------------------
def compare_memories(local: Path, remote: Path) -> dict[str, Any]:
    """Merge-join of two label memories by id (both streamed in id order): equal rows, rows on one side only, and
    how many rows differ in each field (aliases compared as sets)."""
    import sqlite3

    cols = "id, kind, label, aliases, description, popularity"
    fields = cols.split(", ")[1:]

    def rows(path: Path):  # noqa: ANN202
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        for r in con.execute(f"SELECT {cols} FROM labels ORDER BY id"):  # noqa: S608 - fixed columns
            yield r[0], (r[1], r[2], sorted(json.loads(r[3])), r[4], r[5])
        con.close()

    out: dict[str, Any] = {"local_rows": 0, "endpoint_rows": 0, "equal": 0, "only_local": 0, "only_endpoint": 0,
                           "differ": dict.fromkeys(fields, 0), "examples": []}
    a, b = rows(local), rows(remote)
    x, y = next(a, None), next(b, None)
    while x is not None or y is not None:
        if y is None or (x is not None and x[0] < y[0]):
            out["only_local"] += 1
            out["local_rows"] += 1
            x = next(a, None)
        elif x is None or y[0] < x[0]:
            out["only_endpoint"] += 1
            out["endpoint_rows"] += 1
            y = next(b, None)
        else:
            out["local_rows"] += 1
            out["endpoint_rows"] += 1
            if x[1] == y[1]:
                out["equal"] += 1
            else:
                for f, u, v in zip(fields, x[1], y[1], strict=True):
                    out["differ"][f] += u != v
                if len(out["examples"]) < 5:
                    out["examples"].append({"id": x[0], "local": x[1], "endpoint": y[1]})
            x, y = next(a, None), next(b, None)
    return out


def server_peak_rss_mb(pid: int) -> float | None:
    """The server process's peak resident memory (VmHWM), read before it stops."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def whole_kg_ids_page(url: str, page_size: int, timeout_s: float) -> dict[str, Any]:
    """One page of the former ids query (every IRI subject or object of the whole KG, sorted by STR): the baseline
    a per-predicate-group page replaces."""
    from kb_dumps.endpoint import EndpointStore
    from kb_dumps.endpoint_queries import profile_values, render
    from kb_dumps.profiles import get_profile
    from kb_dumps.stage_errors import KBQAError

    text = render("""SELECT DISTINCT ?key WHERE {
  { ?key ?p ?o FILTER(!(isLiteral(?o) && ?p IN ({{text_predicate_list}}))) }
  UNION { ?s ?p ?key FILTER(isIRI(?s)) }
  FILTER(isIRI(?key))
  FILTER(STR(?key) > "")
} ORDER BY STR(?key) LIMIT {{limit}}""", {**profile_values(get_profile("generic"), ("en",)), "limit": str(page_size)})
    t0 = time.perf_counter()
    with EndpointStore(url, timeout_s=timeout_s, row_cap=page_size) as kb:
        try:
            n = len(kb.query(text).rows)
            return {"rows": n, "seconds": round(time.perf_counter() - t0, 1)}
        except KBQAError as e:
            return {"error": e.info.message[:200], "seconds": round(time.perf_counter() - t0, 1)}


def bench_ingest(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    big = work / "big-local"
    if not (big / "current").exists():
        ingest(sources(args.train_kgs), big, profile="generic", progress=False)
    report: dict[str, Any] = {"local_label_rows": len_memory(StoreLayout.of(big).labels)}
    for engine in args.engines:
        if engine != "oxigraph":
            server: Any = VirtuosoServer(sources(args.train_kgs), folder=work / "virtuoso-big",
                                         buffers=args.virtuoso_buffers, timeout_s=args.engine_timeout)
        else:
            server = OxigraphServer(big, timeout_s=args.engine_timeout)
        with server as srv:
            out: dict[str, Any] = {}
            remote = work / f"ingest-{engine}"
            run = subprocess.run([sys.executable, "-c", INGEST_IN_A_FRESH_PROCESS, srv.url, str(remote),
                                  str(args.page_size)], capture_output=True, text=True, cwd=ROOT,
                                 env={**os.environ, "HF_HUB_OFFLINE": "1"})
            pid = srv.proc.pid if srv.proc is not None else None
            out["server_peak_rss_mb"] = server_peak_rss_mb(pid) if pid else None
            if run.returncode != 0:
                out["error"] = run.stderr.strip().splitlines()[-1][:400] if run.stderr.strip() else run.returncode
                report[engine] = out
                print(json.dumps(out))
                continue
            out.update(json.loads(run.stdout.strip().splitlines()[-1]))
            if args.whole_kg_page:  # after the ingestion: an abandoned query keeps the server busy to its own timeout
                out["whole_kg_ids_page"] = whole_kg_ids_page(srv.url, args.page_size, args.whole_kg_page)
        out["against_local"] = compare_memories(StoreLayout.of(big).labels, StoreLayout.of(remote).labels)
        report[engine] = out
        print(json.dumps(out))
    return report


def len_memory(path: Path) -> int:
    import sqlite3

    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute("SELECT COUNT(*) FROM labels").fetchone()[0]
    finally:
        con.close()


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
    p.add_argument("mode", choices=["small", "large", "ingest", "why"])
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
    p.add_argument("--page-size", type=int, default=50_000, help="ingest: rows per page (kbqa ingest's default)")
    p.add_argument("--whole-kg-page", type=float, default=0, metavar="S",
                   help="ingest: also time one page of the former whole-KG ids query, stopped after S seconds")
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
        report[args.mode] = {"small": bench_small, "large": bench_large, "ingest": bench_ingest,
                             "why": bench_why}[args.mode](args, work)
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
