"""Query results written as bytes (SPARQL JSON / XML / CSV / TSV, Turtle / N-Triples / RDF/XML), in the query worker.

The worker writes the answer in the format the client asked for with pyoxigraph's own serializers and sends
those bytes back, so that no term is converted, pickled or re-serialized in the server process. Its
serializer writes every solution and knows no row cap, so the fast path writes into a bounded buffer and
proves from the bytes that the cap was not reached (an upper bound on the row count, read with
`bytes.count`; an exact count by pyoxigraph's parser when the bound is not enough). When it cannot prove it
(the cap is reached, the output is past `FAST_BYTES`, XML the check of kb_dumps/xml_check.py refuses, a
graph), the query is run again on the counted path: rows as plain data, cut at the cap and bounded in bytes
(`run_query`), then written from them (`write_rows`), exactly as before.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kb_dumps.xml_check import NOT_XML_BYTES, check_xml

if TYPE_CHECKING:
    import pyoxigraph as ox

    from kb_dumps.json_types import JsonObject
    from kb_dumps.store_types import QueryResult, Term

TABLE_FORMATS = ("JSON", "XML", "CSV", "TSV")  # pyoxigraph QueryResultsFormat names (SELECT, ASK)
GRAPH_FORMATS = ("TURTLE", "N_TRIPLES", "RDF_XML")  # pyoxigraph RdfFormat names (CONSTRUCT, DESCRIBE)
# Output the fast path writes before it hands the query to the counted path (which bounds it by
# KBQA_QUERY_RESULT_BYTES): past it a result is large enough that a second run costs little in proportion.
FAST_BYTES = 4 * 1024**2
# An upper bound on the rows of a written result, from its bytes: every JSON solution opens a `{`, every XML
# one writes `<result>` (a `<` in a value is `&lt;`), every CSV / TSV one ends a line (the header too).
_ROW_MARK = {"JSON": b"{", "XML": b"<result>", "CSV": b"\n", "TSV": b"\n"}


@dataclass
class Written:
    """A result as the bytes of one format. `fmt` None: the client accepts no format for this kind of result."""

    kind: str  # select | ask | graph
    fmt: str | None
    body: bytes = b""
    truncated: bool = False  # the row cap cut the result
    rows: int = 0  # rows written, when truncated


class _Over(Exception):
    """The bounded buffer is full."""


class _Buffer:
    """A binary writer for pyoxigraph's serializers that stops at `limit` bytes."""

    def __init__(self, limit: int):
        self.parts: list[bytes] = []
        self.size, self.limit = 0, limit

    def write(self, data: bytes) -> int:
        self.size += len(data)
        if self.size > self.limit:
            raise _Over
        self.parts.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass


def sparql_json(res: QueryResult) -> JsonObject:
    """The W3C SPARQL 1.1 Query Results JSON of a SELECT or ASK result."""
    if res.kind == "ask":
        return {"head": {}, "boolean": bool(res.boolean)}
    bindings = [{v: t for v, t in zip(res.vars, row, strict=True) if t is not None} for row in res.rows]
    return {"head": {"vars": list(res.vars)}, "results": {"bindings": bindings}}


def _ox_term(t: Term | None) -> ox.NamedNode | ox.BlankNode | ox.Literal | None:
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


def write_rows(res: QueryResult, fmt: str) -> bytes:
    """A plain-data result written as `fmt` (a TABLE_FORMATS or GRAPH_FORMATS name); Unwritable for what XML cannot
    carry."""
    import pyoxigraph as ox

    if fmt == "RDF_XML" or (res.kind != "graph" and fmt == "XML"):
        check_xml(res, rdf_xml=res.kind == "graph")
    if res.kind == "graph":
        triples = [ox.Triple(*(_ox_term(t) for t in row)) for row in res.rows]
        return ox.serialize(triples, format=getattr(ox.RdfFormat, fmt))
    data = json.dumps(sparql_json(res), ensure_ascii=False).encode("utf-8")
    if fmt == "JSON":
        return data
    solutions = ox.parse_query_results(data, format=ox.QueryResultsFormat.JSON)
    return solutions.serialize(format=getattr(ox.QueryResultsFormat, fmt))


def _within_cap(body: bytes, fmt: str, row_cap: int) -> bool:
    """Whether the written solutions are provably at most `row_cap`."""
    import pyoxigraph as ox

    if body.count(_ROW_MARK[fmt]) <= row_cap:
        return True
    if fmt == "CSV":  # pyoxigraph does not read CSV back (and a quoted value may hold line breaks)
        return False
    count = 0
    for _ in ox.parse_query_results(body, format=getattr(ox.QueryResultsFormat, fmt)):
        count += 1
        if count > row_cap:
            return False
    return True


def write_fast(res: ox.QuerySolutions | ox.QueryBoolean, fmt: str, row_cap: int, result_bytes: int) -> bytes | None:
    """A pyoxigraph SELECT / ASK result written by pyoxigraph as `fmt`, or None when the counted path must write it
    (the cap may be reached, the output is large, or XML cannot carry a value)."""
    import pyoxigraph as ox

    out_format = getattr(ox.QueryResultsFormat, fmt)
    if isinstance(res, ox.QueryBoolean):
        return res.serialize(format=out_format)
    buffer = _Buffer(min(FAST_BYTES, result_bytes))
    try:
        res.serialize(buffer, format=out_format)
    except _Over:
        return None
    body = b"".join(buffer.parts)
    if fmt == "XML" and NOT_XML_BYTES.search(body):
        return None  # the counted path names the row and the character
    return body if _within_cap(body, fmt, row_cap) else None
