"""Gold answers a query ending `ORDER BY … LIMIT 1` could equally have given.

When several rows share the first place on the order keys ("the most common birth place" where six places have one
person each), `LIMIT 1` keeps whichever of them the engine that ran the gold query put first; a benchmark's answer
file records that one, and the same query on another engine, another build of the store or written with other
variable names keeps another. Scoring a candidate against the recorded row alone calls a right query wrong by a coin
toss, and a ranker fitted on such labels learns to avoid the right shape. `tied_answers` runs the gold query without
its `LIMIT 1` and returns each row tied with the first as a one-row gold answer, so a scorer can take the best match.

Only what the query itself says is read: the order keys must be plain variables (`ORDER BY DESC(?n) ?name`); a key
the query does not project is added to its projection when the query has no GROUP BY, else nothing is returned (an
aggregate written inside ORDER BY cannot be read back from the rows). Nothing is returned either when the recorded
answer is not one of the tied rows (the store holds other data than the one the answers were made on).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from kb_dumps.json_types import JsonObject
from kb_dumps.stage_errors import KBQAError

if TYPE_CHECKING:
    from kb_dumps.store_types import Store

TIED_CAP = 50  # tied rows returned at most (a first place shared by hundreds says the question is ill-posed)
# The query without its limit sorts every row: on a large store that costs, so a caller bounds it (a run cut by the
# row cap still holds the leading tied rows; one past the time limit gives no alternatives)
TIE_ROW_CAP = 1000
TIE_TIMEOUT_S = 10.0
_TAIL = re.compile(r"\bORDER\s+BY\s+(?P<keys>(?:(?!\bLIMIT\b).)+?)\s*\bLIMIT\s+1\s*$", re.I | re.S)
_KEY_TERM = re.compile(r"(?:ASC|DESC)\s*\(\s*\?\w+\s*\)|\?\w+", re.I)
_SELECT = re.compile(r"\bSELECT\s+(?:(?:DISTINCT|REDUCED)\s+)?", re.I)


def order_keys(sparql: str) -> tuple[str, list[str]] | None:
    """The query without its final `LIMIT 1` and its order keys' variable names, or None when the query does not end
    `ORDER BY <variables> LIMIT 1`."""
    m = _TAIL.search(sparql)
    if not m:
        return None
    keys_text = m.group("keys")
    if _KEY_TERM.sub(" ", keys_text).strip():  # something other than plain variables: an expression, an aggregate
        return None
    keys = re.findall(r"\?(\w+)", keys_text)
    return (sparql[:m.end("keys")], keys) if keys else None


def as_sparql_json(result: object) -> JsonObject | None:
    """A SELECT result as SPARQL JSON: given as SPARQL JSON, as a `QueryResult` or its `to_dict()` / a record's
    `gold_result()` ({"kind", "vars", "rows"}); None for anything else (an ASK, no answers)."""
    if hasattr(result, "kind") and hasattr(result, "rows"):  # kb_dumps.store_types.QueryResult
        result = {"kind": result.kind, "vars": list(result.vars), "rows": result.rows}
    if not isinstance(result, dict):
        return None
    if "results" in result:
        return result
    if result.get("kind") != "select":
        return None
    return select_json([str(v) for v in result.get("vars") or []], result.get("rows") or [])


def select_json(names: list[str], rows: list[list]) -> JsonObject:
    """Variables and rows (a store result's) as a SPARQL JSON SELECT result; an unbound cell is left out."""
    return {"head": {"vars": list(names)}, "results": {"bindings": [
        {v: t for v, t in zip(names, row, strict=False) if t is not None} for row in rows]}}


def _key(binding: JsonObject, keys: list[str]) -> tuple[tuple[str, str] | None, ...]:
    out = []
    for k in keys:
        term = binding.get(k)
        out.append((str(term.get("value")), str(term.get("datatype", ""))) if isinstance(term, dict) else None)
    return tuple(out)


def _same_row(a: JsonObject, b: JsonObject, names: list[str]) -> bool:
    def value(term: object) -> str | None:
        return str(term.get("value")) if isinstance(term, dict) else None

    return all(value(a.get(v)) == value(b.get(v)) for v in names)


def tied_answers(sparql: str, recorded: object, run: Callable[[str], object]) -> list[JsonObject]:
    """Each row tied with the first on the order keys, as a one-row SPARQL JSON result over the recorded answer's
    variables; [] when the query is not an `ORDER BY … LIMIT 1` over variables, nothing ties, or the recorded row is
    not among the tied ones. `recorded` and what `run` (which executes a query; it may raise: the caller's errors
    pass through) returns may be in any form `as_sparql_json` reads."""
    parsed = order_keys(sparql)
    recorded = as_sparql_json(recorded)
    if parsed is None or recorded is None:
        return []
    recorded_rows = recorded["results"].get("bindings") or []
    names = list(recorded.get("head", {}).get("vars") or [])
    if len(recorded_rows) != 1 or not names:
        return []
    query, keys = parsed
    missing = [k for k in keys if k not in names]
    if missing:
        select = _SELECT.search(query)
        if select is None or re.search(r"\bGROUP\s+BY\b", query, re.I) or query[select.end():].lstrip().startswith("*"):
            return []
        query = query[:select.end()] + " ".join(f"?{k}" for k in missing) + " " + query[select.end():]
    rows = (as_sparql_json(run(query)) or {}).get("results", {}).get("bindings") or []
    if len(rows) < 2:
        return []
    first = _key(rows[0], keys)
    tied = []
    for row in rows:
        if _key(row, keys) != first:
            break
        tied.append({v: t for v, t in row.items() if v in names})
    if len(tied) < 2 or not any(_same_row(t, recorded_rows[0], names) for t in tied):
        return []
    return [{"head": {"vars": names}, "results": {"bindings": [t]}} for t in tied[:TIED_CAP]]


def tied_on_store(sparql: str | None, recorded: object, store: Store) -> list[JsonObject]:
    """`tied_answers` with the gold query run on `store` within TIE_ROW_CAP rows and TIE_TIMEOUT_S seconds; [] when
    there is no query or the store refuses it or runs out of time (the recorded answer alone then)."""
    if not sparql:
        return []
    try:
        return tied_answers(sparql, recorded, lambda q: store.query(q, timeout_s=TIE_TIMEOUT_S, row_cap=TIE_ROW_CAP))
    except KBQAError:
        return []
