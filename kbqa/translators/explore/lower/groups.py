"""Property-group graphs (propose/groups.py) lowered to Plan nodes: a word that names a super-property stands for
the set of its `rdfs:subPropertyOf` sub-properties; the patterns, the query and the first sentence."""

from __future__ import annotations

from assembler import plan as ir
from grounding.schema import SUB_PROPERTY_OF
from kbqa.translators.explore.lower.patterns import Body, Writer, constraint_patterns, number, select
from kbqa.translators.explore.query import Graph

# "superior on most attributes": the share of attributes on which the first item is higher must pass this
MAJORITY = 0.5


def write_group(w: Writer, g: Graph) -> tuple[Body, ir.Query, str]:
    """Patterns, the query (no WHERE yet) and the first sentence of a property-group graph."""
    schema = w.schema
    if g.parts:
        return _write_compared(w, g)
    focus_label = schema.class_label(g.focus_class) if g.focus_class else "item"
    body = constraint_patterns(w, g, focus_label)
    pvar, value = w.new_var(), w.new_var()
    body.extend(_members(w, g.pred_set or "", w.vars[()], pvar, value))
    fn = g.aggs[0][0]
    group_label = (schema.groups or {}).get(g.pred_set or "", {}).get("label", "group")
    agg = ir.Projection(ir.Aggregate(fn, value), ir.Var("agg1"))
    if g.group and g.order is not None:
        q = select([pvar, agg], [])
        q.group_by, q.order_by, q.limit = [pvar], [ir.OrderKey(ir.Var("agg1"), g.order[1], ac="AC1")], g.limit or 1
        first = (f"we need the {group_label} attribute with the {'highest' if g.order[1] else 'lowest'} "
                 f"{_fn_word(fn)} value")
    elif g.group:
        q = select([agg], [])
        q.group_by = [w.vars[()]]
        first = f"we need the {_fn_word(fn)} of the {group_label} values for each {focus_label}"
    else:
        q = select([agg], [])
        first = f"we need the {_fn_word(fn)} of the {group_label} values"
    return body, q, first


def _members(w: Writer, group: str, item: ir.Var, pvar: ir.Var, value: ir.Var) -> Body:
    """`item pvar value` where pvar is a sub-property of the group and the value a number."""
    sub = w.term("property", SUB_PROPERTY_OF, "sub property of")
    return [("the attribute is one of the group", [ir.Triple(pvar, sub, _group_iri(group))]),
            ("the item has a numeric value of the attribute", [ir.Triple(item, pvar, value), _numeric(value)])]


def _write_compared(w: Writer, g: Graph) -> tuple[Body, ir.Query, str]:
    a, b = (p.conds[0].value for p in g.parts)
    ta, tb = w.value(a), w.value(b)  # type: ignore[arg-type]
    w.term("property", SUB_PROPERTY_OF, "sub property of")  # its grounding line after the two items'
    grp = g.pred_set or ""
    names = [w.new_var(), w.new_var()]
    if g.combine and g.combine.startswith("share"):
        op = g.combine[len("share"):]
        p, x, y, q = w.new_var(), w.new_var(), w.new_var(), w.new_var()
        beats: list[ir.Node] = [ir.Triple(p, _sub(w), _group_iri(grp)), ir.Triple(ta, p, x), ir.Triple(tb, p, y),
                             ir.Filter(ir.BinaryOp(op, x, y))]
        body: Body = [
            (f"the number of attributes of the group on which {a.label} is {_more(op)} than {b.label}",
             [ir.SubQuery(select([ir.Projection(ir.Aggregate("COUNT", p), names[0])], beats))]),
            ("the number of attributes of the group",
             [ir.SubQuery(select([ir.Projection(ir.Aggregate("COUNT", q), names[1])], [ir.Triple(q, _sub(w), _group_iri(grp))]))]),
            ("the first is more than half of the second",
             [ir.Filter(ir.BinaryOp(">", ir.BinaryOp("/", names[0], names[1]), number(str(MAJORITY))))])]
        return body, ir.Query("ask"), f"we need to know whether {a.label} is {_more(op)} on most attributes of the group"
    fn = g.parts[0].aggs[0][0]
    body = []
    for term, t, name in ((ta, a, names[0]), (tb, b, names[1])):
        p, v = w.new_var(), w.new_var()
        items: list[ir.Node] = [ir.Triple(p, _sub(w), _group_iri(grp)), ir.Triple(term, p, v), _numeric(v)]
        body.append((f"the {_fn_word(fn)} of the group's values of {t.label}",  # type: ignore[union-attr]
                     [ir.SubQuery(select([ir.Projection(ir.Aggregate(fn, v), name)], items))]))
    op = g.combine or ">"
    body.append((f"the first is {_more(op)} than the second", [ir.Filter(ir.BinaryOp(op, names[0], names[1]))]))
    return body, ir.Query("ask"), "we need to know whether the first number is " + ("greater" if op == ">" else "smaller")


def _sub(w: Writer) -> ir.Node:
    """The sub-property placeholder (a new node for each use: a Plan shares no node)."""
    return w.term("property", SUB_PROPERTY_OF, "sub property of")


def _numeric(value: ir.Var) -> ir.Filter:
    return ir.Filter(ir.Call("ISNUMERIC", [value]))


def _group_iri(group: str) -> ir.IRI:
    # written as the IRI the search confirmed, not a placeholder: DeSQ allows property placeholders only as
    # predicates, and here the super-property is the object of `rdfs:subPropertyOf`
    return ir.IRI(group)


def _more(op: str) -> str:
    return "higher" if op == ">" else "lower"


def _fn_word(fn: str) -> str:
    return {"AVG": "average", "SUM": "total", "MAX": "maximum", "MIN": "minimum", "COUNT": "number"}.get(fn, fn)

