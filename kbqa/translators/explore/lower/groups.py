"""Writing property-group graphs (propose/groups.py): a word that names a super-property stands for the set of its
`rdfs:subPropertyOf` sub-properties; the patterns, head and modifiers for SPARQL or DeSQ."""

from __future__ import annotations

from grounding.schema import SUB_PROPERTY_OF
from kbqa.translators.explore.lower.patterns import Body, Writer, constraint_patterns
from kbqa.translators.explore.query import Graph

# "superior on most attributes": the share of attributes on which the first item is higher must pass this
MAJORITY = 0.5


def write_group(w: Writer, g: Graph) -> tuple[Body, str, list[str], str]:
    """Patterns, head, modifiers and the first sentence of a property-group graph."""
    schema = w.schema
    if g.parts:
        return _write_compared(w, g)
    focus_label = schema.class_label(g.focus_class) if g.focus_class else "item"
    body = constraint_patterns(w, g, focus_label)
    pvar, value = w.new_var(), w.new_var()
    body.extend(_members(w, g.pred_set or "", w.vars[()], pvar, value))
    fn = g.aggs[0][0]
    group_label = (schema.groups or {}).get(g.pred_set or "", {}).get("label", "group")
    if g.group and g.order is not None:
        head = f"SELECT {pvar} ({fn}({value}) AS ?agg1)"
        mods = [f"GROUP BY {pvar}", f"ORDER BY {'DESC' if g.order[1] else 'ASC'}(?agg1)", f"LIMIT {g.limit or 1}"]
        first = (f"we need the {group_label} attribute with the {'highest' if g.order[1] else 'lowest'} "
                 f"{_fn_word(fn)} value")
    elif g.group:
        head, mods = f"SELECT ({fn}({value}) AS ?agg1)", [f"GROUP BY {w.vars[()]}"]
        first = f"we need the {_fn_word(fn)} of the {group_label} values for each {focus_label}"
    else:
        head, mods = f"SELECT ({fn}({value}) AS ?agg1)", []
        first = f"we need the {_fn_word(fn)} of the {group_label} values"
    return body, head, mods, first


def _members(w: Writer, group: str, item: str, pvar: str, value: str) -> Body:
    """`item pvar value` where pvar is a sub-property of the group and the value a number."""
    sub = w.term("property", SUB_PROPERTY_OF, "sub property of")
    grp = _group_iri(group)
    return [("the attribute is one of the group", [f"{pvar} {sub} {grp} ."]),
            ("the item has a numeric value of the attribute", [f"{item} {pvar} {value} .",
                                                                f"FILTER(isNumeric({value}))"])]


def _write_compared(w: Writer, g: Graph) -> tuple[Body, str, list[str], str]:
    a, b = (p.conds[0].value for p in g.parts)
    ta, tb = w.value(a), w.value(b)  # type: ignore[arg-type]
    sub = w.term("property", SUB_PROPERTY_OF, "sub property of")
    grp = _group_iri(g.pred_set or "")
    names = [w.new_var(), w.new_var()]
    if g.combine and g.combine.startswith("share"):
        op = g.combine[len("share"):]
        p, x, y, q = w.new_var(), w.new_var(), w.new_var(), w.new_var()
        body: Body = [
            (f"the number of attributes of the group on which {a.label} is {_more(op)} than {b.label}",
             [f"{{ SELECT (COUNT({p}) AS {names[0]}) WHERE {{ {p} {sub} {grp} . {ta} {p} {x} . {tb} {p} {y} . "
              f"FILTER({x} {op} {y}) }} }}"]),
            ("the number of attributes of the group", [f"{{ SELECT (COUNT({q}) AS {names[1]}) WHERE {{ {q} {sub} {grp} . }} }}"]),
            ("the first is more than half of the second", [f"FILTER(({names[0]} / {names[1]}) > {MAJORITY})"])]
        return body, "ASK", [], f"we need to know whether {a.label} is {_more(op)} on most attributes of the group"
    fn = g.parts[0].aggs[0][0]
    body = []
    for term, t, name in ((ta, a, names[0]), (tb, b, names[1])):
        p, v = w.new_var(), w.new_var()
        body.append((f"the {_fn_word(fn)} of the group's values of {t.label}",
                     [f"{{ SELECT ({fn}({v}) AS {name}) WHERE {{ {p} {sub} {grp} . {term} {p} {v} . "
                      f"FILTER(isNumeric({v})) }} }}"]))
    op = g.combine or ">"
    body.append((f"the first is {_more(op)} than the second", [f"FILTER({names[0]} {op} {names[1]})"]))
    return body, "ASK", [], "we need to know whether the first number is " + ("greater" if op == ">" else "smaller")


def _group_iri(group: str) -> str:
    # written as the IRI the search confirmed, not a placeholder: DeSQ allows property placeholders only as
    # predicates, and here the super-property is the object of `rdfs:subPropertyOf`
    return f"<{group}>"


def _more(op: str) -> str:
    return "higher" if op == ">" else "lower"


def _fn_word(fn: str) -> str:
    return {"AVG": "average", "SUM": "total", "MAX": "maximum", "MIN": "minimum", "COUNT": "number"}.get(fn, fn)

