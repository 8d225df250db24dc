"""Plan surgery shared by the QCompiler and PyRAG lowerings: copy, rename apart, answer column, sub-SELECT wrapping."""

from __future__ import annotations

from dataclasses import dataclass, field

from assembler import plan
from assembler.plan import Aggregate, N, Node, Projection, Query, SubQuery, Var, rename, walk


@dataclass
class Lowered:
    """A lowered part: its query, the name of its answer variable (None for ASK), and `exports`, variables
    bound *outside* the part that it joins on (a `{x}` of a `*`); a sub-SELECT must project them."""

    query: Query
    answer: str | None
    exports: set[str] = field(default_factory=set)


def rename_apart(q: Query, prefix: str) -> Query:
    """A copy with every variable and placeholder name prefixed, so that parts from different leaves never
    share a name by accident (the writer renumbers variables ?var1… anyway)."""
    return rename(q, lambda name: prefix + name, placeholders=True)


def rename_var(node: Node, old: str, new: str) -> int:
    """Rename variable `old` to `new` in place; returns how many occurrences changed."""
    n = 0
    for sub in walk(node):
        if isinstance(sub, Var) and sub.name == old:
            sub.name = new
            n += 1
    return n


def tag_ac(node: N, prefix: str) -> N:
    """A copy with every node pointing back at its leaf / line: `L2.AC3` (or `L2` for nodes without an AC)."""
    return plan.tag_ac(node, lambda ac: f"{prefix}.{ac}" if ac else prefix)


def item_name(item: Node) -> str | None:
    if isinstance(item, Var):
        return item.name
    if isinstance(item, Projection):
        return item.var.name
    return None


def answer_of(q: Query) -> str | None:
    """The answer variable: the first projected column (None for ASK or `SELECT *`)."""
    if q.form == "ask" or not q.projection:
        return None
    return item_name(q.projection[0])


def has_aggregate(q: Query) -> bool:
    return any(isinstance(n, Aggregate) for p in q.projection for n in walk(p))


def is_plain(q: Query) -> bool:
    """A plain pattern can be inlined into a bigger query: a SELECT with no aggregate and no solution
    modifiers (ORDER BY / LIMIT / OFFSET / GROUP BY / HAVING would change meaning once inlined)."""
    return (q.form == "select" and not has_aggregate(q) and not q.group_by and not q.having and not q.order_by
            and q.limit is None and q.offset is None)


def as_subquery(low: Lowered) -> SubQuery:
    """`{ SELECT ?answer ?exports… WHERE { … } … }`: the part's query projecting its answer and the outer
    variables it joins on (grouped by them when it aggregates, so a count is per joined value)."""
    q = low.query.copy()
    keep = [p for p in q.projection if item_name(p) == low.answer] if low.answer else []
    exports = sorted(low.exports - {low.answer})
    q.projection = keep + [Var(name) for name in exports]
    if exports and has_aggregate(q):
        q.group_by = list(q.group_by) + [Var(name) for name in exports if all(
            item_name(g) != name for g in q.group_by)]
    if q.form == "count" and exports:
        q.form = "select"  # a COUNT with grouping columns is a plain SELECT of several columns
    return SubQuery(q, ac=q.ac)


def pattern_items(low: Lowered) -> list[Node]:
    """What to put in a bigger query's WHERE for this part: its own items when plain, else a sub-SELECT."""
    if is_plain(low.query):
        return list(low.query.where.items)
    return [as_subquery(low)]
