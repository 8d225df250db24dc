"""`GET|POST /sparql`: the SPARQL 1.1 Protocol over the local store, read-only, results by content negotiation.

Queries run through `LocalStore.write` (worker process, deadline, row cap): the worker checks the query, runs
it and writes the result with pyoxigraph's own serializers in the negotiated format (SPARQL JSON / XML / CSV /
TSV; CONSTRUCT and DESCRIBE triples as Turtle, N-Triples or RDF/XML), and the bytes go to the client as they
are (kb_dumps/results.py; a result XML cannot carry is refused with 406: kb_dumps/xml_check.py). Updates are
refused with 403 and SERVICE with 400 before anything runs (decided from the tokens Oxigraph reads:
kb_dumps/sparql_check.py). The protocol's `default-graph-uri` / `named-graph-uri` choose the dataset among
the store's named graphs. When the client goes away, its query's worker is killed.

`SparqlRoute` serves GET and POST /sparql as plain ASGI, inside the body and in-flight limits but outside
FastAPI's routing and dependency machinery (a third of the request's CPU for a small query); the FastAPI
routes below document the endpoint in /openapi.json and answer the same way when reached.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Protocol
from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import Response
from starlette.datastructures import URL
from starlette.types import ASGIApp, Receive, Scope, Send

from kb_dumps.results import Written
from kb_dumps.sparql_check import RefusedQuery
from kb_dumps.stage_errors import EndpointError, QueryError, StoreError
from kb_dumps.store import ResourceError
from kb_dumps.store_types import Dataset
from kb_dumps.xml_check import Unwritable
from kbqa.server.errors import ResponseDoc, ServerError, error_body
from kbqa.server.schemas import ErrorResponse

if TYPE_CHECKING:
    from kb_dumps.sparql_text import Prefixes
    from kbqa.server.engines import StorePool
    from kbqa.settings import ServerSettings


class SparqlState(Protocol):
    """What /sparql reads of the server's state (`kbqa.server.app.AppState`)."""

    settings: ServerSettings
    store_pool: StorePool | None
    prefixes: Prefixes | None

router = APIRouter()

# media type -> pyoxigraph format name, for each kind of result; the first is the default.
RESULT_TYPES = {"application/sparql-results+json": "JSON", "application/json": "JSON",
                "application/sparql-results+xml": "XML", "application/xml": "XML", "text/xml": "XML",
                "text/csv": "CSV", "text/tab-separated-values": "TSV"}
GRAPH_TYPES = {"text/turtle": "TURTLE", "application/turtle": "TURTLE", "application/x-turtle": "TURTLE",
               "application/n-triples": "N_TRIPLES", "text/plain": "N_TRIPLES", "application/rdf+xml": "RDF_XML"}
# the `format` parameter many clients send (SPARQLWrapper sends format=, output=, results=)
FORMAT_PARAM = {"json": "application/sparql-results+json", "xml": "application/sparql-results+xml",
                "csv": "text/csv", "tsv": "text/tab-separated-values", "turtle": "text/turtle",
                "n3": "text/turtle", "nt": "application/n-triples", "ntriples": "application/n-triples",
                "rdf+xml": "application/rdf+xml", "rdfxml": "application/rdf+xml"}
UPDATE_TYPES = ("application/sparql-update",)


def accepted(header: str) -> list[tuple[str, float]]:
    """Media ranges of an Accept header, best first (q-values; order of appearance breaks ties)."""
    out = []
    for i, part in enumerate(header.split(",")):
        fields = [f.strip() for f in part.split(";")]
        if not fields[0]:
            continue
        q = 1.0
        for f in fields[1:]:
            if f.lower().startswith("q="):
                try:
                    q = float(f[2:])
                except ValueError:
                    q = 0.0
        out.append((fields[0].lower(), q, i))
    out.sort(key=lambda t: (-t[1], t[2]))
    return [(m, q) for m, q, _ in out if q > 0]


def acceptable(accept: str | None, fmt: str | None, kind: str) -> str | None:
    """The media type to answer with, for a result of `kind` (select | ask | graph); None when none is acceptable."""
    table = GRAPH_TYPES if kind == "graph" else RESULT_TYPES
    default = "text/turtle" if kind == "graph" else "application/sparql-results+json"
    wanted = FORMAT_PARAM.get((fmt or "").lower(), (fmt or "").lower())
    if wanted in table:  # an explicit format parameter names one we serve
        return wanted
    ranges = accepted(accept or "*/*")
    for media, _ in ranges:
        if media in table:
            return media
        if media in ("*/*", "application/*", "text/*") and (media == "*/*" or default.startswith(media[:-1])):
            return default
    if not ranges:
        return default
    return None


def negotiate(accept: str | None, fmt: str | None, kind: str) -> str:
    """The media type to answer with, for a result of `kind`; 406 when the client accepts none we serve."""
    media = acceptable(accept, fmt, kind)
    if media is not None:
        return media
    table = GRAPH_TYPES if kind == "graph" else RESULT_TYPES
    raise ServerError(406, f"cannot answer a {kind} query as {accept!r}; acceptable: "
                           f"{', '.join(sorted(set(table)))}", "execute")


def refusal_status(e: RefusedQuery) -> int:
    """Updates → 403 (the endpoint is read-only); SERVICE, or a query the checker cannot parse → 400."""
    return 403 if e.refusal == "update" else 400


def _charset(content_type: str) -> str | None:
    for part in content_type.split(";")[1:]:
        key, _, value = part.strip().partition("=")
        if key.lower() == "charset":
            return value.strip().strip('"').lower()
    return None


def _utf8(body: bytes, what: str) -> str:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ServerError(400, f"{what} is not UTF-8 (byte {e.start}); the SPARQL Protocol requires UTF-8",
                          "execute") from None
    if "\x00" in text:
        raise ServerError(400, f"{what} contains a NUL character; is it UTF-16? the SPARQL Protocol requires UTF-8",
                          "execute")
    return text


def _parse_qs(text: str, what: str) -> dict[str, list[str]]:
    try:  # strict: a percent-encoded byte sequence that is not UTF-8 is refused, not turned into U+FFFD
        return parse_qs(text, keep_blank_values=True, errors="strict")
    except UnicodeDecodeError:
        raise ServerError(400, f"{what} percent-encodes bytes that are not UTF-8", "execute") from None


def read_query(method: str, query_string: str, content_type: str, body: bytes) -> tuple[str, dict[str, list[str]]]:
    """The query and the protocol parameters of a request (GET `query=`, POST form `query=`, or POST
    application/sparql-query)."""
    params = _parse_qs(query_string, "the query string")
    if method == "POST":
        ctype = content_type.split(";")[0].strip().lower()
        charset = _charset(content_type)
        if ctype in UPDATE_TYPES:
            raise ServerError(403, "SPARQL Update is refused: this endpoint is read-only", "execute")
        if charset not in (None, "utf-8", "utf8") and ctype in ("application/x-www-form-urlencoded",
                                                                 "application/sparql-query"):
            raise ServerError(415, f"charset {charset!r} is not accepted: the SPARQL Protocol requires UTF-8", "usage")
        if ctype == "application/x-www-form-urlencoded":
            form = _parse_qs(_utf8(body, "the form body"), "the form body")
            params = {**params, **form}
        elif ctype == "application/sparql-query":
            params = {**params, "query": [_utf8(body, "the query")]}
        else:
            raise ServerError(415, f"unsupported content type {ctype or '(none)'!r}: send the query as "
                                   "application/sparql-query or as a form field query=", "usage")
    if "update" in params:
        raise ServerError(403, "SPARQL Update is refused: this endpoint is read-only", "execute")
    queries = params.get("query", [])
    if len(queries) != 1 or not queries[0].strip():
        raise ServerError(400, "give exactly one non-empty query: GET /sparql?query=… or POST it", "execute")
    return queries[0], params


def dataset_of(params: dict[str, list[str]], base_iri: str) -> Dataset:
    """The protocol's dataset (each default-graph-uri / named-graph-uri must be an absolute IRI), and the base
    IRI of the query: this endpoint's URL, as the protocol allows."""
    from kb_dumps.sparql_text import IRIREF

    graphs: dict[str, tuple[str, ...]] = {}
    for key in ("default-graph-uri", "named-graph-uri"):
        values = tuple(v.strip() for v in params.get(key, []) if v.strip())
        bad = [v for v in values if not IRIREF.fullmatch(v) or ":" not in v]
        if bad:
            raise ServerError(400, f"{key} {bad[0][:200]!r} is not an absolute IRI", "execute")
        graphs[key] = values
    return Dataset(graphs["default-graph-uri"], graphs["named-graph-uri"], base_iri)


_RESPONSES: dict[int | str, ResponseDoc] = {
    200: {"description": "SPARQL results (JSON, XML, CSV, TSV) or RDF (Turtle, N-Triples, RDF/XML) by Accept",
          "content": {m: {} for m in [*RESULT_TYPES, *GRAPH_TYPES]}},
    **{code: {"model": ErrorResponse, "description": why} for code, why in (
        (400, "malformed query, SERVICE, a bad dataset IRI or format, or a missing query"),
        (403, "an update (the endpoint is read-only)"),
        (406, "no acceptable result format"), (413, "the body is too large"), (415, "unsupported content type"),
        (429, "too many requests in flight"), (502, "the remote SPARQL endpoint behind the server failed"),
        (503, "query workers busy or store failure"),
        (507, "the query went past the worker's memory bound or the result-size bound"),
        (504, "the query ran past its time budget"))}}


def _store_error(e: Exception) -> ServerError:
    """The HTTP error of a failed query."""
    if isinstance(e, RefusedQuery):
        return ServerError(refusal_status(e), e.info.message, "execute")
    if isinstance(e, Unwritable):
        return ServerError(406, e.info.message, "execute")
    if isinstance(e, ResourceError):
        return ServerError(507, e.info.message, "execute")
    if isinstance(e, EndpointError):
        # the remote endpoint behind this server failed (down, HTTP error, garbage): a gateway error, not the
        # client's query, unless the endpoint refused the query itself (HTTP 400)
        status = 400 if e.status == 400 else (504 if e.timed_out else 502)
        return ServerError(status, e.info.message, "execute")
    if isinstance(e, QueryError):
        return ServerError(504 if e.timed_out else 400, e.info.message, "execute")
    if isinstance(e, StoreError):
        return ServerError(503, e.info.message, "store")
    raise e


async def answer(state: SparqlState, method: str, query_string: str, content_type: str, accept: str | None, body: bytes,
                 base_iri: str, gone: asyncio.Future) -> tuple[bytes, str, dict[str, str]]:
    """(body, media type, headers) of one /sparql request; ServerError for every refusal. `gone` completes when the
    client disconnects: its query's worker is then killed, so that it serves the next request instead of
    finishing work nobody will read."""
    if state.store_pool is None:
        raise ServerError(503, "this server has no store: start it with --store DIR", "store")
    query, params = read_query(method, query_string, content_type, body)
    dataset = dataset_of(params, base_iri)
    fmt = (params.get("format") or params.get("output") or [None])[0]
    if fmt is not None and fmt.lower() not in FORMAT_PARAM and fmt.lower() not in {*RESULT_TYPES, *GRAPH_TYPES}:
        raise ServerError(400, f"unknown format {fmt[:80]!r}; one of: {', '.join(sorted(FORMAT_PARAM))}", "usage")
    if state.prefixes is not None:
        query = state.prefixes(query)
    table, graph = acceptable(accept, fmt, "select"), acceptable(accept, fmt, "graph")
    formats = (RESULT_TYPES[table] if table else None, GRAPH_TYPES[graph] if graph else None)
    pool = state.store_pool
    task = asyncio.ensure_future(pool.query(query, state.settings.queue_timeout_s, dataset, formats))
    await asyncio.wait((task, gone), return_when=asyncio.FIRST_COMPLETED)
    if not task.done():
        pool.interrupt(task)
        task.add_done_callback(lambda t: t.cancelled() or t.exception())  # its "cancelled" error is expected
        raise ServerError(499, "the client went away; its query was stopped", "execute")
    try:
        written: Written = task.result()
    except (QueryError, StoreError) as e:
        raise _store_error(e) from None
    if written.fmt is None:
        negotiate(accept, fmt, written.kind)  # raises the 406
    media = graph if written.kind == "graph" else table
    headers = {"vary": "Accept"}
    if written.truncated:
        headers["x-kbqa-row-cap-reached"] = str(written.rows)
    assert media is not None
    return written.body, media, headers


def _content_type(media: str) -> str:
    return media + "; charset=utf-8" if media.startswith("text/") else media  # as Starlette writes text/*


class SparqlRoute:
    """ASGI middleware that answers GET and POST /sparql itself (everything else goes on to the app)."""

    def __init__(self, app: ASGIApp, state: SparqlState):
        self.app, self.state = app, state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != "/sparql" or scope["method"] not in ("GET", "POST"):
            await self.app(scope, receive, send)
            return
        headers = {}
        for k, v in scope["headers"]:
            if k in (b"accept", b"content-type", b"host"):
                headers[k] = v.decode("latin-1")
        chunks = []
        while True:  # a GET has one empty body message too
            msg = await receive()
            if msg["type"] == "http.disconnect":
                return
            chunks.append(msg.get("body", b""))
            if not msg.get("more_body"):
                break
        body = b"".join(chunks)
        gone = asyncio.ensure_future(receive())  # after the body, the next message is the disconnect
        try:
            data, media, extra = await answer(
                self.state, scope["method"], scope.get("query_string", b"").decode("latin-1"),
                headers.get(b"content-type", ""), headers.get(b"accept"), body,
                str(URL(scope=scope).replace(query="")), gone)
            status = 200
        except ServerError as e:
            if e.status == 499:
                return
            data = json.dumps(error_body(e.stage, e.message)).encode("utf-8")
            status, media, extra = e.status, "application/json", {k.lower(): v for k, v in (e.headers or {}).items()}
        finally:
            gone.cancel()
        raw = [(b"content-type", _content_type(media).encode()), (b"content-length", str(len(data)).encode()),
               *((k.encode(), v.encode()) for k, v in extra.items())]
        await send({"type": "http.response.start", "status": status, "headers": raw})
        await send({"type": "http.response.body", "body": data})


async def sparql(request: Request) -> Response:
    """Run a read-only query (GET `query=`, POST form `query=`, or POST application/sparql-query)."""
    gone: asyncio.Future = asyncio.get_running_loop().create_future()

    async def watch() -> None:
        while not await request.is_disconnected():
            await asyncio.sleep(0.25)
        gone.set_result(None)

    watcher = asyncio.ensure_future(watch())
    try:
        data, media, headers = await answer(
            request.app.state.kbqa, request.method, request.url.query, request.headers.get("content-type", ""),
            request.headers.get("accept"), await request.body(), str(request.url.replace(query="")), gone)
    finally:
        watcher.cancel()
    return Response(data, media_type=media, headers=headers)  # text/* gets charset=utf-8


for _method in ("GET", "POST"):
    router.add_api_route("/sparql", sparql, methods=[_method], responses=_RESPONSES,
                         operation_id=f"sparql_{_method.lower()}", summary=f"SPARQL 1.1 Protocol, {_method} (read-only)")
