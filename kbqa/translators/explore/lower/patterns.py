"""A query graph (query.py) lowered to Plan nodes (`assembler/plan.py`): its triples and filters, the head and
the solution modifiers, each pattern with the sentence that says it. Every IRI the search confirmed is a
placeholder whose guessed URI is that IRI (so the DeSQ text carries it); `lower/text.py` writes the Plan as
DeSQ, and as SPARQL for the execution check through the assembler's writer, so what was checked is what the
pipeline compiles."""

from __future__ import annotations

import dataclasses
import re

from assembler import plan as ir
from grounding.schema import SchemaMemory, readable_name
from grounding.text import normalize
from kb_dumps.profiles import XSD
from kbqa.translators.explore.query import Cond, Graph, Path, Step, Term

# (sentence, the Plan items that say it): one atomic constraint each
Body = list[tuple[str, list[ir.Node]]]


def number(text: str) -> ir.Literal:
    """A number as the DeSQ reader types it: double with an exponent, decimal with a point, else integer."""
    bare = text.lstrip("+-")
    dt = "double" if "e" in bare.lower() else "decimal" if "." in bare else "integer"
    return ir.Literal(text.replace("+", ""), datatype=XSD + dt)


def literal(t: Term) -> ir.Literal:
    if t.kind == "number":
        return number(t.value)
    return ir.Literal(t.value, datatype=t.datatype if t.datatype and not t.datatype.endswith("#string") else None)


def select(projection: list[ir.Node], where: list[ir.Node], *, distinct: bool = False) -> ir.Query:
    """A SELECT; one COUNT alone makes it the `count` form, as the DeSQ reader has it."""
    q = ir.Query("select", projection, distinct, ir.Group(where))
    if len(projection) == 1 and isinstance(projection[0], ir.Projection) and \
            isinstance(projection[0].expr, ir.Aggregate) and projection[0].expr.name == "COUNT":
        q.form = "count"
    return q


def aggregate(fn: str, target: ir.Var) -> ir.Aggregate:
    """`COUNT_DISTINCT` counts the different values at its path ("how many different countries")."""
    return ir.Aggregate("COUNT", target, distinct=True) if fn == "COUNT_DISTINCT" else ir.Aggregate(fn, target)


class Writer:
    """Builds a Graph's Plan nodes: variables per path from the focus (`?var1`), one placeholder per confirmed
    IRI (with a grounding line's label and description)."""

    def __init__(self, g: Graph, schema: SchemaMemory):
        self.g, self.schema = g, schema
        self.vars: dict[Path, ir.Var] = {(): ir.Var("var1")}
        self.slots: dict[tuple[str, str], ir.Placeholder] = {}  # (kind, iri) -> its placeholder, in first-use order
        self.n = 1

    def term(self, kind: str, iri: str, label: str = "") -> ir.Placeholder:
        key = (kind, iri)
        if key not in self.slots:
            # a DeSQ placeholder name is ASCII ([A-Za-z_][A-Za-z0-9_]*): accents stripped, the rest dropped
            base = re.sub(r"[^a-z0-9]+", "_", normalize(label or readable_name(iri))).strip("_")
            name = (base or kind)[:24]
            if name[0].isdigit():
                name = "x" + name
            used = {p.name for p in self.slots.values()}
            k, cand = 2, name
            while cand in used:
                cand, k = f"{name}_{k}", k + 1
            self.slots[key] = ir.Placeholder(cand, kind, label=label or readable_name(iri),
                                          description=self._describe(kind, iri), guessed_uri=iri)
        p = self.slots[key]
        return ir.Placeholder(p.name, p.kind, label=p.label, description=p.description, guessed_uri=p.guessed_uri)

    def _describe(self, kind: str, iri: str) -> str:
        if kind == "class":
            return f"a class of {self.schema.classes.get(iri, {}).get('count', 0)} items"
        if kind == "property":
            info = self.schema.predicates.get(iri)
            return f"{info.name} ({'value' if info.literal else 'link'})" if info else "a property"
        return "an item of the knowledge graph"

    def mapping(self) -> dict[str, str]:
        """Placeholder name -> the IRI the search confirmed (what the execution check runs with)."""
        return {p.name: p.guessed_uri or "" for p in self.slots.values()}

    def pred_label(self, p: str) -> str:
        info = self.schema.predicates.get(p)
        return info.label if info else readable_name(p)

    def new_var(self) -> ir.Var:
        self.n += 1
        return ir.Var(f"var{self.n}")

    def step(self, cur: ir.Node, step: Step, nxt: ir.Node) -> ir.Triple:
        p = self.term("property", step.pred, self.pred_label(step.pred))
        return ir.Triple(cur, p, nxt) if step.forward else ir.Triple(nxt, p, cur)

    def walk(self, path: Path, scoped: dict[Path, ir.Var] | None = None) -> tuple[ir.Var, list[ir.Node]]:
        """The variable at the end of `path` and the triples that reach it (shared prefixes reuse variables)."""
        table = self.vars if scoped is None else scoped
        triples: list[ir.Node] = []
        cur = table[()] if () in table else self.vars[()]
        for i in range(1, len(path) + 1):
            prefix = path[:i]
            if prefix in table:
                cur = table[prefix]
                continue
            nxt = self.new_var()
            triples.append(self.step(cur, path[i - 1], nxt))
            table[prefix], cur = nxt, nxt
        return cur, triples

    def type_triple(self, var: ir.Var, cls: str) -> ir.Triple:
        return ir.Triple(var, ir.IRI(self.schema.type_predicate), self.term("class", cls, self.schema.class_label(cls)))

    def value(self, t: Term) -> ir.Node:
        if t.kind == "iri":
            return self.term("entity", t.value, t.label)
        return literal(t)


def constraint_patterns(w: Writer, g: Graph, focus_label: str) -> Body:
    """The type constraint and the constraints of `g` on the focus variable the writer holds now."""
    focus = w.vars[()]
    body: Body = []
    if g.focus_class:
        body.append((f"the {focus_label} is a {focus_label}", [w.type_triple(focus, g.focus_class)]))
    for c in g.conds:
        if c.negated:
            # a shared value is the focus's own (outside); no other item with it meets the constraint (inside)
            start, outer = w.walk(c.path[:c.shared]) if c.shared else (focus, [])
            scoped: dict[Path, ir.Var] = {(): start}
            end, triples = w.walk(c.path[c.shared:], scoped)
            tail = _cond_tail(w, c, end, triples, scoped)
            # the triple holding the constant first: the store then starts the NOT EXISTS from it; a shared value is
            # bound outside, so the walk back from it goes first as it stands (else a scan per outer row)
            inner = (triples if c.shared else list(reversed(triples))) + tail
            body.append((_say_cond(w, c, focus_label),
                         [*outer, ir.Filter(ir.Exists(ir.Group(inner), negated=True))]))
            continue
        if c.any_of:  # one of several attributes' constraints holds: each walked, one FILTER joins them
            fragment, tests = [], []
            for d in c.any_of:
                end, triples = w.walk(d.path)
                fragment += triples
                tests.append(_test(w, d, end))
            body.append((_say_cond(w, c, focus_label), [*fragment, ir.Filter(_any(tests))]))
            continue
        if c.shared:  # the focus's own value (the variable the answer shows), and the values another item has
            mid, triples = w.walk(c.path[:c.shared])
            table = {(): mid}
            end, rest = w.walk(c.path[c.shared:], table)
            # the other items' values once each, in a sub-SELECT: a join on values, not on every pair of items
            # (13x faster on a 24,000-item class; BENCHMARKS.md, eighteenth pass)
            other = select([mid], rest + _cond_tail(w, c, end, rest, table), distinct=True)
            body.append((_say_cond(w, c, focus_label), [*triples, ir.SubQuery(other)]))
            continue
        table = {(): focus} if c.apart else w.vars
        end, triples = w.walk(c.path, table)
        fragment = triples + _cond_tail(w, c, end, triples, table)
        if fragment:  # an "exists" on a path another constraint already walks adds nothing
            body.append((_say_cond(w, c, focus_label), fragment))
    return body


def graph_patterns(w: Writer, g: Graph) -> tuple[Body, ir.Query]:
    """Patterns (sentence, items) and the query (head and solution modifiers, no WHERE yet) of a one-focus graph."""
    focus_label = w.schema.class_label(g.focus_class) if g.focus_class else "answer"
    focus = w.vars[()]
    body = constraint_patterns(w, g, focus_label)
    cols: list[ir.Var] = []
    for path in g.answer:
        end, triples = w.walk(path)
        cols.append(end)
        if triples:
            body.append((f"the {focus_label} has {_say_path(w, path)}", triples))
    agg_cols: list[ir.Node] = []
    for i, (fn, path) in enumerate(g.aggs):
        target = focus
        if path:
            target, triples = w.walk(path)
            if triples:
                body.append((f"the {focus_label} has {_say_path(w, path)}", triples))
        agg_cols.append(ir.Projection(aggregate(fn, target), ir.Var(f"agg{i + 1}")))
    having: list[ir.Node] = []
    if g.having is not None:
        op, value, hpath = g.having
        counted, triples = w.walk(hpath)
        if triples:
            body.append((f"the {focus_label} has {_say_path(w, hpath)}", triples))
        having = [ir.BinaryOp(op, ir.Aggregate("COUNT", counted), number(f"{value:g}"))]
    order: list[ir.OrderKey] = []
    if g.order is not None:
        path, desc = g.order
        if path is None:
            key = ir.Var("agg1")
        else:
            key, triples = w.walk(path)
            if triples:
                body.append((f"the {focus_label} has {_say_path(w, path)}", triples))
        order = [ir.OrderKey(key, desc, ac="AC1")]
    if g.form == "ask":
        q = ir.Query("ask")
    else:
        shown: list[ir.Node] = agg_cols if g.aggs and not g.group else [*cols, *agg_cols]
        q = select(shown, [], distinct=bool(g.distinct and not g.aggs))
    if (g.group and g.aggs) or having:
        q.group_by = list(cols)
    q.having, q.order_by, q.limit = having, order, g.limit or None
    return body, q


def combined_patterns(w: Writer, g: Graph) -> tuple[Body, ir.Query]:
    """Two aggregates, each a sub-SELECT over its own constraints, combined by a percentage or a comparison."""
    body: Body = []
    names: list[ir.Var] = []
    for part in g.parts:
        w.vars = {(): w.new_var()}
        label = w.schema.class_label(part.focus_class) if part.focus_class else "answer"
        inner = constraint_patterns(w, part, label)
        fn, path = part.aggs[0]
        target, walk = w.walk(path) if path else (w.vars[()], [])
        name = w.new_var()
        names.append(name)
        agg = ir.Aggregate(fn, target, distinct=fn == "COUNT" and not path)
        items = [t for _, ts in inner for t in ts] + walk
        sentence = say_form(w, part, label).removeprefix("we need ")
        if inner:
            sentence += " such that " + " and ".join(s for s, _ in inner)
        body.append((sentence, [ir.SubQuery(select([ir.Projection(agg, name)], items))]))
    w.vars = {(): ir.Var("var1")}
    if g.combine == "percent":
        ratio = ir.BinaryOp("*", ir.BinaryOp("/", names[0], names[1]), number("100"))
        return body, select([ir.Projection(ratio, ir.Var("agg1"))], [])
    body.append((f"the first is {'more' if g.combine == '>' else 'less'} than the second",
                 [ir.Filter(ir.BinaryOp(g.combine or ">", names[0], names[1]))]))
    return body, ir.Query("ask")


def say_combined(w: Writer, g: Graph) -> str:
    if g.combine == "percent":
        return "we need the percentage the first number is of the second"
    return "we need to know whether the first number is " + ("greater" if g.combine == ">" else "smaller")


def _cond_tail(w: Writer, c: Cond, end: ir.Var, triples: list[ir.Node], table: dict[Path, ir.Var]) -> list[ir.Node]:
    """Put the compared value in: an IRI or exact literal replaces the end variable (which is then no
    longer shared with other paths); others are FILTERs."""
    if c.versus_average is not None:
        item = w.new_var()
        inner: list[ir.Node] = [w.type_triple(item, c.versus_average)]
        cur: ir.Node = item
        for step in c.path:
            nxt = w.new_var()
            inner.append(w.step(cur, step, nxt))
            cur = nxt
        avg = w.new_var()
        return [ir.SubQuery(select([ir.Projection(ir.Aggregate("AVG", cur), avg)], inner)), ir.Filter(ir.BinaryOp(c.op, end, avg))]
    if c.other is not None:
        start, path = c.other
        cur, out = w.value(start), []
        for step in path:
            nxt = w.new_var()
            out.append(w.step(cur, step, nxt))
            cur = nxt
        return out + [ir.Filter(ir.BinaryOp(c.op, end, cur))]
    if c.op != "either" and (c.value is None or c.op == "exists"):
        return []
    if c.op == "=" and c.value is not None and c.value.kind in ("iri", "literal") and triples:
        triples[-1] = _replace_var(triples[-1], end, w.value(c.value))
        table.pop(c.path, None)
        return []
    return [ir.Filter(_test(w, c, end))]


_TEXT_TESTS = {"contains": "CONTAINS", "starts": "STRSTARTS", "ends": "STRENDS"}  # a piece of text in a value


def _test(w: Writer, c: Cond, end: ir.Var) -> ir.Node:
    """The FILTER expression that compares the node at the end of a constraint's path with its value(s)."""
    if c.op == "either":  # "before 2000 or after 2010"
        return _any([ir.BinaryOp(op, end, w.value(t)) for op, t in c.either])
    if c.op == "in":
        return ir.In(end, [w.value(t) for t in c.values])
    assert c.value is not None, f"a constraint {c.op!r} with no value"
    if c.op == "contains" and c.name_filter:  # a word inside the items' names, in any case
        text = ir.Call("LCASE", [ir.Call("STR", [end])])
        return ir.Call("CONTAINS", [text, ir.Literal(c.value.value.lower())])
    if c.op in _TEXT_TESTS:  # a piece of the question's text inside a value, its characters as written
        return ir.Call(_TEXT_TESTS[c.op], [ir.Call("STR", [end]), ir.Literal(c.value.value)])
    return ir.BinaryOp(c.op, end, w.value(c.value))


def _any(tests: list[ir.Node]) -> ir.Node:
    test = tests[0]
    for other in tests[1:]:
        test = ir.BinaryOp("||", test, other)
    return test


def _replace_var(triple: ir.Node, var: ir.Var, term: ir.Node) -> ir.Node:
    assert isinstance(triple, ir.Triple)
    same = (lambda n: isinstance(n, ir.Var) and n.name == var.name)  # noqa: E731
    return ir.Triple(term if same(triple.s) else triple.s, term if same(triple.p) else triple.p,
                  term if same(triple.o) else triple.o)


def _say_path(w: Writer, path: Path) -> str:
    return " of ".join(w.pred_label(s.pred) for s in reversed(path)) if path else "itself"


def _say_cond(w: Writer, c: Cond, focus: str) -> str:
    if c.shared:  # "another person with the same hometown has age that is less than 20"
        said = _say_cond(w, dataclasses.replace(c, path=c.path[2 * c.shared:], shared=0, negated=False), focus)
        who = f"{'no' if c.negated else 'another'} {focus} with the same {_say_path(w, c.path[:c.shared])}"
        return said.replace(f"the {focus} has", f"{who} has", 1) if f"the {focus} has" in said else f"{said} ({who})"
    what = _say_path(w, c.path)
    val = (c.value.label or c.value.value) if c.value else ""
    if c.other is not None:
        val = f"that of {c.other[0].label or c.other[0].value}"
    if c.versus_average is not None:
        val = "the average"
    ops = {"=": "is", ">": "is more than", "<": "is less than", ">=": "is at least", "<=": "is at most",
           "!=": "is not", "exists": "exists", "starts": "starts with", "ends": "ends with"}
    neg = "no " if c.negated else "also " if c.apart else ""
    if c.any_of:  # "the phone has maker that is Acme, or has memory that is more than 32"
        return ", or ".join(_say_cond(w, d, focus) if i == 0 else _say_cond(w, d, focus).replace(f"the {focus} ", "", 1)
                            for i, d in enumerate(c.any_of))
    if c.op == "either":
        val = " or ".join(f"{ops.get(op, op)} {t.label or t.value}" for op, t in c.either)
        return f"the {focus} has {neg}{what} that {val}"
    if len(c.path) == 1 and not c.path[0].forward and c.op == "=" and c.value is not None:
        # `<item> p ?answer`: the item has the answer as its p ("Lily Tomlin has place of birth the answer")
        return f"{val} has {'no ' if c.negated else ''}{what} the {focus}"
    return f"the {focus} has {neg}{what} that {ops.get(c.op, c.op)} {val}".strip()


def say_form(w: Writer, g: Graph, focus: str) -> str:
    if g.form == "ask":
        return f"we need to know whether such a {focus} exists"
    parts = []
    for fn, path in g.aggs:
        what = _say_path(w, path) if path else f"{focus} items"
        parts.append({"COUNT": "the number of", "COUNT_DISTINCT": "the number of different", "AVG": "the average",
                      "MIN": "the minimum", "MAX": "the maximum", "SUM": "the total"}[fn] + f" {what}")
    cols = [_say_path(w, p) if p else focus for p in g.answer]
    text = "we need " + ", ".join(parts or cols)
    if g.group and g.aggs:
        text += " for each " + ", ".join(cols)
    if g.order is not None:
        path, desc = g.order
        key = _say_path(w, path) if path is not None else "that number"
        text += f", {'highest' if desc else 'lowest'} {key} first"
    if g.limit:
        text += f", the top {g.limit}"
    return text
