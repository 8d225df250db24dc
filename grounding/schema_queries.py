"""The aggregate queries the schema memory is read with (grounding/schema.py), bounded for a large KG or a remote
endpoint.

A small store answers each aggregate in one query over the whole KG, as it always has. Where that answer would be
cut — by the row cap asked for here (`WHOLE_KG_ROWS`: the client never holds more rows than that) or by the
endpoint's own row cap (Virtuoso's ResultSetMaxRows, which `EndpointStore` marks `truncated`) — the same aggregate
is asked again per predicate, with a cap per predicate (`ORDER BY DESC(?n) LIMIT k`: the most frequent classes,
the most frequent values). A per-predicate query that times out or is refused leaves that predicate without
classes or values (counted in `skipped`) instead of failing the whole build: one huge predicate of a large
endpoint must not cost the rest of the schema.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field

from kb_dumps.sparql_text import escape_string
from kb_dumps.stage_errors import KBQAError, QueryError
from kb_dumps.store_types import Store, Term

log = logging.getLogger(__name__)

QUERY_TIMEOUT_S = 120.0
# The most rows one whole-KG aggregate may bring to the client; more and it is asked per predicate.
WHOLE_KG_ROWS = 200_000
# Per predicate: its most frequent short literals (ties broken by the engine).
MAX_VALUES_PER_PREDICATE = 2_000
# The row cap of one per-predicate query: above every per-predicate LIMIT and its datatypes.
PER_PREDICATE_ROWS = 10_000


@dataclass
class FetchStats:
    queries: int = 0
    per_predicate: list[str] = field(default_factory=list)  # the aggregates that were asked per predicate
    skipped: int = 0  # per-predicate queries that timed out or were refused
    timeouts: int = 0  # whole-KG aggregates that timed out (read in parts instead)


def whole_kg(store: Store, query: str, stats: FetchStats) -> list[list[Term | None]] | None:
    """The rows of a whole-KG aggregate, or None when the answer was cut (by our cap or the server's) or the
    query ran out of time (the pages or per-predicate queries then read it in smaller parts)."""
    stats.queries += 1
    try:
        res = store.query(query, timeout_s=QUERY_TIMEOUT_S, row_cap=WHOLE_KG_ROWS)
    except QueryError as e:
        if not e.timed_out:
            raise
        stats.timeouts += 1
        log.info("schema memory: a whole-KG aggregate timed out; read in parts: %s", e)
        return None
    return None if res.truncated else res.rows


def per_predicate(store: Store, name: str, template: str, predicates: list[str],
                  stats: FetchStats) -> Iterator[tuple[str, list[Term | None]]]:
    """(predicate, row) for each predicate's rows of `template` (`{p}` is the predicate's IRI in <>)."""
    stats.per_predicate.append(name)
    for p in predicates:
        stats.queries += 1
        try:
            res = store.query(template.format(p=f"<{p}>"), timeout_s=QUERY_TIMEOUT_S, row_cap=PER_PREDICATE_ROWS)
        except KBQAError as e:
            stats.skipped += 1
            log.warning("schema memory: %s of %s skipped: %s", name, p, e)
            continue
        for row in res.rows:
            yield p, row


def grouped(store: Store, name: str, whole: str, one: str, predicates: list[str],
            stats: FetchStats) -> Iterator[list[Term | None]]:
    """Rows `[?p, …]` of the whole-KG aggregate `whole`, else of `one` per predicate (its rows lack ?p)."""
    rows = whole_kg(store, whole, stats)
    if rows is not None:
        yield from rows
        return
    log.info("schema memory: %s asked per predicate (%d predicates)", name, len(predicates))
    for p, row in per_predicate(store, name, one, predicates, stats):
        yield [{"type": "uri", "value": p}, *row]


def keyset(store: Store, template: str, stats: FetchStats, page: int = 10_000) -> Iterator[list[Term | None]]:
    """Rows of an aggregate grouped by its first variable `?key` (one row per key), whole when it fits in one
    answer, else in pages ordered by STR(?key): `template` has `{after}` (a FILTER on ?key) and `{limit}`."""
    rows = whole_kg(store, template.format(after="", limit=""), stats)
    if rows is not None:
        yield from rows
        return
    size = store.page_limit(page) if hasattr(store, "page_limit") else page  # an endpoint's sorted-row limit
    after = ""
    stats.per_predicate.append("pages")
    while True:
        stats.queries += 1
        res = store.query(template.format(after=f"FILTER(STR(?key) > {escape_string(after)})",
                                          limit=f"ORDER BY STR(?key) LIMIT {size}"),
                          timeout_s=QUERY_TIMEOUT_S, row_cap=size)
        yield from res.rows
        if len(res.rows) < size or not res.rows[-1][0]:
            return
        after = res.rows[-1][0]["value"]


def datatype_queries() -> tuple[str, str]:
    return ("SELECT ?p ?dt (COUNT(*) AS ?n) WHERE { ?s ?p ?o FILTER(isLiteral(?o)) BIND(DATATYPE(?o) AS ?dt) } "
            "GROUP BY ?p ?dt",
            "SELECT ?dt (COUNT(*) AS ?n) WHERE {{ ?s {p} ?o FILTER(isLiteral(?o)) BIND(DATATYPE(?o) AS ?dt) }} "
            "GROUP BY ?dt")


def class_queries(type_predicate: str, side: str, cap: int) -> tuple[str, str]:
    """Domains (`side` "s") or ranges ("o") of every predicate, at most `cap` classes each when per predicate."""
    tp = f"<{type_predicate}>"
    return (f"SELECT ?p ?c (COUNT(*) AS ?n) WHERE {{ ?s ?p ?o . ?{side} {tp} ?c }} GROUP BY ?p ?c",
            f"SELECT ?c (COUNT(*) AS ?n) WHERE {{{{ ?s {{p}} ?o . ?{side} {tp} ?c }}}} GROUP BY ?c "
            f"ORDER BY DESC(?n) LIMIT {cap}")


def value_queries(max_chars: int) -> tuple[str, str]:
    return (f"SELECT ?p ?o (COUNT(*) AS ?n) WHERE {{ ?s ?p ?o FILTER(isLiteral(?o) && "
            f"STRLEN(STR(?o)) <= {max_chars}) }} GROUP BY ?p ?o",
            f"SELECT ?o (COUNT(*) AS ?n) WHERE {{{{ ?s {{p}} ?o FILTER(isLiteral(?o) && STRLEN(STR(?o)) <= {max_chars}) "
            f"}}}} GROUP BY ?o ORDER BY DESC(?n) LIMIT {MAX_VALUES_PER_PREDICATE}")
