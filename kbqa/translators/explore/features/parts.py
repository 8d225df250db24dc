"""The parts of a query's structure that the structure prior predicts beside its shape: how many columns it
answers with, whether it is DISTINCT, which way it is ordered and its first aggregate. One labelling for a gold
SPARQL query (what the prior is fitted on) and for a candidate's structure features (`structure_features`, what the
query path and the candidates file both hold), so that feature `prior_<part>` = P(the candidate's own label).
"""

from __future__ import annotations

import re

PARTS: dict[str, tuple[str, ...]] = {
    "columns": ("1", "2", "3"),  # "3": three or more (SELECT * too)
    "distinct": ("0", "1"),
    "order": ("none", "asc", "desc"),
    "agg": ("none", "count", "avg", "min", "max", "sum"),
}
_PREFIX = re.compile(r"prefix\s+\S*\s*<[^>]*>")
_SELECT = re.compile(r"select\s+(.*?)\s+where\b")
_ORDER = re.compile(r"order by\s+(desc|asc)?")
_AGG = re.compile(r"\b(count|avg|min|max|sum)\s*\(")
_FEATURE_AGGS = (("s_count", "count"), ("s_count_distinct", "count"), ("s_avg", "avg"), ("s_min", "min"),
                 ("s_max", "max"), ("s_sum", "sum"))


def _projected(select: str) -> int:
    """How many items the SELECT clause projects: variables and parenthesised expressions at the top level."""
    depth = n = 0
    for t in re.findall(r"\(|\)|\?\w+|[^\s()]+", select):
        if t == "(":
            n += depth == 0
            depth += 1
        elif t == ")":
            depth = max(0, depth - 1)
        elif depth == 0 and t.startswith("?"):
            n += 1
    return n


def sparql_parts(sparql: str) -> dict[str, str]:
    """The parts of a gold SELECT query (none for ASK, which has no columns to predict)."""
    q = _PREFIX.sub(" ", " ".join(sparql.lower().split()))
    if re.match(r"\s*ask\b", q):
        return {}
    m = _SELECT.search(q)
    select = m.group(1) if m else ""
    distinct = select.startswith("distinct")
    if distinct:
        select = select[len("distinct"):]
    columns = _projected(select)
    tail = q[q.rfind("}"):] if "}" in q else ""  # the outer query's solution modifiers
    order = _ORDER.search(tail)
    agg = _AGG.search(select)
    return {"columns": "3" if columns == 0 or columns >= 3 else str(columns),  # 0: SELECT *
            "distinct": "1" if distinct else "0",
            "order": "none" if not order else "desc" if order.group(1) == "desc" else "asc",
            "agg": agg.group(1) if agg else "none"}


def feature_parts(f: dict[str, float]) -> dict[str, str]:
    """The same parts of a candidate, from its structure features (`s_*`): an aggregate query projects its
    aggregates, and its answer columns only when grouped."""
    if f.get("s_ask"):
        return {}
    n_aggs = f.get("s_n_aggs", 0.0)
    columns = n_aggs + (f.get("s_n_answer", 1.0) if f.get("s_group") or not n_aggs else 0.0)
    return {"columns": str(int(min(max(columns, 1.0), 3.0))),
            "distinct": "1" if f.get("s_distinct") else "0",
            "order": "desc" if f.get("s_order_desc") else "asc" if f.get("s_order") else "none",
            "agg": next((name for key, name in _FEATURE_AGGS if f.get(key)), "none")}
