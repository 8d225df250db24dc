"""The ASGI app: `create_app(settings)` → /v1/{ask,generate,compile,ground,batch}, /sparql, /healthz, the page at /.

Routes only call the Python API (`Engine.ask`, `Engine.compile`, `Grounder.search`,
`LocalStore.query`) on the engines of `kbqa.server.engines`, and answer with the engine's own plain data.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

from fastapi import FastAPI, Query, Request
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from kb_dumps.sparql_text import Prefixes
from kb_dumps.stage_errors import ErrorInfo, KBQAError
from kbqa.server import schemas
from kbqa.server.engines import EnginePool, EngineWorker, StorePool
from kbqa.server.errors import ResponseDoc, ServerError, install_error_handlers, result_response
from kbqa.server.limits import BodyLimit, Gate, InflightLimit
from kbqa.server.sparql import SparqlRoute
from kbqa.server.sparql import router as sparql_router
from kbqa.settings import ServerSettings

if TYPE_CHECKING:
    from grounding.candidates import GroundingResult
    from kb_dumps.profiles import KBProfile
    from kbqa.pipeline import Engine
    from kbqa.result import Result

log = logging.getLogger("kbqa.server")
T = TypeVar("T")  # what a call on an engine returns
STATIC = Path(__file__).parent / "static"


@dataclass
class AppState:
    settings: ServerSettings
    gate: Gate
    engines: EnginePool | None = None
    store_pool: StorePool | None = None
    profile: KBProfile | None = None
    prefixes: Prefixes | None = None  # declares the profile's prefixes a /sparql query leaves undeclared


def default_engine_factory(settings: ServerSettings) -> Callable[[], Engine]:
    """The Engine `kbqa ask` would make from the same flags; it builds its own translator from them."""
    from kbqa.pipeline import Engine

    def make() -> Engine:
        return Engine.from_settings(settings.store, sparql_endpoint=settings.sparql_endpoint,
                                    endpoint_dialect=settings.endpoint_dialect, query_timeout_s=settings.query_timeout_s,
                                    row_cap=settings.row_cap, repair_rounds=settings.repair_rounds,
                                    translator=settings.translator, backend=settings.backend, model=settings.model,
                                    endpoint=settings.model_url, replay_path=settings.replay_path,
                                    timeout_s=settings.model_timeout_s)

    return make


def _errors(*codes: int) -> dict[int | str, ResponseDoc]:
    why = {400: "usage error", 413: "the request body is too large", 422: "bad input (an empty or too long "
           "question, an unknown front-end, a malformed program: a Result with `error`, or an error)",
           429: "too many requests in flight", 502: "the translator or store failed", 503: "engines busy, "
           "grounding index missing, or shutting down", 504: "a model call, query or request ran out of time"}
    return {c: {"model": schemas.ResultOrError if c in (422, 502, 504) else schemas.ErrorResponse,
                "description": why[c]} for c in codes}


def create_app(settings: ServerSettings | None = None, *, engine_factory: Callable[[], Engine] | None = None
               ) -> FastAPI:
    """The app over `settings.store`. `engine_factory` replaces how each engine (and so its translator) is made
    (tests inject small ones); by default it is what `kbqa ask` makes."""
    settings = settings or ServerSettings()
    state = AppState(settings, Gate(settings.max_inflight))
    lifespan = _lifespan(state, engine_factory or default_engine_factory(settings))
    app = FastAPI(title="kbqa", version="0.1.0", lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Knowledge-graph question answering with checked SPARQL. Every error is "
                              "`{\"error\": {\"stage\", \"message\"}}`; /v1 results are `kbqa ask --format json`.")
    app.state.kbqa = state
    app.add_middleware(SparqlRoute, state=state)  # innermost: inside both limits, before FastAPI's routing
    app.add_middleware(InflightLimit, gate=state.gate)
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)  # outermost: before anything reads it
    install_error_handlers(app)
    app.include_router(sparql_router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    _add_question_routes(app, state)
    _add_lookup_routes(app, state)
    return app


def _lifespan(state: AppState, make_engine: Callable[[], Engine]
              ) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """Opens the engines (and, with a store or endpoint, the /sparql query workers) once, and closes them."""
    settings = state.settings

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        state.engines = EnginePool(settings.engines, make_engine, settings.model_timeout_s)
        await state.engines.start()
        engine = state.engines.workers[0].engine
        if getattr(engine, "store_dir", None) is not None or settings.sparql_endpoint:
            state.profile = engine.profile
            state.prefixes = Prefixes(engine.profile.prefixes) if engine.profile is not None else None
            state.store_pool = StorePool(engine.store_dir, settings.sparql_workers, settings.query_timeout_s,
                                         settings.row_cap, endpoint=settings.sparql_endpoint,
                                         dialect=settings.endpoint_dialect)
            await state.store_pool.warm()
        log.info("kbqa server ready: store %s, %d engine(s)", settings.store, len(state.engines.workers))
        try:
            yield
        finally:
            state.gate.draining = True  # uvicorn has waited for open requests; refuse what still arrives
            if state.store_pool is not None:
                state.store_pool.close()
            state.engines.close()

    return lifespan


class _Calls:
    """How a route runs its work: on a free engine within the queue and request deadlines, with the question
    checked first."""

    def __init__(self, state: AppState):
        self.state, self.settings = state, state.settings

    async def on_engine(self, fn: Callable[[EngineWorker], T]) -> T:
        assert self.state.engines is not None
        return await self.state.engines.run(fn, self.settings.queue_timeout_s, self.settings.request_timeout_s)

    def question(self, text: str) -> str:
        try:
            return schemas.check_question(text, self.settings.max_question_chars)
        except ValueError as e:
            raise ServerError(422, str(e), "usage") from None

    @staticmethod
    def asker(q: str, frontend: str, execute: bool, qid: str | None) -> Callable[[EngineWorker], Result]:
        def call(w: EngineWorker) -> Result:
            return w.engine.ask(q, frontend=frontend, qid=qid, execute=execute)

        return call


def _add_question_routes(app: FastAPI, state: AppState) -> None:
    """/v1/ask, /v1/generate, /v1/compile and /v1/batch: the engine's ask and compile."""
    settings, calls = state.settings, _Calls(state)
    on_engine, question, asker = calls.on_engine, calls.question, calls.asker

    @app.post("/v1/ask", response_model=schemas.Result, responses=_errors(413, 422, 429, 502, 503, 504),
              summary="question → translator → checked SPARQL → answers, with the step report")
    async def ask_route(req: schemas.AskRequest) -> JSONResponse:
        result = await on_engine(asker(question(req.question), req.frontend, req.execute, req.id))
        return result_response(result)

    @app.post("/v1/generate", response_model=schemas.Result, responses=_errors(413, 422, 429, 502, 503, 504),
              summary="question → checked SPARQL, not run (for your own endpoint)")
    async def generate_route(req: schemas.GenerateRequest) -> JSONResponse:
        result = await on_engine(asker(question(req.question), req.frontend, False, req.id))
        return result_response(result)

    @app.post("/v1/compile", response_model=schemas.Result, responses=_errors(413, 422, 429, 502, 503, 504),
              summary="DeSQ / QCompiler / PyRAG text → SPARQL (+ answers), as `kbqa compile`")
    async def compile_route(req: schemas.CompileRequest) -> JSONResponse:
        if len(req.source) > settings.max_source_chars:
            raise ServerError(422, f"the source has {len(req.source)} characters; the limit is "
                                   f"{settings.max_source_chars}", "usage")
        result = await on_engine(lambda w: w.engine.compile(req.source, frontend=req.frontend, execute=req.execute))
        return result_response(result)

    @app.post("/v1/batch", response_model=schemas.BatchResponse, responses=_errors(413, 422, 429, 503),
              summary="many questions, answered concurrently on the engines; results in order")
    async def batch_route(req: schemas.BatchRequest) -> JSONResponse:
        if not req.questions or len(req.questions) > settings.max_batch:
            raise ServerError(422, f"give 1 to {settings.max_batch} questions (got {len(req.questions)})", "usage")
        qs = [question(q) for q in req.questions]
        t0 = time.perf_counter()

        async def one(q: str) -> dict:
            try:
                return (await on_engine(asker(q, req.frontend, req.execute, None))).to_dict()
            except (ServerError, KBQAError) as e:
                return failed_result(q, req.frontend, e)

        results = await asyncio.gather(*(one(q) for q in qs))
        return JSONResponse({"results": results, "seconds": round(time.perf_counter() - t0, 6)})


def _add_lookup_routes(app: FastAPI, state: AppState) -> None:
    """/v1/ground, /healthz and the web page."""
    settings, on_engine = state.settings, _Calls(state).on_engine

    @app.get("/v1/ground", response_model=schemas.GroundingResponse, responses=_errors(422, 429, 503, 504),
             summary="ranked KB ids for a label (and description), as `kbqa ground`")
    async def ground_route(label: str = Query("", max_length=1000), description: str | None = Query(None),
                           kind: Literal["entity", "property", "class"] | None = None,
                           k: int = Query(10, ge=1, le=100)) -> JSONResponse:
        def call(w: EngineWorker) -> GroundingResult:
            found = w.engine.assembler.grounder.search(label, description, kind, k)
            if found is None:  # the index-less grounder (assembler.combinations.MemoryGrounder) proposes nothing
                raise ServerError(503, "this server's store has no grounding index, so labels cannot be looked "
                                       f"up; build it with `kbqa index --store {settings.store or 'DIR'}`", "ground")
            return found

        return JSONResponse((await on_engine(call)).to_dict())

    @app.get("/healthz", response_model=schemas.Health, responses=_errors(503), summary="readiness")
    async def healthz() -> JSONResponse:
        engines = state.engines
        body = {"status": "draining" if state.gate.draining else "ok",
                "store": str(settings.store) if settings.store else None,
                "profile": state.profile.name if state.profile is not None else None,
                "translator": engines.workers[0].translator.name if engines and engines.workers[0].translator else None,
                "engines": len(engines.workers) if engines else 0, "engines_busy": engines.busy if engines else 0,
                "sparql_workers": len(state.store_pool.stores) if state.store_pool else 0,
                "inflight": state.gate.inflight, "max_inflight": state.gate.max_inflight}
        return JSONResponse(body, status_code=503 if state.gate.draining else 200)

    @app.get("/", include_in_schema=False)
    async def page(request: Request) -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html")


def failed_result(question: str, frontend: str, e: ServerError | KBQAError) -> dict:
    """A batch item that never reached an answer (no free engine in time, time budget): a Result all the same."""
    from kbqa.pipeline import Result

    info = ErrorInfo(e.stage, e.message) if isinstance(e, ServerError) else e.info
    result = Result(frontend=frontend, question=question, status="error", failed_stage=info.stage, errors=[info])
    return result.to_dict()
