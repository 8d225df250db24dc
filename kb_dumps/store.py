"""The store interface: `LocalStore` (pyoxigraph on disk) behind a query worker with a deadline.

pyoxigraph cannot interrupt a running query, so queries run in a worker process that opens
the store read-only; at the deadline the worker is killed and a fresh one is started for the
next query. Results come back as plain data in the shape of SPARQL JSON results (`query`), or written by
the worker in the client's format as bytes (`write`, for /sparql: kb_dumps/results.py).
`SERVICE` and updates are refused before anything runs, decided from the tokens Oxigraph reads
(kb_dumps/sparql_check.py), in the worker under the query's deadline:
pyoxigraph would otherwise call out to the network. Behind that check, the worker has no network where
the OS allows it and a bounded address space (kb_dumps/sandbox.py); a query past the memory bound or
the result-size bound fails at stage execute (exit 4) and the worker is replaced.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
import time
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import TYPE_CHECKING, cast

from kb_dumps.layout import StoreLayout
from kb_dumps.results import Written, write_fast, write_rows
from kb_dumps.sparql_check import QueryFacts, RefusedQuery, check_query
from kb_dumps.stage_errors import EXIT_BACKEND, KBQAError, QueryError, StoreError
from kb_dumps.store_types import (
    DEFAULT_ROW_CAP,
    DEFAULT_TIMEOUT_S,
    Dataset,
    QueryResult,
    Store,
    Term,
    term_to_dict,
)
from kb_dumps.xml_check import Unwritable

if TYPE_CHECKING:
    import pyoxigraph as ox

    from kb_dumps.endpoint_settings import EndpointSettings

    # A pyoxigraph query's result: SELECT, ASK, CONSTRUCT / DESCRIBE.
    OxResult = ox.QuerySolutions | ox.QueryBoolean | ox.QueryTriples
    # One request to the worker: (query, row cap, dataset, result bytes, formats or None for plain rows).
    WorkerRequest = tuple[str, int, Dataset | None, int, tuple[str | None, str | None] | None]
    # A keyword of `EndpointStore(...)` passed through `open_store`.
    EndpointOption = str | float | dict[str, str] | EndpointSettings | None

# Address space of one query worker (RLIMIT_AS), sized for a 24 GB machine running a few workers; the store
# opens and answers ordinary queries well inside 1 GB. KBQA_QUERY_MEMORY_BYTES=0 removes the bound.
DEFAULT_MEMORY_BYTES = int(os.environ.get("KBQA_QUERY_MEMORY_BYTES", 2 * 1024**3))
# Size of one result (the values' characters), whatever its row count: rows are not a bound on bytes.
DEFAULT_RESULT_BYTES = int(os.environ.get("KBQA_QUERY_RESULT_BYTES", 256 * 1024**2))

# ---- query checks -------------------------------------------------------------------------
class ResourceError(QueryError):
    """A query went past the worker's memory bound or the result-size bound: stage execute, exit 4."""

    exit_code = EXIT_BACKEND

    def __init__(self, message: str, resource: str):
        super().__init__(message, stage="execute")
        self.resource = resource  # memory | result


def check_query_text(query: str, allow_label_service: bool = False) -> QueryFacts:
    """Refuse `SERVICE` (network access), updates, ambiguous text and queries past the complexity bounds, before a
    query runs (kb_dumps/sparql_check.py; RefusedQuery, a QueryError). `.sent` is what goes to a remote endpoint. `allow_label_service`: `SERVICE wikibase:label` is
    let through (a Wikidata Query Service endpoint runs it itself); any other SERVICE target is still refused."""
    return check_query(query, allow_label_service)


def _term_bytes(t: Term | None) -> int:
    return 0 if t is None else len(t["value"]) + len(t.get("datatype", "")) + len(t.get("xml:lang", "")) + 8


def _execute(store: ox.Store, query: str, dataset: Dataset | None, has_dataset: bool) -> OxResult:
    """The pyoxigraph result of one query on an open store (in the worker).

    `dataset` (protocol parameters) overrides the query's FROM / FROM NAMED, as the protocol says; `has_dataset`:
    the query has FROM / FROM NAMED of its own (then the union default graph must not override it)."""
    import pyoxigraph as ox

    options: dict[str, str | bool | list[ox.NamedNode]] = {}
    if dataset is not None and dataset.base_iri:
        options["base_iri"] = dataset.base_iri
    if dataset:
        # a protocol dataset replaces the query's: with only named graphs, the default graph is empty
        options["default_graph"] = [ox.NamedNode(g) for g in dataset.default_graphs]
        options["named_graphs"] = [ox.NamedNode(g) for g in dataset.named_graphs]
    elif not has_dataset:
        options["use_default_graph_as_union"] = True
    try:
        return store.query(query, **options)
    except SyntaxError as e:
        raise QueryError(f"the query does not parse: {e}", stage="execute") from None
    except (OSError, ValueError, RuntimeError) as e:
        raise QueryError(f"the query failed: {e}", stage="execute") from None


def run_query(store: ox.Store, query: str, row_cap: int, dataset: Dataset | None = None, has_dataset: bool = False,
              result_bytes: int = DEFAULT_RESULT_BYTES) -> QueryResult:
    """Run one query on an open pyoxigraph store (in the worker), converting to plain data (see `_execute`)."""
    import pyoxigraph as ox

    t0 = time.perf_counter()
    res = _execute(store, query, dataset, has_dataset)
    if isinstance(res, ox.QueryBoolean):
        return QueryResult(kind="ask", boolean=bool(res), elapsed_s=time.perf_counter() - t0)
    if isinstance(res, ox.QuerySolutions):
        names = [v.value for v in res.variables]
        kind, items = "select", ((sol[n] for n in names) for sol in res)
    else:
        names = ["subject", "predicate", "object"]
        kind, items = "graph", ((t.subject, t.predicate, t.object) for t in res)
    rows: list[list[Term | None]] = []
    truncated = False
    size = 0
    for item in items:
        if len(rows) >= row_cap:
            truncated = True
            break
        row = [term_to_dict(t) for t in item]
        size += sum(_term_bytes(t) for t in row)
        if size > result_bytes:
            raise ResourceError(f"the result passed the bound of {result_bytes:,} bytes after {len(rows)} row(s); "
                                "select fewer or shorter values (setting KBQA_QUERY_RESULT_BYTES)", "result")
        rows.append(row)
    return QueryResult(kind=kind, vars=names, rows=rows, truncated=truncated, elapsed_s=time.perf_counter() - t0)


def write_result(store: ox.Store, query: str, row_cap: int, dataset: Dataset | None, facts: QueryFacts,
                 result_bytes: int, formats: tuple[str | None, str | None]) -> Written:
    """Run one query (in the worker) and write its result as bytes: `formats` is (the format of a SELECT / ASK
    result, of a CONSTRUCT / DESCRIBE one), None where the client accepts none (kb_dumps/results.py)."""
    import pyoxigraph as ox

    table, graph = formats
    if facts.form in ("select", "ask"):
        res = _execute(store, query, dataset, facts.has_dataset)
        kind = "ask" if isinstance(res, ox.QueryBoolean) else "select" if isinstance(res, ox.QuerySolutions) else "graph"
        fmt = graph if kind == "graph" else table
        if fmt is None:
            return Written(kind, None)
        body = write_fast(res, fmt, row_cap, result_bytes) if kind != "graph" else None
        if body is not None:
            return Written(kind, fmt, body)
    rows = run_query(store, query, row_cap, dataset, facts.has_dataset, result_bytes)
    fmt = graph if rows.kind == "graph" else table
    if fmt is None:
        return Written(rows.kind, None)
    return Written(rows.kind, fmt, write_rows(rows, fmt), rows.truncated, len(rows.rows))


def _answer(store: ox.Store, msg: WorkerRequest) -> tuple[str, QueryResult | Written]:
    """One request in the worker: the check (kb_dumps/sparql_check.py), under the caller's deadline, then the query."""
    query, row_cap, dataset, result_bytes, formats = msg
    facts = check_query(query)
    if formats is None:
        return "ok", run_query(store, query, row_cap, dataset, facts.has_dataset, result_bytes)
    return "written", write_result(store, query, row_cap, dataset, facts, result_bytes, formats)


def _worker_main(path: str, conn: Connection, memory_bytes: int | None) -> None:
    """Worker loop: cut the network, bound memory, open the store read-only, answer requests."""
    from kb_dumps.sandbox import bound_memory, isolate_network

    network = isolate_network()  # before pyoxigraph starts threads (see kb_dumps/sandbox.py)
    # pyoxigraph reports a failed allocation on stderr with a Rust backtrace before it aborts: the user gets
    # one line from the parent instead
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    import pyoxigraph as ox

    try:
        store = ox.Store.read_only(path)
    except OSError as e:
        conn.send(("error", f"cannot open the store at {path}: {e}"))
        return
    bound_memory(memory_bytes)  # after the open: RocksDB reserves its address space first
    conn.send(("ready", network))
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        try:
            conn.send(_answer(store, msg))
        except RefusedQuery as e:
            conn.send(("refused", (e.info.message, e.refusal)))
        except Unwritable as e:
            conn.send(("unwritable", e.info.message))
        except ResourceError as e:
            conn.send(("resource", (e.info.message, e.resource)))
        except QueryError as e:
            conn.send(("query-error", e.info.message))
        except MemoryError:
            conn.send(("resource", ("memory", "memory")))
            return  # the heap may be in any state: the next query gets a fresh worker
        except Exception as e:  # noqa: BLE001 - anything else is reported, the worker lives on
            conn.send(("query-error", f"{type(e).__name__}: {e}"))


class LocalStore:
    """A pyoxigraph store on disk, queried through a worker process with a deadline and a row cap.

    `path` is a store directory made by `kbqa ingest` (see kb_dumps/layout.py) or a bare
    pyoxigraph directory.
    """

    def __init__(self, path: str | Path, timeout_s: float = DEFAULT_TIMEOUT_S, row_cap: int = DEFAULT_ROW_CAP, *,
                 memory_bytes: int | None = DEFAULT_MEMORY_BYTES, result_bytes: int = DEFAULT_RESULT_BYTES):
        p = Path(path)
        if not (p / "CURRENT").exists():  # not a RocksDB directory: a store directory made by ingest
            p = StoreLayout.of(p).oxigraph
        if not p.is_dir():
            raise StoreError(f"no store at {path}; build one with `kbqa ingest SOURCE --store {path}`")
        self.path = p
        self.timeout_s = timeout_s
        self.row_cap = row_cap
        self.memory_bytes, self.result_bytes = memory_bytes, result_bytes
        self.network = "not started"  # the worker's network isolation: "netns", or why not
        self._proc: BaseProcess | None = None
        self._conn: Connection | None = None
        self._interrupted = False
        self._lock = threading.Lock()
        self.restarts = 0

    # ---- worker management ------------------------------------------------------------
    def _start(self) -> None:
        ctx = mp.get_context("spawn")  # a fork of a process holding RocksDB handles is unsafe
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_worker_main, args=(str(self.path), child, self.memory_bytes),
                           daemon=True)
        proc.start()
        child.close()
        if not parent.poll(60):
            proc.kill()
            raise StoreError(f"the query worker for {self.path} did not start")
        status, detail = parent.recv()
        if status != "ready":
            proc.join(1)
            raise StoreError(detail)
        self._proc, self._conn, self.network = proc, parent, detail

    def _kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.join(5)
        if self._conn is not None:
            self._conn.close()
        self._proc = self._conn = None

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                try:
                    self._conn.send(None)
                except OSError:
                    pass
            self._kill()

    def __enter__(self) -> LocalStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self._kill()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def interrupt(self) -> None:
        """Stop the running query from another thread (its client went away): the worker is killed and the
        waiting `query` fails at once; the next query starts a new worker."""
        proc = self._proc
        if proc is not None and proc.is_alive():
            self._interrupted = True
            proc.kill()

    # ---- queries -------------------------------------------------------------------------
    def query(self, query: str, timeout_s: float | None = None, row_cap: int | None = None,
              dataset: Dataset | None = None) -> QueryResult:
        """Run a read-only SPARQL query. Raises QueryError (bad query, SERVICE, timeout; ResourceError past
        the memory or result bound). `dataset`: the protocol's default and named graphs."""
        return cast(QueryResult, self._request(query, timeout_s, row_cap, dataset, None))

    def write(self, query: str, formats: tuple[str | None, str | None], timeout_s: float | None = None,
              row_cap: int | None = None, dataset: Dataset | None = None) -> Written:
        """Run a read-only query and get its result written by the worker as bytes: `formats` is (the format of a
        SELECT / ASK result, of a CONSTRUCT / DESCRIBE one; kb_dumps/results.py). The errors of `query`, and
        Unwritable for what the format cannot carry."""
        return cast(Written, self._request(query, timeout_s, row_cap, dataset, formats))

    def _request(self, query: str, timeout_s: float | None, row_cap: int | None, dataset: Dataset | None,
                 formats: tuple[str | None, str | None] | None) -> QueryResult | Written:
        # the check runs in the worker, under the same deadline and memory bound as the query
        timeout = self.timeout_s if timeout_s is None else timeout_s
        cap = self.row_cap if row_cap is None else row_cap
        with self._lock:
            if self._proc is None or not self._proc.is_alive():
                self._start()
            self._interrupted = False
            try:
                self._conn.send((query, cap, dataset, self.result_bytes, formats))
                ready = self._conn.poll(timeout)
            except (OSError, EOFError) as e:
                self._kill()
                raise StoreError(f"the query worker failed: {e}") from None
            if not ready:
                # pyoxigraph cannot cancel a query: kill the worker; the next query starts a new one.
                self._kill()
                self.restarts += 1
                raise QueryError(f"the query ran past its time budget of {timeout:g} s and was stopped",
                                 timed_out=True)
            try:
                status, payload = self._conn.recv()
            except (OSError, EOFError):
                raise self._died() from None
        if status in ("ok", "written"):
            return payload
        if status == "refused":
            raise RefusedQuery(*payload)
        if status == "unwritable":
            raise Unwritable(payload)
        if status == "resource":
            message, resource = payload
            if resource == "memory":
                with self._lock:
                    self._kill()
                    self.restarts += 1
                raise ResourceError(self._memory_message(), "memory")
            raise ResourceError(message, resource)
        raise QueryError(payload)

    def _memory_message(self) -> str:
        bound = f"{self.memory_bytes / 1024**2:,.0f} MB" if self.memory_bytes else "no bound"
        return (f"the query needed more memory than the query worker's bound ({bound}) and was stopped; "
                "simplify it (setting KBQA_QUERY_MEMORY_BYTES)")

    def _died(self) -> KBQAError:
        """The worker ended during a query: killed by `interrupt`, or it ran out of memory (pyoxigraph aborts
        on a failed allocation), else a crash. Called with the lock held; the next query starts a new one."""
        proc = self._proc
        if proc is not None:
            proc.join(5)
        code = proc.exitcode if proc is not None else None
        self._kill()
        self.restarts += 1
        if self._interrupted:
            return QueryError("the query was cancelled: its client went away")
        if code is not None and code in (-6, -9, 134, 137):  # SIGABRT from a failed allocation, or the OOM killer
            return ResourceError(self._memory_message(), "memory")
        if code is not None and code in (-11, -7, 139, 135):  # SIGSEGV / SIGBUS: the engine's stack overflowed
            return QueryError("the query is too complex to run: it overflowed the query engine's stack (the worker "
                              "was restarted); simplify it, e.g. fewer nested groups or operators in one expression")
        return StoreError(f"the query worker died (exit code {code})")

    def ask(self, query: str, timeout_s: float | None = None, row_cap: int | None = None) -> bool:
        res = self.query(query, timeout_s, row_cap)
        return bool(res.boolean) if res.kind == "ask" else bool(res.rows)


def open_store(store_dir: str | Path | None = None, *, endpoint: str | None = None,
               timeout_s: float = DEFAULT_TIMEOUT_S, row_cap: int = DEFAULT_ROW_CAP, dialect: str | None = None,
               **endpoint_options: EndpointOption) -> Store:
    """The store to query: the `endpoint` URL when given, else the endpoint a remote store directory
    records in its manifest, else the local pyoxigraph store of `store_dir`."""
    if endpoint is None and store_dir is not None:
        remote = StoreLayout.of(store_dir).endpoint
        if remote is not None:
            endpoint, dialect = remote["url"], dialect or remote.get("dialect")
    if endpoint:
        from kb_dumps.endpoint import EndpointStore

        return EndpointStore(endpoint, timeout_s=timeout_s, row_cap=row_cap, dialect=dialect, **endpoint_options)
    if store_dir is None:
        raise StoreError("no store: give a store directory (--store DIR) or a SPARQL endpoint (--endpoint URL)")
    return LocalStore(store_dir, timeout_s=timeout_s, row_cap=row_cap)
