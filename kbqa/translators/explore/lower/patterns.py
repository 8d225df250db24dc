"""The patterns of a query graph (query.py), written with one term writer: DeSQ placeholders (with a grounding
line naming the URI the search confirmed) or SPARQL IRIs. `lower/text.py` puts them together as DeSQ or SPARQL;
one builder writes both, so what was checked is what the pipeline compiles."""

from __future__ import annotations

import json
import re

from grounding.schema import SchemaMemory, readable_name
from grounding.text import normalize
from kbqa.translators.explore.query import Cond, Graph, Path, Term


def _literal(t: Term) -> str:
    if t.kind == "number":
        return t.value
    text = json.dumps(t.value, ensure_ascii=False)  # escapes quotes, backslashes and control characters
    return text + (f"^^<{t.datatype}>" if t.datatype and not t.datatype.endswith("#string") else "")


class Writer:
    """Writes a Graph's patterns with one term writer: DeSQ placeholders or SPARQL IRIs."""

    def __init__(self, g: Graph, schema: SchemaMemory, desq: bool):
        self.g, self.schema, self.desq = g, schema, desq
        self.vars: dict[Path, str] = {(): "?var1"}
        self.slots: dict[tuple[str, str], str] = {}  # (kind, iri) -> slot name
        self.grounding: list[str] = []
        self.acs: list[tuple[str, str]] = []  # (sentence, fragment)
        self.n = 1

    def term(self, kind: str, iri: str, label: str = "") -> str:
        if not self.desq:
            return f"<{iri}>"
        key = (kind, iri)
        if key not in self.slots:
            # a DeSQ placeholder name is ASCII ([A-Za-z_][A-Za-z0-9_]*): accents stripped, the rest dropped
            base = re.sub(r"[^a-z0-9]+", "_", normalize(label or readable_name(iri))).strip("_")
            name = (base or kind)[:24]
            if name[0].isdigit():
                name = "x" + name
            used = set(self.slots.values())
            k, cand = 2, name
            while cand in used:
                cand, k = f"{name}_{k}", k + 1
            self.slots[key] = cand
            label = label or readable_name(iri)
            self.grounding.append(f"[{cand}] {kind} | {_bar(label)} | {_bar(self._describe(kind, iri))} | <{iri}>")
        return f"[{self.slots[key]}]"

    def _describe(self, kind: str, iri: str) -> str:
        if kind == "class":
            return f"a class of {self.schema.classes.get(iri, {}).get('count', 0)} items"
        if kind == "property":
            info = self.schema.predicates.get(iri)
            return f"{info.name} ({'value' if info.literal else 'link'})" if info else "a property"
        return "an item of the knowledge graph"

    def pred_label(self, p: str) -> str:
        info = self.schema.predicates.get(p)
        return info.label if info else readable_name(p)

    def new_var(self) -> str:
        self.n += 1
        return f"?var{self.n}"

    def walk(self, path: Path, scoped: dict[Path, str] | None = None) -> tuple[str, list[str]]:
        """The variable at the end of `path` and the triples that reach it (shared prefixes reuse variables)."""
        table = self.vars if scoped is None else scoped
        triples, cur = [], table[()] if () in table else self.vars[()]
        for i in range(1, len(path) + 1):
            prefix = path[:i]
            if prefix in table:
                cur = table[prefix]
                continue
            nxt = self.new_var()
            step = path[i - 1]
            p = self.term("property", step.pred, self.pred_label(step.pred))
            triples.append(f"{cur} {p} {nxt} ." if step.forward else f"{nxt} {p} {cur} .")
            table[prefix], cur = nxt, nxt
        return cur, triples

    def type_triple(self, var: str, cls: str) -> str:
        label = self.schema.class_label(cls)
        if self.desq:
            return f"{var} a {self.term('class', cls, label)} ."
        return f"{var} <{self.schema.type_predicate}> <{cls}> ."

    def value(self, t: Term) -> str:
        if t.kind == "iri":
            return self.term("entity", t.value, t.label)
        return _literal(t)


def _bar(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


Body = list[tuple[str, list[str]]]


def agg_call(fn: str, target: str) -> str:
    """`COUNT_DISTINCT` counts the different values at its path ("how many different countries")."""
    return f"COUNT(DISTINCT {target})" if fn == "COUNT_DISTINCT" else f"{fn}({target})"


def constraint_patterns(w: Writer, g: Graph, focus_label: str) -> Body:
    """The type constraint and the constraints of `g` on the focus variable the writer holds now."""
    focus = w.vars[()]
    body: Body = []
    if g.focus_class:
        body.append((f"the {focus_label} is a {focus_label}", [w.type_triple(focus, g.focus_class)]))
    for c in g.conds:
        if c.negated:
            scoped: dict[Path, str] = {(): focus}
            end, triples = w.walk(c.path, scoped)
            tail = _cond_tail(w, c, end, triples, scoped)
            # the triple holding the constant first: the store then starts the NOT EXISTS from it
            inner = list(reversed(triples)) + tail
            body.append((_say_cond(w, c, focus_label), [f"FILTER NOT EXISTS {{ {' '.join(inner)} }}"]))
            continue
        end, triples = w.walk(c.path)
        fragment = triples + _cond_tail(w, c, end, triples, w.vars)
        if fragment:  # an "exists" on a path another constraint already walks adds nothing
            body.append((_say_cond(w, c, focus_label), fragment))
    return body


def graph_patterns(w: Writer, g: Graph) -> tuple[Body, str, list[str]]:
    """Patterns (sentence, fragment lines), the head and the solution modifiers of a one-focus graph."""
    focus_label = w.schema.class_label(g.focus_class) if g.focus_class else "answer"
    focus = w.vars[()]
    body = constraint_patterns(w, g, focus_label)
    cols: list[str] = []
    for path in g.answer:
        end, triples = w.walk(path)
        cols.append(end)
        if triples:
            body.append((f"the {focus_label} has {_say_path(w, path)}", triples))
    agg_cols: list[str] = []
    for i, (fn, path) in enumerate(g.aggs):
        target = focus
        if path:
            target, triples = w.walk(path)
            if triples:
                body.append((f"the {focus_label} has {_say_path(w, path)}", triples))
        agg_cols.append(f"({agg_call(fn, target)} AS ?agg{i + 1})")
    having = ""
    if g.having is not None:
        op, value, hpath = g.having
        counted, triples = w.walk(hpath)
        if triples:
            body.append((f"the {focus_label} has {_say_path(w, hpath)}", triples))
        having = f"HAVING (COUNT({counted}) {op} {value:g})"
    order_key = ""
    if g.order is not None:
        path, desc = g.order
        if path is None:
            order_key = "?agg1"
        else:
            order_key, triples = w.walk(path)
            if triples:
                body.append((f"the {focus_label} has {_say_path(w, path)}", triples))
        order_key = f"ORDER BY {'DESC' if desc else 'ASC'}({order_key})"
    if g.form == "ask":
        head = "ASK"
    else:
        shown = agg_cols if g.aggs and not g.group else (cols + agg_cols)
        head = "SELECT " + ("DISTINCT " if g.distinct and not g.aggs else "") + " ".join(shown)
    mods = []
    if (g.group and g.aggs) or having:
        mods.append("GROUP BY " + " ".join(cols))
    if having:
        mods.append(having)
    if order_key:
        mods.append(order_key)
    if g.limit:
        mods.append(f"LIMIT {g.limit}")
    return body, head, mods


def combined_patterns(w: Writer, g: Graph) -> tuple[Body, str, list[str]]:
    """Two aggregates, each a sub-SELECT over its own constraints, combined by a percentage or a comparison."""
    body: Body = []
    names: list[str] = []
    for part in g.parts:
        w.vars = {(): w.new_var()}
        label = w.schema.class_label(part.focus_class) if part.focus_class else "answer"
        inner = constraint_patterns(w, part, label)
        fn, path = part.aggs[0]
        target, walk = w.walk(path) if path else (w.vars[()], [])
        name = w.new_var()
        names.append(name)
        arg = f"DISTINCT {target}" if fn == "COUNT" and not path else target
        lines = [t for _, ts in inner for t in ts] + walk
        sentence = say_form(w, part, label).removeprefix("we need ")
        if inner:
            sentence += " such that " + " and ".join(s for s, _ in inner)
        body.append((sentence, [f"{{ SELECT ({fn}({arg}) AS {name}) WHERE {{ {' '.join(lines)} }} }}"]))
    w.vars = {(): "?var1"}
    if g.combine == "percent":
        return body, f"SELECT (({names[0]} / {names[1]}) * 100 AS ?agg1)", []
    body.append((f"the first is {'more' if g.combine == '>' else 'less'} than the second",
                 [f"FILTER({names[0]} {g.combine} {names[1]})"]))
    return body, "ASK", []


def say_combined(w: Writer, g: Graph) -> str:
    if g.combine == "percent":
        return "we need the percentage the first number is of the second"
    return "we need to know whether the first number is " + ("greater" if g.combine == ">" else "smaller")


def _cond_tail(w: Writer, c: Cond, end: str, triples: list[str], table: dict[Path, str]) -> list[str]:
    """Put the compared value in: an IRI or exact literal replaces the end variable (which is then no
    longer shared with other paths); others are FILTERs."""
    if c.versus_average is not None:
        item = w.new_var()
        inner = [w.type_triple(item, c.versus_average)]
        cur = item
        for step in c.path:
            nxt = w.new_var()
            p = w.term("property", step.pred, w.pred_label(step.pred))
            inner.append(f"{cur} {p} {nxt} ." if step.forward else f"{nxt} {p} {cur} .")
            cur = nxt
        avg = w.new_var()
        return [f"{{ SELECT (AVG({cur}) AS {avg}) WHERE {{ {' '.join(inner)} }} }}", f"FILTER({end} {c.op} {avg})"]
    if c.other is not None:
        start, path = c.other
        cur, out = w.value(start), []
        for step in path:
            nxt = w.new_var()
            p = w.term("property", step.pred, w.pred_label(step.pred))
            out.append(f"{cur} {p} {nxt} ." if step.forward else f"{nxt} {p} {cur} .")
            cur = nxt
        return out + [f"FILTER({end} {c.op} {cur})"]
    if c.value is None or c.op == "exists":
        return []
    if c.op == "=" and c.value.kind in ("iri", "literal") and triples:
        triples[-1] = _replace_last_var(triples[-1], end, w.value(c.value))
        table.pop(c.path, None)
        return []
    if c.op == "contains":
        return [f"FILTER(CONTAINS(LCASE(STR({end})), {json.dumps(c.value.value.lower(), ensure_ascii=False)}))"]
    if c.op == "in":
        return [f"FILTER({end} IN ({', '.join(w.value(t) for t in c.values)}))"]
    return [f"FILTER({end} {c.op} {w.value(c.value)})"]


def _replace_last_var(triple: str, var: str, term: str) -> str:
    parts = triple[:-2].split(" ")
    return " ".join(term if p == var else p for p in parts) + " ."


def _say_path(w: Writer, path: Path) -> str:
    return " of ".join(w.pred_label(s.pred) for s in reversed(path)) if path else "itself"


def _say_cond(w: Writer, c: Cond, focus: str) -> str:
    what = _say_path(w, c.path)
    val = (c.value.label or c.value.value) if c.value else ""
    if c.other is not None:
        val = f"that of {c.other[0].label or c.other[0].value}"
    if c.versus_average is not None:
        val = "the average"
    ops = {"=": "is", ">": "is more than", "<": "is less than", ">=": "is at least", "<=": "is at most",
           "!=": "is not", "exists": "exists"}
    neg = "no " if c.negated else ""
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
