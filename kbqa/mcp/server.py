"""`create_server(settings)`: kbqa as Model Context Protocol tools and resources, over the engines of `kbqa serve`.

A face like the CLI and the HTTP server, with no logic of its own: each tool calls `Engine.ask`,
`Engine.compile`, `Grounder.search` or the store's read-only `query` on the same pools (`EnginePool`,
`StorePool`) and under the same `ServerSettings` limits (question and text size, queue wait, time budget,
row cap) as `/v1/*` and `/sparql`. Results are the HTTP server's published shapes (`kbqa.server.schemas`);
a failure is an MCP tool error (`isError: true`) whose structured content is `{error: {stage, message}}`,
never a traceback.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, ParamSpec, Protocol, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError, UnexpectedToolError
from mcp_types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from kb_dumps.json_types import JsonObject
from kb_dumps.sparql_text import with_prefixes
from kb_dumps.stage_errors import KBQAError
from kbqa.mcp.models import KBDescription, SchemaItem, SparqlResult, ToolErrorBody
from kbqa.server import schemas
from kbqa.server.app import AppState, default_engine_factory
from kbqa.server.engines import EnginePool, EngineWorker, StorePool
from kbqa.server.errors import ServerError, result_status
from kbqa.server.limits import Gate
from kbqa.settings import ServerSettings

if TYPE_CHECKING:
    from mcp.server.mcpserver import Context

    from grounding.candidates import GroundingResult
    from grounding.schema import SchemaMemory
    from kbqa.pipeline import Engine, Result

INSTRUCTIONS = """kbqa answers questions over one local knowledge graph with checked SPARQL.
Start with `describe_kb` (profile, classes and predicates with labels), then `ask` a question in words.
`generate_sparql` writes the query without running it; `run_sparql` runs a read-only query (no SERVICE, no
updates); `ground` finds KB ids for a label; `explain` compiles a DeSQ / QCompiler / PyRAG text you wrote.
Every result carries `steps` (stage, ok, detail); a failure names its stage."""
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
ResultOut = Annotated[CallToolResult, schemas.Result]
Question = Annotated[str, Field(description="the question, in words (English)")]
Execute = Annotated[bool, Field(description="run the query (false: SPARQL only)")]
P = ParamSpec("P")  # a tool's parameters
T = TypeVar("T")  # what a call on an engine returns
ToolBody = Callable[P, Awaitable[CallToolResult]]  # a tool's async body, over its parameters P


class Tool(Protocol):
    """Registers a tool body (guarded: `guarded`), keeping its parameters (they are the tool's input schema)."""

    def __call__(self, fn: ToolBody[P]) -> ToolBody[P]: ...


class OnEngine(Protocol):
    """Runs a call on a free engine of the pool (within the queue wait and the time budget)."""

    def __call__(self, fn: Callable[[EngineWorker], T]) -> Awaitable[T]: ...


@dataclass
class State(AppState):
    """What the lifespan opens once per process and every tool shares: the HTTP server's state, plus what
    `describe_kb` reads once."""

    schema: SchemaMemory | None = None  # read (or built) on the first describe_kb
    translator: str | None = None


def tool_error(stage: str, message: str, result: JsonObject | None = None) -> CallToolResult:
    body = ToolErrorBody(error=schemas.ErrorDetail(stage=stage, message=message), result=result)
    return CallToolResult(content=[TextContent(type="text", text=f"error [{stage}]: {message}")],
                          structured_content=body.model_dump(mode="json", exclude_none=True), is_error=True)


def structured(data: JsonObject) -> CallToolResult:
    """Structured content plus the same JSON as text, for clients that read only text blocks."""
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(data, ensure_ascii=False))],
                          structured_content=data)


def result_output(result: Result) -> CallToolResult:
    """A Result is a tool error exactly when `/v1` would answer it with a 4xx/5xx (`result_status`): a failed
    translation, parse or store; an empty answer is a success, as it is a 200 there."""
    if result_status(result) < 400:
        return structured(result.to_dict())
    first = result.errors[0] if result.errors else None
    stage = first.stage if first is not None else (result.failed_stage or "server")
    message = first.message if first is not None else f"failed at stage {result.failed_stage}"
    return tool_error(str(stage), message, result.to_dict())


def invalid(e: ValidationError) -> str:
    """One line per bad argument, `name: why` (pydantic's own text adds input echoes and a docs URL)."""
    parts = []
    for err in e.errors():
        loc = ".".join(str(x) for x in err.get("loc", ()))
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts) or "the arguments are not valid"


class KbqaMCP(MCPServer[State]):
    """MCPServer whose failures before or around a tool body carry a stage too: arguments that fail the input
    schema are `usage`, a crash is `internal` (its traceback stays in the server's log, as in `kbqa serve`)."""

    async def run_stdio_async(self) -> None:
        """The SDK's stdio loop, reading through `checked_stdio_server`: a malformed line gets a JSON-RPC error
        instead of silence (kbqa/mcp/stdio.py)."""
        from kbqa.mcp.stdio import checked_stdio_server

        server = self._lowlevel_server
        async with checked_stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    async def call_tool(self, name: str, arguments: JsonObject, context: Context[State] | None = None
                        ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError as e:
            logging.getLogger("kbqa.mcp").error("tool %s failed", name, exc_info=e.__cause__)
            return tool_error("internal", f"internal error in {name} ({type(e.__cause__).__name__}); the server log "
                                          "has the details")
        except ToolError as e:
            if isinstance(e.__cause__, ValidationError):
                return tool_error("usage", invalid(e.__cause__))
            return tool_error("usage", str(e))  # an unknown tool name


def guarded(state: State) -> Tool:
    """Count the call against `max_inflight` (refused while shutting down, as `InflightLimit` does for HTTP) and
    turn refusals and KB errors into tool errors with their stage. Anything else is our bug: `KbqaMCP` answers
    it as stage `internal` and logs the traceback on stderr."""

    def wrap(fn: ToolBody[P]) -> ToolBody[P]:
        @functools.wraps(fn)
        async def call(*args: P.args, **kwargs: P.kwargs) -> CallToolResult:
            gate = state.gate
            if gate.draining:
                return tool_error("server", "the server is shutting down; retry on a running one")
            if gate.inflight >= gate.max_inflight:
                return tool_error("server", f"too many calls in flight (the limit is {gate.max_inflight}); "
                                            "retry in a moment")
            gate.inflight += 1  # one event loop: no lock needed
            try:
                return await fn(*args, **kwargs)
            except ServerError as e:
                return tool_error(e.stage, e.message)
            except KBQAError as e:
                return tool_error(str(e.info.stage), e.info.message)
            except ValidationError as e:  # the /v1 request models (kbqa.server.schemas) as checks
                return tool_error("usage", invalid(e))
            except ValueError as e:  # the request checks of kbqa.server.schemas (empty, too long, not text)
                return tool_error("usage", str(e))
            finally:
                gate.inflight -= 1

        return call

    return wrap


def create_server(settings: ServerSettings | None = None, *,
                  engine_factory: Callable[[], Engine] | None = None) -> MCPServer[State]:
    """The MCP server over `settings.store` (or `settings.sparql_endpoint`); `engine_factory` as for `create_app`."""
    settings = settings or ServerSettings()
    state = State(settings, Gate(settings.max_inflight))
    server = KbqaMCP("kbqa", title="kbqa: questions over a local knowledge graph", instructions=INSTRUCTIONS,
                     version="0.1.0", lifespan=_lifespan(state, engine_factory or default_engine_factory(settings)))
    guard = guarded(state)

    def tool(fn: ToolBody[P]) -> ToolBody[P]:
        return server.tool(annotations=READ_ONLY)(guard(fn))

    async def on_engine(fn: Callable[[EngineWorker], T]) -> T:
        assert state.engines is not None
        return await state.engines.run(fn, settings.queue_timeout_s, settings.request_timeout_s)

    _add_question_tools(tool, state, on_engine)
    _add_query_tools(tool, state, on_engine)
    _add_kb_description(server, tool, state, on_engine)
    _add_eval_resource(server)
    server.state = state  # type: ignore[attr-defined]  # tests and the bench read the opened pools
    return server


def _lifespan(state: State, make_engine: Callable[[], Engine]
              ) -> Callable[[MCPServer[State]], AbstractAsyncContextManager[State]]:
    """Opens the engines and the query workers once per process, on both transports (the streamable-HTTP manager
    shares the lifespan across sessions), and closes them at the end."""
    settings = state.settings

    @asynccontextmanager
    async def lifespan(_: MCPServer[State]) -> AsyncIterator[State]:
        state.engines = EnginePool(settings.engines, make_engine, settings.model_timeout_s)
        await state.engines.start()
        worker = state.engines.workers[0]
        state.profile = worker.engine.profile if worker.engine is not None else None
        state.translator = worker.translator.name if worker.translator is not None else None
        if settings.store is not None or settings.sparql_endpoint:
            state.store_pool = StorePool(settings.store, settings.sparql_workers, settings.query_timeout_s,
                                         settings.row_cap, endpoint=settings.sparql_endpoint,
                                         dialect=settings.endpoint_dialect)
            await state.store_pool.warm()
        try:
            yield state
        finally:
            state.gate.draining = True
            if state.store_pool is not None:
                state.store_pool.close()
            state.engines.close()

    return lifespan


def _add_question_tools(tool: Tool, state: State, on_engine: OnEngine) -> None:
    """`ask`, `generate_sparql` and `explain`: the engine's ask and compile."""
    settings = state.settings

    async def asked(question: str, frontend: str, execute: bool) -> CallToolResult:
        q = schemas.check_question(question, settings.max_question_chars)
        result = await on_engine(lambda w: w.engine.ask(q, frontend=frontend, execute=execute))
        return result_output(result)

    @tool
    async def ask(question: Question, frontend: schemas.Frontend = "desq", execute: Execute = True) -> ResultOut:
        """Answer a question over the knowledge graph: translate it, ground its labels to KB ids, assemble checked
        SPARQL and run it. Returns the answers (with labels), the SPARQL, the grounding and a step report."""
        return await asked(question, frontend, execute)

    @tool
    async def generate_sparql(question: Question, frontend: schemas.Frontend = "desq") -> ResultOut:
        """Write checked, grounded SPARQL for a question without running it (status `generated`): for another
        endpoint, or to inspect before `run_sparql`."""
        return await asked(question, frontend, False)

    @tool
    async def explain(text: Annotated[str, Field(description="a DeSQ, QCompiler or PyRAG text")],
                      frontend: schemas.Frontend = "desq", execute: Execute = True) -> ResultOut:
        """Compile a front-end text you wrote (DeSQ atomic constraints + fragments + grounding, a QCompiler
        expression, or a PyRAG program) into the Plan, its grounding and checked SPARQL, and run it."""
        req = schemas.CompileRequest(frontend=frontend, source=text, execute=execute)  # the /v1/compile checks
        if len(req.source) > settings.max_source_chars:
            return tool_error("usage", f"the text has {len(req.source)} characters; the limit is "
                                       f"{settings.max_source_chars}")
        return result_output(await on_engine(lambda w: w.engine.compile(req.source, frontend=req.frontend,
                                                                        execute=req.execute)))


def _add_query_tools(tool: Tool, state: State, on_engine: OnEngine) -> None:
    """`run_sparql` (the store's read-only query, as /sparql) and `ground` (as /v1/ground)."""
    settings = state.settings

    @tool
    async def run_sparql(query: Annotated[str, Field(description="a SELECT, ASK, CONSTRUCT or DESCRIBE query; the "
                                                                 "KB's prefixes (wd:, wdt:, …) need no PREFIX")]
                         ) -> Annotated[CallToolResult, SparqlResult]:
        """Run a read-only SPARQL query on the knowledge graph, as the server's /sparql does: updates and SERVICE
        are refused before anything runs, and the time budget and row cap apply."""
        schemas.check_text(query, "the query")
        if not query.strip():
            return tool_error("usage", "the query is empty; give a SPARQL query")
        if len(query.encode("utf-8")) > settings.max_body_bytes:
            return tool_error("usage", f"the query has {len(query.encode('utf-8'))} bytes; the limit is "
                                       f"{settings.max_body_bytes} bytes")
        if state.store_pool is None:
            return tool_error("store", "this server has no store: start it with --store DIR or --endpoint URL")
        if state.profile is not None:
            query = with_prefixes(query, state.profile.prefixes)
        task = asyncio.current_task()
        try:
            res = await state.store_pool.rows(query, settings.queue_timeout_s)
        except asyncio.CancelledError:  # the client cancelled the call: free the worker now, not at the deadline
            state.store_pool.interrupt(task)
            raise
        out = SparqlResult(kind=res.kind, vars=res.vars, rows=res.rows, boolean=res.boolean, truncated=res.truncated,
                           row_cap=settings.row_cap, seconds=round(res.elapsed_s, 6))
        return structured(out.model_dump(mode="json", by_alias=True, exclude_none=True))

    @tool
    async def ground(label: Annotated[str, Field(description="the label, as a user would write it", max_length=1000)],
                     kind: Literal["entity", "property", "class"] | None = None,
                     description: Annotated[str | None, Field(description="a short description that "
                                                                          "disambiguates the label")] = None,
                     k: Annotated[int, Field(ge=1, le=100, description="number of candidates")] = 10
                     ) -> Annotated[CallToolResult, schemas.GroundingResponse]:
        """Ranked KB ids for a label (and description): hybrid lexical + vector search over the label memory, with
        scores and the signals behind them; nothing below the confidence threshold."""
        schemas.check_text(label, "the label")

        def call(w: EngineWorker) -> GroundingResult:
            found = w.engine.assembler.grounder.search(label, description, kind, k)
            if found is None:  # the index-less grounder proposes nothing (as /v1/ground: 503 there)
                raise ServerError(503, "this server's store has no grounding index, so labels cannot be looked up; "
                                       f"build it with `kbqa index --store {settings.store or 'DIR'}`", "ground")
            return found

        return structured((await on_engine(call)).to_dict())


def _add_kb_description(server: MCPServer[State], tool: Tool, state: State, on_engine: OnEngine) -> None:
    """`describe_kb` and the `kbqa://schema` resource: the KB's vocabulary, read once."""

    async def describe(limit: int) -> KBDescription:
        if state.schema is None:
            state.schema = await on_engine(read_schema)
        return kb_description(state, limit)

    @tool
    async def describe_kb(limit: Annotated[int, Field(ge=1, le=1000, description="classes and predicates to "
                                                                                 "list, most used first")] = 50
                          ) -> Annotated[CallToolResult, KBDescription]:
        """The knowledge graph behind the other tools: its profile, triple and label counts, prefixes, and the most
        used classes and predicates with their labels: the vocabulary to phrase questions and queries in."""
        return structured((await describe(limit)).model_dump(mode="json"))

    @server.resource("kbqa://schema", name="schema", mime_type="application/json",
                     description="the KB's profile, counts, prefixes, and its 200 most used classes and predicates")
    async def schema_resource() -> str:
        try:
            return (await describe(200)).model_dump_json(indent=1)
        except (ServerError, KBQAError) as e:
            raise ResourceError(str(e)) from None


def _add_eval_resource(server: MCPServer[State]) -> None:
    """`kbqa://eval/last`: the newest `kbqa eval` report, offered only when one has been written."""
    if last_eval_report() is None:
        return

    @server.resource("kbqa://eval/last", name="last evaluation report", mime_type="text/markdown",
                     description="the newest `kbqa eval` report (report.md) under the kbqa home")
    def eval_resource() -> str:
        path = last_eval_report()
        if path is None:
            raise ResourceError("no evaluation report any more")
        return path.read_text(encoding="utf-8")


def read_schema(w: EngineWorker) -> SchemaMemory:
    """The store's schema memory (`grounding.schema`): saved by `kbqa index`, else built once and saved."""
    from grounding.schema import build_schema, open_schema

    engine = w.engine
    assembler = engine.assembler
    if assembler.store is None:
        raise ServerError(503, "this server has no store: start it with --store DIR or --endpoint URL", "store")
    if engine.store_dir is None:  # an endpoint alone: nowhere to keep it; built once per process
        return build_schema(assembler.store, engine.profile, None)
    return open_schema(engine.store_dir, assembler.store, engine.profile, assembler.memory)


def kb_description(state: State, limit: int) -> KBDescription:
    from kb_dumps.layout import StoreLayout

    settings, profile, schema = state.settings, state.profile, state.schema
    manifest = StoreLayout.of(settings.store).manifest() if settings.store is not None else {}
    classes = sorted(schema.classes.items(), key=lambda kv: -int(kv[1].get("count", 0)))
    preds = sorted(schema.predicates.items(), key=lambda kv: -kv[1].count)
    return KBDescription(
        profile=profile.name, store=str(settings.store) if settings.store else None,
        endpoint=settings.sparql_endpoint, triples=manifest.get("triples"), labels=manifest.get("label_rows"),
        prefixes=dict(profile.prefixes), total_classes=len(classes), total_predicates=len(preds),
        classes=[SchemaItem(iri=c, short=profile.compact(c), label=schema.class_label(c), count=int(d.get("count", 0)))
                 for c, d in classes[:limit]],
        predicates=[SchemaItem(iri=p, short=profile.compact(p), label=i.label, count=i.count)
                    for p, i in preds[:limit]],
        translator=state.translator)


def last_eval_report() -> Path | None:
    """The newest report.md of `kbqa eval` under `<home>/eval/` (its default --out), or None."""
    from kbqa.settings import get_settings

    reports = list((get_settings().store.home / "eval").glob("*/report.md"))
    return max(reports, key=lambda p: p.stat().st_mtime) if reports else None


def serve(settings: ServerSettings, transport: Literal["stdio", "http"] = "stdio") -> None:
    """Serve until the client closes stdin (stdio) or until SIGINT/SIGTERM (streamable HTTP at /mcp)."""
    server = create_server(settings)
    if transport == "stdio":
        import anyio

        anyio.run(server.run_stdio_async)
        return
    import uvicorn

    from kbqa.mcp.http import CheckedBodies

    # The SDK bounds the body itself, with the HTTP server's limit; CheckedBodies answers a body that is not an MCP
    # message with one JSON-RPC error (kbqa/mcp/http.py), as the stdio transport does for a line. Plain JSON answers
    # instead of an SSE stream per call: no tool sends progress or log notifications mid-call, and SSE tripled the
    # transport's cost (bench/mcp_latency.py: +16 ms vs +6 ms per `ask` at the median).
    app = server.streamable_http_app(max_request_body_size=settings.max_body_bytes, host=settings.host,
                                     json_response=True)
    uvicorn.run(CheckedBodies(app, settings.max_body_bytes), host=settings.host, port=settings.port,
                log_level="warning", timeout_graceful_shutdown=settings.graceful_timeout_s)
