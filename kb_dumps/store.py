"""The store interface: `LocalStore` (pyoxigraph on disk) behind a query worker with a deadline.

pyoxigraph cannot interrupt a running query, so queries run in a worker process that opens
the store read-only; at the deadline the worker is killed and a fresh one is started for the
next query. Results come back as plain data in the shape of SPARQL JSON results.
`SERVICE` is refused before anything runs: pyoxigraph would otherwise call out to the network.
"""

from __future__ import annotations

import multiprocessing as mp
import re
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kb_dumps.errors import QueryError, StoreError
from kb_dumps.layout import StoreLayout
from kb_dumps.sparql_text import is_label_service, mask, service_targets

DEFAULT_TIMEOUT_S = 10.0
DEFAULT_ROW_CAP = 10_000

Term = dict[str, str]  # {"type": "uri"|"literal"|"bnode"|"triple", "value": …, "datatype"?: …, "xml:lang"?: …}


@dataclass
class QueryResult:
    """A SELECT / ASK / CONSTRUCT result as plain data."""

    kind: str  # select | ask | graph
    vars: list[str] = field(default_factory=list)
    rows: list[list[Term | None]] = field(default_factory=list)
    boolean: bool | None = None
    truncated: bool = False  # the row cap cut the result
    elapsed_s: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def empty(self) -> bool:
        return (not self.boolean) if self.kind == "ask" else not self.rows

    def column(self, var: str) -> list[Term | None]:
        i = self.vars.index(var)
        return [r[i] for r in self.rows]


# ---- query text checks ------------------------------------------------------------------
_UPDATE = re.compile(r"(?<![:\w?$])(INSERT|DELETE|LOAD|CLEAR|DROP|CREATE|ADD|MOVE|COPY)(?![:\w])", re.I)


def check_query_text(query: str, allow_label_service: bool = False) -> None:
    """Refuse `SERVICE` (network access) and update operations before a query runs.

    `allow_label_service`: `SERVICE wikibase:label` is let through (a Wikidata Query Service endpoint
    runs it itself); any other SERVICE target is still refused.
    """
    targets = service_targets(query)
    refused = [t for t in targets if not (allow_label_service and is_label_service(t))]
    if refused:
        if any(is_label_service(t) for t in refused):
            raise QueryError("SERVICE wikibase:label is refused: only a Wikidata Query Service endpoint "
                             "understands it; ask for rdfs:label explicitly", stage="execute")
        raise QueryError("SERVICE is refused: queries run offline on the local store; remove the SERVICE clause "
                         "(for wikibase:label, ask for rdfs:label explicitly)", stage="execute")
    m = _UPDATE.search(mask(query))
    if m:
        raise QueryError(f"{m.group(1).upper()} is refused: the store is read-only for queries", stage="execute")


# ---- conversion of pyoxigraph terms ---------------------------------------------------------
def term_to_dict(term: Any) -> Term | None:
    import pyoxigraph as ox

    if term is None:
        return None
    if isinstance(term, ox.NamedNode):
        return {"type": "uri", "value": term.value}
    if isinstance(term, ox.BlankNode):
        return {"type": "bnode", "value": term.value}
    if isinstance(term, ox.Literal):
        d = {"type": "literal", "value": term.value}
        if term.language:
            d["xml:lang"] = term.language
        elif term.datatype and term.datatype.value != "http://www.w3.org/2001/XMLSchema#string":
            d["datatype"] = term.datatype.value
        return d
    return {"type": "triple", "value": str(term)}


def run_query(store: Any, query: str, row_cap: int) -> QueryResult:
    """Run one query on an open pyoxigraph store (in the worker), converting to plain data."""
    import pyoxigraph as ox

    t0 = time.perf_counter()
    try:
        res = store.query(query, use_default_graph_as_union=True)
    except SyntaxError as e:
        raise QueryError(f"the query does not parse: {e}", stage="execute") from None
    except (OSError, ValueError, RuntimeError) as e:
        raise QueryError(f"the query failed: {e}", stage="execute") from None
    if isinstance(res, ox.QueryBoolean):
        return QueryResult(kind="ask", boolean=bool(res), elapsed_s=time.perf_counter() - t0)
    if isinstance(res, ox.QuerySolutions):
        names = [v.value for v in res.variables]
        rows: list[list[Term | None]] = []
        truncated = False
        for sol in res:
            if len(rows) >= row_cap:
                truncated = True
                break
            rows.append([term_to_dict(sol[n]) for n in names])
        return QueryResult(kind="select", vars=names, rows=rows, truncated=truncated,
                           elapsed_s=time.perf_counter() - t0)
    rows = []
    truncated = False
    for t in res:
        if len(rows) >= row_cap:
            truncated = True
            break
        rows.append([term_to_dict(t.subject), term_to_dict(t.predicate), term_to_dict(t.object)])
    return QueryResult(kind="graph", vars=["subject", "predicate", "object"], rows=rows, truncated=truncated,
                       elapsed_s=time.perf_counter() - t0)


def _worker_main(path: str, conn: Any) -> None:
    """Worker loop: open the store read-only and answer (query, row_cap) requests."""
    import pyoxigraph as ox

    try:
        store = ox.Store.read_only(path)
    except OSError as e:
        conn.send(("error", f"cannot open the store at {path}: {e}"))
        return
    conn.send(("ready", None))
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        query, row_cap = msg
        try:
            conn.send(("ok", run_query(store, query, row_cap)))
        except QueryError as e:
            conn.send(("query-error", e.info.message))
        except Exception as e:  # noqa: BLE001 - anything else is reported, the worker lives on
            conn.send(("query-error", f"{type(e).__name__}: {e}"))


class LocalStore:
    """A pyoxigraph store on disk, queried through a worker process with a deadline and a row cap.

    `path` is a store directory made by `kbqa ingest` (see kb_dumps/layout.py) or a bare
    pyoxigraph directory.
    """

    def __init__(self, path: str | Path, timeout_s: float = DEFAULT_TIMEOUT_S, row_cap: int = DEFAULT_ROW_CAP):
        p = Path(path)
        if not (p / "CURRENT").exists():  # not a RocksDB directory: a store directory made by ingest
            p = StoreLayout.of(p).oxigraph
        if not p.is_dir():
            raise StoreError(f"no store at {path}; build one with `kbqa ingest SOURCE --store {path}`")
        self.path = p
        self.timeout_s = timeout_s
        self.row_cap = row_cap
        self._proc: Any = None
        self._conn: Any = None
        self._lock = threading.Lock()
        self.restarts = 0

    # ---- worker management ------------------------------------------------------------
    def _start(self) -> None:
        ctx = mp.get_context("spawn")  # a fork of a process holding RocksDB handles is unsafe
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_worker_main, args=(str(self.path), child), daemon=True)
        proc.start()
        child.close()
        if not parent.poll(60):
            proc.kill()
            raise StoreError(f"the query worker for {self.path} did not start")
        status, detail = parent.recv()
        if status != "ready":
            proc.join(1)
            raise StoreError(detail)
        self._proc, self._conn = proc, parent

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

    # ---- queries -------------------------------------------------------------------------
    def query(self, query: str, timeout_s: float | None = None, row_cap: int | None = None) -> QueryResult:
        """Run a read-only SPARQL query. Raises QueryError (bad query, SERVICE, timeout)."""
        check_query_text(query)
        timeout = self.timeout_s if timeout_s is None else timeout_s
        cap = self.row_cap if row_cap is None else row_cap
        with self._lock:
            if self._proc is None or not self._proc.is_alive():
                self._start()
            try:
                self._conn.send((query, cap))
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
            except (OSError, EOFError) as e:
                self._kill()
                raise StoreError(f"the query worker died: {e}") from None
        if status == "ok":
            return payload
        raise QueryError(payload)

    def ask(self, query: str, **kw: Any) -> bool:
        res = self.query(query, **kw)
        return bool(res.boolean) if res.kind == "ask" else bool(res.rows)


class Store(Protocol):
    """What the assembler, grounding, eval and `kbqa sparql` need from a store (LocalStore, EndpointStore)."""

    timeout_s: float
    row_cap: int

    def query(self, query: str, timeout_s: float | None = None, row_cap: int | None = None) -> QueryResult: ...

    def ask(self, query: str, **kw: Any) -> bool: ...

    def close(self) -> None: ...


def open_store(store_dir: str | Path | None = None, *, endpoint: str | None = None,
               timeout_s: float = DEFAULT_TIMEOUT_S, row_cap: int = DEFAULT_ROW_CAP, dialect: str | None = None,
               **endpoint_options: Any) -> Store:
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
