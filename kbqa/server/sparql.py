"""`GET|POST /sparql`: the SPARQL 1.1 Protocol over the local store, read-only, results by content negotiation.

Queries run through `LocalStore.query` (worker process, deadline, row cap). Results are written by
pyoxigraph's own serializers: the worker's SPARQL-JSON-shaped rows are read back as query solutions
and serialized as SPARQL JSON / XML / CSV / TSV; CONSTRUCT and DESCRIBE triples as Turtle, N-Triples or
RDF/XML (a result XML cannot carry is refused with 406: kbqa/server/xml_check.py). Updates are refused
with 403 and SERVICE with 400 before anything runs (decided from the tokens
Oxigraph reads: kb_dumps/sparql_check.py). The protocol's `default-graph-uri` / `named-graph-uri` choose the dataset among
the store's named graphs. When the client goes away, its query's worker is killed.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import Response

from kb_dumps.errors import EndpointError, QueryError, StoreError
from kb_dumps.sparql_check import RefusedQuery
from kb_dumps.store import Dataset, QueryResult, ResourceError, Term
from kbqa.server.errors import ServerError
from kbqa.server.schemas import ErrorResponse
from kbqa.server.xml_check import check_xml

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


def negotiate(accept: str | None, fmt: str | None, kind: str) -> str:
    """The media type to answer with, for a result of `kind` (select | ask | graph)."""
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
    raise ServerError(406, f"cannot answer a {kind} query as {accept!r}; acceptable: "
                           f"{', '.join(sorted(set(table)))}", "execute")


def _ox_term(t: Term | None) -> Any:
    import pyoxigraph as ox

    if t is None:
        return None
    if t["type"] == "uri":
        return ox.NamedNode(t["value"])
    if t["type"] == "bnode":
        return ox.BlankNode(t["value"])
    if "xml:lang" in t:
        return ox.Literal(t["value"], language=t["xml:lang"])
    if "datatype" in t:
        return ox.Literal(t["value"], datatype=ox.NamedNode(t["datatype"]))
    return ox.Literal(t["value"])


def sparql_json(res: QueryResult) -> dict:
    """The W3C SPARQL 1.1 Query Results JSON of a SELECT or ASK result."""
    if res.kind == "ask":
        return {"head": {}, "boolean": bool(res.boolean)}
    bindings = [{v: t for v, t in zip(res.vars, row, strict=True) if t is not None} for row in res.rows]
    return {"head": {"vars": list(res.vars)}, "results": {"bindings": bindings}}


def serialize(res: QueryResult, media: str) -> bytes:
    import pyoxigraph as ox

    if GRAPH_TYPES.get(media) == "RDF_XML" or (res.kind != "graph" and RESULT_TYPES.get(media) == "XML"):
        check_xml(res, rdf_xml=res.kind == "graph")  # 406 for what XML cannot carry (kbqa/server/xml_check.py)
    if res.kind == "graph":
        triples = [ox.Triple(*(_ox_term(t) for t in row)) for row in res.rows]
        return ox.serialize(triples, format=getattr(ox.RdfFormat, GRAPH_TYPES[media]))
    data = json.dumps(sparql_json(res), ensure_ascii=False).encode("utf-8")
    fmt = RESULT_TYPES[media]
    if fmt == "JSON":
        return data
    solutions = ox.parse_query_results(data, format=ox.QueryResultsFormat.JSON)
    return solutions.serialize(format=getattr(ox.QueryResultsFormat, fmt))


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


async def _read_query(request: Request) -> tuple[str, dict[str, list[str]]]:
    params = _parse_qs(request.url.query, "the query string")
    if request.method == "POST":
        full_type = request.headers.get("content-type", "")
        ctype = full_type.split(";")[0].strip().lower()
        charset = _charset(full_type)
        body = await request.body()
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


_RESPONSES: dict[int | str, dict[str, Any]] = {
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


async def _run(request: Request, query: str, dataset: Dataset) -> QueryResult:
    """The query on a free worker; when the client disconnects first, the worker's query is killed so that
    the worker serves the next request instead of finishing work nobody will read."""
    state = request.app.state.kbqa
    task = asyncio.ensure_future(state.store_pool.query(query, state.settings.queue_timeout_s, dataset))
    while True:
        done, _ = await asyncio.wait({task}, timeout=0.25)
        if done:
            return task.result()
        if await request.is_disconnected():
            state.store_pool.interrupt(task)
            task.add_done_callback(lambda t: t.cancelled() or t.exception())  # its "cancelled" error is expected
            raise ServerError(499, "the client went away; its query was stopped", "execute")


async def sparql(request: Request) -> Response:
    """Run a read-only query (GET `query=`, POST form `query=`, or POST application/sparql-query)."""
    state = request.app.state.kbqa
    if state.store_pool is None:
        raise ServerError(503, "this server has no store: start it with --store DIR", "store")
    query, params = await _read_query(request)
    dataset = dataset_of(params, str(request.url.replace(query="")))
    fmt = (params.get("format") or params.get("output") or [None])[0]
    if fmt is not None and fmt.lower() not in FORMAT_PARAM and fmt.lower() not in {*RESULT_TYPES, *GRAPH_TYPES}:
        raise ServerError(400, f"unknown format {fmt[:80]!r}; one of: {', '.join(sorted(FORMAT_PARAM))}", "usage")
    if state.profile is not None:
        from kbqa.commands.sparql import with_prefixes

        query = with_prefixes(query, state.profile.prefixes)  # as WDQS does, the KB's prefixes are predeclared
    try:
        res = await _run(request, query, dataset)
    except RefusedQuery as e:
        raise ServerError(refusal_status(e), e.info.message, "execute") from None
    except ResourceError as e:
        raise ServerError(507, e.info.message, "execute") from None
    except EndpointError as e:
        # the remote endpoint behind this server failed (down, HTTP error, garbage): a gateway error, not the
        # client's query, unless the endpoint refused the query itself (HTTP 400)
        status = 400 if e.status == 400 else (504 if e.timed_out else 502)
        raise ServerError(status, e.info.message, "execute") from None
    except QueryError as e:
        raise ServerError(504 if e.timed_out else 400, e.info.message, "execute") from None
    except StoreError as e:
        raise ServerError(503, e.info.message, "store") from None
    media = negotiate(request.headers.get("accept"), fmt, res.kind)
    headers = {"Vary": "Accept"}
    if res.truncated:
        headers["X-KBQA-Row-Cap-Reached"] = str(len(res.rows))
    return Response(serialize(res, media), media_type=media, headers=headers)  # text/* gets charset=utf-8


for _method in ("GET", "POST"):
    router.add_api_route("/sparql", sparql, methods=[_method], responses=_RESPONSES,
                         operation_id=f"sparql_{_method.lower()}", summary=f"SPARQL 1.1 Protocol, {_method} (read-only)")
