"""`GET|POST /sparql`: the SPARQL 1.1 Protocol over the local store, read-only, results by content negotiation.

Queries run through `LocalStore.query` (worker process, deadline, row cap). Results are written by
pyoxigraph's own serializers: the worker's SPARQL-JSON-shaped rows are read back as query solutions
and serialized as SPARQL JSON / XML / CSV / TSV; CONSTRUCT and DESCRIBE triples as Turtle, N-Triples or
RDF/XML. Updates are refused with 403 and SERVICE with 400 before anything runs.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import Response

from kb_dumps.errors import EndpointError, QueryError, StoreError
from kb_dumps.store import QueryResult, Term, check_query_text
from kbqa.server.errors import ServerError
from kbqa.server.schemas import ErrorResponse

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

    if res.kind == "graph":
        triples = [ox.Triple(*(_ox_term(t) for t in row)) for row in res.rows]
        return ox.serialize(triples, format=getattr(ox.RdfFormat, GRAPH_TYPES[media]))
    data = json.dumps(sparql_json(res), ensure_ascii=False).encode("utf-8")
    fmt = RESULT_TYPES[media]
    if fmt == "JSON":
        return data
    solutions = ox.parse_query_results(data, format=ox.QueryResultsFormat.JSON)
    return solutions.serialize(format=getattr(ox.QueryResultsFormat, fmt))


def refuse_unsafe(query: str) -> None:
    """Updates → 403 (the endpoint is read-only); SERVICE → 400 (pyoxigraph would call other hosts)."""
    try:
        check_query_text(query)
    except QueryError as e:
        status = 400 if e.info.message.startswith("SERVICE") else 403
        raise ServerError(status, e.info.message, "execute") from None


async def _read_query(request: Request) -> tuple[str, dict[str, list[str]]]:
    params = parse_qs(request.url.query, keep_blank_values=True)
    if request.method == "POST":
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        body = await request.body()
        if ctype in UPDATE_TYPES:
            raise ServerError(403, "SPARQL Update is refused: this endpoint is read-only", "execute")
        if ctype == "application/x-www-form-urlencoded":
            try:
                form = parse_qs(body.decode("utf-8"), keep_blank_values=True)
            except UnicodeDecodeError:
                raise ServerError(400, "the form body is not UTF-8", "execute") from None
            params = {**params, **form}
        elif ctype == "application/sparql-query":
            try:
                params = {**params, "query": [body.decode("utf-8")]}
            except UnicodeDecodeError:
                raise ServerError(400, "the query is not UTF-8", "execute") from None
        else:
            raise ServerError(415, f"unsupported content type {ctype or '(none)'!r}: send the query as "
                                   "application/sparql-query or as a form field query=", "usage")
    if "update" in params:
        raise ServerError(403, "SPARQL Update is refused: this endpoint is read-only", "execute")
    queries = params.get("query", [])
    if len(queries) != 1 or not queries[0].strip():
        raise ServerError(400, "give exactly one non-empty query: GET /sparql?query=… or POST it", "execute")
    if any(v.strip() for k in ("default-graph-uri", "named-graph-uri") for v in params.get(k, [])):
        raise ServerError(400, "default-graph-uri and named-graph-uri are not supported: the default graph is the "
                               "union of all graphs of the store", "execute")
    return queries[0], params


_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"description": "SPARQL results (JSON, XML, CSV, TSV) or RDF (Turtle, N-Triples, RDF/XML) by Accept",
          "content": {m: {} for m in [*RESULT_TYPES, *GRAPH_TYPES]}},
    **{code: {"model": ErrorResponse, "description": why} for code, why in (
        (400, "malformed query, SERVICE, or a missing query"), (403, "an update (the endpoint is read-only)"),
        (406, "no acceptable result format"), (413, "the body is too large"), (415, "unsupported content type"),
        (429, "too many requests in flight"), (502, "the remote SPARQL endpoint behind the server failed"),
        (503, "query workers busy or store failure"),
        (504, "the query ran past its time budget"))}}


async def sparql(request: Request) -> Response:
    """Run a read-only query (GET `query=`, POST form `query=`, or POST application/sparql-query)."""
    state = request.app.state.kbqa
    if state.store_pool is None:
        raise ServerError(503, "this server has no store: start it with --store DIR", "store")
    query, params = await _read_query(request)
    if state.profile is not None:
        from kbqa.commands.sparql import with_prefixes

        query = with_prefixes(query, state.profile.prefixes)  # as WDQS does, the KB's prefixes are predeclared
    refuse_unsafe(query)
    fmt = (params.get("format") or params.get("output") or [None])[0]
    try:
        res = await state.store_pool.query(query, state.settings.queue_timeout_s)
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
