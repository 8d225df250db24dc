"""Features of a candidate's answers read against the other checked candidates' answers (listwise).

Set by the rank stage after the execution check, before the second scoring, so the fitted ranker weighs them:

  x_ans_share  the share of the other checked candidates whose answers are the same (several readings of the
               question agreeing on one answer is evidence for it; a lone answer is weaker)
  x_ans_same   how many others agree, log-scaled
  x_col_share  the share of the others with a column of the same values as one of this one's columns (the same
               items asked under another projection: a name beside the item, a second attribute)
  x_ans_echo   1 when every answer cell is a constant the query itself names (the answer repeats the question's
               own value: "which students are named Bob" answered by "Bob")
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kb_dumps.store_types import QueryResult
    from kbqa.translators.explore.query import Graph

AnswerKey = tuple[object, ...]


def answer_key(res: QueryResult | None) -> AnswerKey | None:
    """The answers as a comparable value: ASK's boolean, else the set of rows' cell values (row order and variable
    names left out; the same items under another projection agree through `column_keys` instead)."""
    if res is None:
        return None
    if res.kind == "ask":
        return ("ask", bool(res.boolean))
    rows = {tuple((c or {}).get("value", "") for c in row) for row in res.rows}
    return ("rows", res.truncated, *sorted(rows))


def column_keys(res: QueryResult | None) -> set[frozenset[str]]:
    """Each non-empty column's set of values (the ASK boolean as one column)."""
    if res is None:
        return set()
    if res.kind == "ask":
        return {frozenset({f"ask:{bool(res.boolean)}"})}
    width = max((len(r) for r in res.rows), default=0)
    cols = ({(row[i] or {}).get("value", "") for row in res.rows if i < len(row) and row[i]} for i in range(width))
    return {frozenset(c) for c in cols if c}


def _constants(g: Graph) -> set[str]:
    out: set[str] = set()
    for c in g.flat_conds():
        for t in ([c.value] if c.value is not None else []) + list(c.values):
            out.add(t.value)
            if t.label:
                out.add(t.label)
    return out


def _echo(g: Graph) -> float:
    res = g.result
    if res is None or res.kind == "ask" or not res.rows:
        return 0.0
    consts = _constants(g)
    if not consts:
        return 0.0
    cells = [c.get("value", "") for row in res.rows for c in row if c is not None]
    return 1.0 if cells and all(v in consts for v in cells) else 0.0


def add_answer_features(checked: list[Graph]) -> None:
    """Set the x_ans_* and x_col_share features on each checked candidate (in place)."""
    keys = [answer_key(g.result) for g in checked]
    counts: dict[AnswerKey, int] = {}
    for k in keys:
        if k is not None:
            counts[k] = counts.get(k, 0) + 1
    cols = [column_keys(g.result) for g in checked]
    holders: dict[frozenset[str], set[int]] = {}
    for i, cs in enumerate(cols):
        for c in cs:
            holders.setdefault(c, set()).add(i)
    others = max(1, len(checked) - 1)
    for i, (g, k) in enumerate(zip(checked, keys, strict=True)):
        same = counts.get(k, 1) - 1 if k is not None else 0
        g.features["x_ans_share"] = same / others
        sharing = set().union(*(holders[c] for c in cols[i])) - {i} if cols[i] else set()
        g.features["x_col_share"] = len(sharing) / others
        g.features["x_ans_same"] = math.log1p(same)
        g.features["x_ans_echo"] = _echo(g)
