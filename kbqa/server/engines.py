"""Engines and query workers behind the routes: each Engine is owned by one thread, handed out one request at a time.

The Engine (its label memory, grounder, translator) is not thread-safe in every part, so each lives in a
single-thread executor and serves one call at a time; `EnginePool.run` waits (bounded) for a free one.
/sparql uses a separate pool of `LocalStore`s, each with its own worker process (deadline, row cap).
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from kb_dumps.results import Written
from kb_dumps.stage_errors import KBQAError
from kbqa.server.errors import ServerError
from kbqa.server.limits import timed
from kbqa.translators.base import TranslationResult, Translator

if TYPE_CHECKING:
    from kb_dumps.store_types import Dataset, QueryResult, Store
    from kbqa.pipeline import Engine

log = logging.getLogger("kbqa.server")
T = TypeVar("T")


class UnavailableTranslator(Translator):
    """Stands in when the configured translator could not be made (no case bank, no replay file): every
    question fails at stage translate with the reason, while /v1/compile and /sparql keep working."""

    name = "unavailable"
    frontends = None

    def __init__(self, error: KBQAError):
        self.error = error

    def translate(self, question: str, frontend: str = "desq", *, qid: str | None = None) -> TranslationResult:
        raise self.error


class EngineWorker:
    """One Engine and its translator, created and always called in the same thread."""

    def __init__(self, index: int):
        self.index = index
        self.executor = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"kbqa-engine-{index}")
        self.engine: Engine | None = None
        self.translator: Translator | None = None

    def open(self, make_engine: Callable[[], Engine], model_timeout_s: float) -> None:
        self.engine = make_engine()
        if self.engine.store_dir is not None:
            try:  # open the store and start its query worker now, not on the first question
                self.engine.assembler.store.query("ASK {}")
            except KBQAError as e:
                log.warning("the store did not answer at startup: %s", e.info)
        try:  # the engine makes its translator from the settings, over its own store and label memory
            translator: Translator = self.engine.translator
        except KBQAError as e:
            log.warning("questions cannot be translated: %s", e.info)
            translator = UnavailableTranslator(e)
        self.translator = timed(translator, model_timeout_s)
        # QCompiler leaves and PyRAG sub-questions of /v1/compile are translated by it too
        self.engine.translator = self.translator

    def close(self) -> None:
        if self.translator is not None:
            self.translator.close()
        if self.engine is not None:
            self.engine.close()


class EnginePool:
    """`n` engine workers; `run(fn)` calls `fn(worker)` on a free one, within a queue wait and a deadline."""

    def __init__(self, n: int, make_engine: Callable[[], Engine], model_timeout_s: float):
        self.workers = [EngineWorker(i) for i in range(max(1, n))]
        self._make = (make_engine, model_timeout_s)
        self._free: asyncio.Queue[EngineWorker] = asyncio.Queue()

    @property
    def busy(self) -> int:
        return len(self.workers) - self._free.qsize()

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        await asyncio.gather(*(loop.run_in_executor(w.executor, w.open, *self._make) for w in self.workers))
        for w in self.workers:
            self._free.put_nowait(w)

    async def run(self, fn: Callable[[EngineWorker], T], queue_timeout_s: float, deadline_s: float) -> T:
        try:
            worker = await asyncio.wait_for(self._free.get(), queue_timeout_s)
        except TimeoutError:
            raise ServerError(503, f"all {len(self.workers)} engines stayed busy for {queue_timeout_s:g} s; retry "
                                   "later (or start the server with more --engines)", "server",
                              {"Retry-After": "5"}) from None
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(worker.executor, fn, worker)
        # the worker goes back to the pool when its call ends, even when the request gave up waiting on it
        future.add_done_callback(lambda _: self._free.put_nowait(worker))
        try:
            return await asyncio.wait_for(asyncio.shield(future), deadline_s)
        except TimeoutError:
            raise ServerError(504, f"the request ran past its time budget of {deadline_s:g} s (setting "
                                   "request_timeout_s)", "server") from None

    def close(self, wait_s: float = 5.0) -> None:
        for w in self.workers:
            try:
                w.executor.submit(w.close).result(timeout=wait_s)
            except (cf.TimeoutError, RuntimeError) as e:
                log.warning("engine %d did not close in %g s: %s", w.index, wait_s, e)
            w.executor.shutdown(wait=False, cancel_futures=True)


def _write_endpoint(res: QueryResult, formats: tuple[str | None, str | None]) -> Written:
    from kb_dumps.results import write_rows

    fmt = formats[1] if res.kind == "graph" else formats[0]
    if fmt is None:
        return Written(res.kind, None)
    return Written(res.kind, fmt, write_rows(res, fmt), res.truncated, len(res.rows))


class StorePool:
    """`n` stores for /sparql: LocalStores over one store directory (each query runs in a worker process), or
    EndpointStores when queries go to a remote SPARQL endpoint (given, or named by a remote store directory)."""

    def __init__(self, store_dir: Path | None, n: int, timeout_s: float, row_cap: int, *, endpoint: str | None = None,
                 dialect: str | None = None):
        from kb_dumps.store import open_store

        self.stores = [open_store(store_dir, endpoint=endpoint, timeout_s=timeout_s, row_cap=row_cap, dialect=dialect)
                       for _ in range(max(1, n))]
        self._free: asyncio.Queue[Store] = asyncio.Queue()
        self._running: dict[asyncio.Task[Any], Store] = {}  # the task awaiting a query -> the store running it
        for s in self.stores:
            self._free.put_nowait(s)

    async def warm(self) -> None:
        """Start the worker processes now rather than on the first query (a start takes about a second)."""
        loop = asyncio.get_running_loop()
        results = await asyncio.gather(*(loop.run_in_executor(None, s.query, "ASK {}") for s in self.stores),
                                       return_exceptions=True)
        for r in results:  # a remote endpoint that is down now may be up later: report it, keep serving
            if isinstance(r, KBQAError):
                log.warning("the store did not answer at startup: %s", r.info)
            elif isinstance(r, BaseException):
                raise r

    async def query(self, query: str, queue_timeout_s: float, dataset: Dataset | None = None,
                    formats: tuple[str | None, str | None] = ("JSON", "TURTLE")) -> Written:
        """The result of `query` written as bytes (kb_dumps.results.Written): by the worker process of a LocalStore,
        here for an EndpointStore. `formats`: see `LocalStore.write`."""
        return await self._run(query, queue_timeout_s, dataset, formats)

    async def rows(self, query: str, queue_timeout_s: float) -> QueryResult:
        """The result of `query` as a QueryResult (vars, rows of terms): what the MCP tool returns as data."""
        return await self._run(query, queue_timeout_s, None, None)

    async def _run(self, query: str, queue_timeout_s: float, dataset: Dataset | None,
                   formats: tuple[str | None, str | None] | None) -> Written | QueryResult:
        """One query on a free store of the pool: written bytes (`formats` given) or a QueryResult (None)."""
        try:
            store = await asyncio.wait_for(self._free.get(), queue_timeout_s)
        except TimeoutError:
            raise ServerError(503, f"all {len(self.stores)} query workers stayed busy for {queue_timeout_s:g} s; "
                                   "retry later", "server", {"Retry-After": "5"}) from None
        loop = asyncio.get_running_loop()
        if dataset and not hasattr(store, "interrupt"):
            self._free.put_nowait(store)
            raise ServerError(400, "default-graph-uri and named-graph-uri are not supported over a remote endpoint",
                              "execute")
        task = asyncio.current_task()
        if task is not None:
            self._running[task] = store
        # LocalStore takes the protocol's dataset and base IRI, and writes the result in its worker; an
        # EndpointStore takes only the query, and its rows are written here
        if formats is None:
            call: Callable[[], Written | QueryResult] = lambda: store.query(query)  # noqa: E731
        else:
            call = (lambda: store.write(query, formats, dataset=dataset)) if hasattr(store, "interrupt") else (
                lambda: _write_endpoint(store.query(query), formats))  # type: ignore[assignment]
        future = loop.run_in_executor(None, call)

        def release(_: asyncio.Future[Written | QueryResult]) -> None:
            if task is not None:
                self._running.pop(task, None)
            self._free.put_nowait(store)

        future.add_done_callback(release)
        # LocalStore.query is bounded by its own deadline (the worker is killed at it), EndpointStore.query by its
        # client-side deadline
        return await asyncio.shield(future)

    def interrupt(self, task: asyncio.Task[Any] | None) -> None:
        """Stop the query `task` waits for (its client went away): LocalStore kills its worker; a remote
        endpoint's query runs to its deadline."""
        store = self._running.get(task)
        if store is not None and hasattr(store, "interrupt"):
            store.interrupt()

    def close(self) -> None:
        for s in self.stores:
            s.close()
