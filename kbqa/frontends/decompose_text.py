"""AC sentences for decompose: Plan nodes verbalised from placeholder labels with fixed templates (no model)."""

from __future__ import annotations

from assembler import plan as ir

_OPS = {"=": "is", "!=": "is not", "<": "is less than", ">": "is greater than", "<=": "is at most",
        ">=": "is at least", "&&": "and", "||": "or", "+": "plus", "-": "minus", "*": "times", "/": "divided by"}
_CALLS = {"LANG": "the language of {0}", "YEAR": "the year of {0}", "MONTH": "the month of {0}",
          "DAY": "the day of {0}", "STR": "the text of {0}", "LCASE": "lowercase {0}", "UCASE": "uppercase {0}",
          "STRLEN": "the length of {0}", "BOUND": "{0} is known", "DATATYPE": "the datatype of {0}",
          "CONTAINS": "{0} contains {1}", "STRSTARTS": "{0} starts with {1}", "STRENDS": "{0} ends with {1}",
          "REGEX": "{0} matches {1}", "LANGMATCHES": "{0} is in language {1}", "ISIRI": "{0} is an IRI",
          "ISURI": "{0} is an IRI", "ISLITERAL": "{0} is a literal", "ABS": "the absolute value of {0}"}
_AGGS = {"COUNT": "the number of", "SUM": "the sum of", "MIN": "the minimum of", "MAX": "the maximum of",
         "AVG": "the average of", "SAMPLE": "one of", "GROUP_CONCAT": "the list of"}
_MODS = {"*": " (zero or more times)", "+": " (one or more times)", "?": " (optionally)"}


class Verbaliser:
    """Sentences for Plan nodes; `type_names` are placeholders of instance-of / type predicates."""

    def __init__(self, type_names: set[str] | None = None, subclass_names: set[str] | None = None):
        self.type_names = type_names or set()
        self.subclass_names = subclass_names or set()

    # ---- terms -----------------------------------------------------------------------------
    def term(self, n: ir.Node | None) -> str:
        if n is None:
            return "nothing"
        if isinstance(n, ir.Var):
            return "?" + n.name
        if isinstance(n, ir.Placeholder):
            return n.label or n.name
        if isinstance(n, ir.Literal):
            if n.datatype and not n.lang and n.datatype.endswith(("integer", "decimal", "double", "boolean")):
                return n.value
            return f'"{n.value}"' + (f"@{n.lang}" if n.lang else "")
        if isinstance(n, ir.IRI):
            return n.value
        if isinstance(n, ir.PathSeq):
            return " then ".join(self.term(i) for i in n.items)
        if isinstance(n, ir.PathAlt):
            return " or ".join(self.term(i) for i in n.items)
        if isinstance(n, ir.PathInv):
            return f"inverse {self.term(n.item)}"
        if isinstance(n, ir.PathMod):
            return self.term(n.item) + _MODS.get(n.mod, n.mod)
        return self.expr(n)

    def expr(self, n: ir.Node) -> str:
        if isinstance(n, ir.BinaryOp):
            return f"{self.expr(n.left)} {_OPS.get(n.op, n.op)} {self.expr(n.right)}"
        if isinstance(n, ir.UnaryOp):
            return f"not ({self.expr(n.arg)})" if n.op == "!" else f"{n.op}{self.expr(n.arg)}"
        if isinstance(n, ir.Call):
            args = [self.expr(a) for a in n.args]
            template = _CALLS.get(n.name.upper())
            if template and template.count("{") <= len(args):
                return template.format(*args)
            return f"{n.name}({', '.join(args)})"
        if isinstance(n, ir.In):
            return f"{self.expr(n.expr)} is {'not ' if n.negated else ''}one of " + ", ".join(
                self.expr(i) for i in n.items)
        if isinstance(n, ir.Exists):
            inner = "; ".join(self.item(i) for i in n.group.items)
            return f"there is {'no ' if n.negated else ''}match for ({inner})"
        if isinstance(n, ir.Aggregate):
            arg = "all results" if n.arg is None else self.expr(n.arg)
            return f"{_AGGS.get(n.name, n.name.lower())} {'distinct ' if n.distinct else ''}{arg}"
        if isinstance(n, ir.Projection):
            return f"{self.expr(n.expr)} (as ?{n.var.name})"
        return self.term(n)

    # ---- patterns --------------------------------------------------------------------------
    def triple(self, t: ir.Triple) -> str:
        s, o = self.term(t.s), self.term(t.o)
        p = t.p
        if isinstance(p, ir.Placeholder):
            label = p.label or p.name
            if p.name in self.type_names and not p.role:
                return f"{s} is an instance of {o}"
            if p.name in self.subclass_names and not p.role:
                return f"{s} is a subclass of {o}"
            if p.role == "p":
                return f"{s} has a {label} statement {o}"
            if p.role == "ps":
                return f"statement {s} has the {label} value {o}"
            if p.role == "pq":
                return f"statement {s} has the qualifier {label} {o}"
            return f"{s} has {label} {o}"
        if isinstance(p, ir.Var):
            return f"{s} is related to {o} by some property ?{p.name}"
        return f"{s} is connected to {o} by {self.term(p)}"

    def item(self, n: ir.Node) -> str:
        if isinstance(n, ir.Triple):
            return self.triple(n)
        if isinstance(n, ir.Filter):
            return f"keep only results where {self.expr(n.expr)}"
        if isinstance(n, ir.Optional):
            return "optionally, " + self.items(n.group)
        if isinstance(n, ir.Minus):
            return "exclude results where " + self.items(n.group)
        if isinstance(n, ir.Union):
            return "either " + " or ".join(f"({self.items(g)})" for g in n.groups)
        if isinstance(n, ir.Values):
            names = " ".join("?" + v.name for v in n.vars)
            rows = ", ".join(" ".join(self.term(t) for t in row) for row in n.rows)
            return f"{names} is one of {rows}"
        if isinstance(n, ir.Bind):
            return f"?{n.var.name} is {self.expr(n.expr)}"
        if isinstance(n, ir.SubQuery):
            return f"from a sub-query: {self.head(n.query)}; {self.items(n.query.where)}" + (
                f"; {self.modifiers(n.query)}" if self.modifiers(n.query) else "")
        if isinstance(n, ir.Group):
            return self.items(n)
        return self.expr(n)

    def items(self, g: ir.Group) -> str:
        return "; ".join(self.item(i) for i in g.items) or "nothing"

    # ---- the query form and modifiers -------------------------------------------------------
    def head(self, q: ir.Query) -> str:
        if q.form == "ask":
            return "we need to know whether the following constraints hold"
        if not q.projection:
            return "we need every variable of the constraints" + (" (distinct)" if q.distinct else "")
        parts = []
        for p in q.projection:
            if isinstance(p, ir.Projection) and isinstance(p.expr, ir.Var):
                parts.append(f"?{p.expr.name} (as ?{p.var.name})")
            else:
                parts.append(self.expr(p))
        listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
        return "we need " + ("distinct " if q.distinct and q.form != "count" else "") + listed

    def modifiers(self, q: ir.Query) -> str:
        bits = []
        if q.group_by:
            bits.append("grouped by " + ", ".join(self.expr(k) for k in q.group_by))
        if q.having:
            bits.append("keeping groups where " + " and ".join(self.expr(h) for h in q.having))
        if q.order_by:
            bits.append("ordered by " + ", ".join(
                self.expr(k.expr) + (" descending" if k.descending else " ascending") for k in q.order_by))
        if q.offset is not None:
            bits.append(f"skipping the first {q.offset}")
        if q.limit is not None:
            bits.append("keeping the first result" if q.limit == 1 else f"keeping the first {q.limit} results")
        return ", ".join(bits)
