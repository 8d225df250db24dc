"""Recursive-descent parser for one DeSQ fragment (the SPARQL subset with placeholders) → Plan nodes.

Not rdflib: placeholders (`[name]`, `p:[name]`) are not SPARQL, and a model's fragment needs
located, collected errors. A fragment may hold a query head (`SELECT …` / `ASK`), solution
modifiers (`GROUP BY`, `HAVING`, `ORDER BY`, `LIMIT`, `OFFSET`) and graph-pattern items; the
caller stitches the fragments of all ACs into one Query.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from assembler import plan as ir
from kb_dumps.profiles import RDF
from kbqa.frontends.desq_expr import KNOWN_PREFIXES, ExprParser, FragmentError

__all__ = ["KNOWN_PREFIXES", "Fragment", "FragmentError", "FragmentParser", "parse_fragment"]
_MODIFIERS = {"GROUP", "HAVING", "ORDER", "LIMIT", "OFFSET"}


@dataclass
class Fragment:
    """What one fragment contributed: an optional head, modifiers, and pattern items."""

    head: ir.Query | None = None
    items: list[ir.Node] = field(default_factory=list)
    group_by: list[ir.Node] = field(default_factory=list)
    having: list[ir.Node] = field(default_factory=list)
    order_by: list[ir.OrderKey] = field(default_factory=list)
    limit: int | None = None
    offset: int | None = None


class FragmentParser(ExprParser):
    """Parses one fragment: head, modifiers and group graph patterns."""

    # ---- fragment -------------------------------------------------------------------------
    def parse_fragment(self) -> Fragment:
        frag = Fragment()
        while self.tok.kind != "EOF":
            if self.at("SELECT", "ASK"):
                if frag.head is not None:
                    self.error("a second query form (SELECT/ASK) in the same fragment")
                frag.head = self.parse_head()
            elif self.tok.kind == "NAME" and self.tok.upper in _MODIFIERS:
                self.parse_modifier(frag)
            else:
                item = self.parse_item()
                if item is not None:
                    frag.items.append(item)
        return frag

    def parse_head(self) -> ir.Query:
        q = ir.Query(ac=self.ac)
        if self.accept("ASK"):
            q.form = "ask"
        else:
            self.expect("SELECT")
            q.distinct = self.accept("DISTINCT")
            self.accept("REDUCED")
            if not self.accept("*"):
                while self.tok.kind == "VAR" or self.at("("):
                    q.projection.append(self.parse_projection())
                if not q.projection:
                    self.error(f"SELECT needs variables or (COUNT(?v) AS ?n), found {self.describe()}")
            if (len(q.projection) == 1 and isinstance(q.projection[0], ir.Projection)
                    and isinstance(q.projection[0].expr, ir.Aggregate) and q.projection[0].expr.name == "COUNT"):
                q.form = "count"
        if self.accept("WHERE") or self.at("{"):
            q.where = self.parse_braced_group()
        return q

    def parse_projection(self) -> ir.Node:
        if self.tok.kind == "VAR":
            return self.var(self.next())
        self.expect("(")
        expr = self.parse_expr()
        self.expect("AS", "in a (expression AS ?var) projection")
        if self.tok.kind != "VAR":
            self.error(f"expected a variable after AS, found {self.describe()}")
        var = self.var(self.next())
        self.expect(")")
        return ir.Projection(expr, var, ac=self.ac)

    def parse_modifier(self, frag: Fragment) -> None:
        word = self.next().upper
        if word == "GROUP":
            self.expect("BY")
            while self.tok.kind == "VAR" or self.at("("):
                frag.group_by.append(self.var(self.next()) if self.tok.kind == "VAR" else self.parse_bracketed())
        elif word == "HAVING":
            frag.having.append(self.parse_bracketed())
            while self.at("("):
                frag.having.append(self.parse_bracketed())
        elif word == "ORDER":
            self.expect("BY")
            while True:
                if self.at("ASC", "DESC"):
                    desc = self.next().upper == "DESC"
                    frag.order_by.append(ir.OrderKey(self.parse_bracketed(), desc, ac=self.ac))
                elif self.tok.kind == "VAR":
                    frag.order_by.append(ir.OrderKey(self.var(self.next()), ac=self.ac))
                elif self.at("("):
                    frag.order_by.append(ir.OrderKey(self.parse_bracketed(), ac=self.ac))
                else:
                    break
            if not frag.order_by:
                self.error(f"ORDER BY needs a key, found {self.describe()}")
        else:
            if self.tok.kind != "NUMBER" or not self.tok.text.isdigit():
                self.error(f"{word} needs a non-negative integer, found {self.describe()}")
            value = int(self.next().text)
            if word == "LIMIT":
                frag.limit = value
            else:
                frag.offset = value

    # ---- group graph patterns -------------------------------------------------------------
    def parse_braced_group(self) -> ir.Group:
        self.enter()
        self.expect("{")
        if self.at("SELECT"):
            sub = self.parse_subquery()
            self.expect("}", "to close the sub-query")
            self.depth -= 1
            return ir.Group([sub], ac=self.ac)
        group = ir.Group(ac=self.ac)
        while not self.at("}"):
            if self.tok.kind == "EOF":
                self.error("unbalanced braces: '{' is never closed")
            if self.at("SELECT", "ASK"):
                self.error("a query form inside a group must be a sub-query of its own '{ SELECT … }'")
            item = self.parse_item()
            if item is not None:
                group.items.append(item)
        self.next()
        self.depth -= 1
        return group

    def parse_subquery(self) -> ir.SubQuery:
        q = self.parse_head()
        frag = Fragment()
        while self.tok.kind == "NAME" and self.tok.upper in _MODIFIERS:
            self.parse_modifier(frag)
        q.group_by, q.having, q.order_by = frag.group_by, frag.having, frag.order_by
        q.limit, q.offset = frag.limit, frag.offset
        return ir.SubQuery(q, ac=self.ac)

    def parse_item(self) -> ir.Node | None:
        t = self.tok
        if t.kind == "OP" and t.text == ".":
            self.next()
            return None
        if t.kind == "OP" and t.text == "}":
            self.error("unbalanced braces: '}' without a matching '{'")
        word = t.upper if t.kind == "NAME" else ""
        if word == "SERVICE":
            self.error("SERVICE is refused: queries run only against the local store")
        if word == "GRAPH":
            self.error("GRAPH is not supported in DeSQ fragments")
        if word == "FILTER":
            self.next()
            if self.at("NOT", "EXISTS"):
                return ir.Filter(self.parse_exists(), ac=self.ac)
            return ir.Filter(self.parse_constraint(), ac=self.ac)
        if word == "OPTIONAL":
            self.next()
            return ir.Optional(self.parse_braced_group(), ac=self.ac)
        if word == "MINUS":
            self.next()
            return ir.Minus(self.parse_braced_group(), ac=self.ac)
        if word == "BIND":
            self.next()
            self.expect("(")
            expr = self.parse_expr()
            self.expect("AS")
            if self.tok.kind != "VAR":
                self.error(f"expected a variable after AS, found {self.describe()}")
            var = self.var(self.next())
            self.expect(")")
            return ir.Bind(expr, var, ac=self.ac)
        if word == "VALUES":
            self.next()
            return self.parse_values()
        if word == "UNION":
            self.error("UNION must follow its left '{ … }' group in the same fragment")
        if t.kind == "OP" and t.text == "{":
            groups = [self.parse_braced_group()]
            while self.accept("UNION"):
                groups.append(self.parse_braced_group())
            if len(groups) > 1:
                return ir.Union(groups, ac=self.ac)
            g = groups[0]
            if len(g.items) == 1 and isinstance(g.items[0], ir.SubQuery):
                return g.items[0]
            return g
        return self.parse_triples()

    def parse_constraint(self) -> ir.Node:
        if self.at("("):
            return self.parse_bracketed()
        if self.tok.kind == "NAME":
            return self.parse_primary()
        self.error(f"FILTER needs '(' or a function call, found {self.describe()}")
        raise AssertionError  # unreachable: error() raises

    def parse_values(self) -> ir.Values:
        names: list[ir.Var] = []
        if self.tok.kind == "VAR":
            names.append(self.var(self.next()))
            single = True
        else:
            single = False
            self.expect("(", "after VALUES")
            while self.tok.kind == "VAR":
                names.append(self.var(self.next()))
            self.expect(")")
        self.expect("{", "to open the VALUES rows")
        rows: list[list[ir.Node | None]] = []
        while not self.at("}"):
            if self.tok.kind == "EOF":
                self.error("unbalanced braces: VALUES '{' is never closed")
            if single:
                rows.append([self.parse_value_term()])
                continue
            self.expect("(", "to open a VALUES row")
            row: list[ir.Node | None] = []
            while not self.at(")"):
                if self.tok.kind == "EOF":
                    self.error("a VALUES row '(' is never closed")
                row.append(self.parse_value_term())
            self.next()
            if len(row) != len(names):
                self.error(f"VALUES row has {len(row)} entries for {len(names)} variables")
            rows.append(row)
        self.next()
        return ir.Values(names, rows, ac=self.ac)

    def parse_value_term(self) -> ir.Node | None:
        if self.accept("UNDEF"):
            return None
        term = self.parse_term()
        if isinstance(term, ir.Var):
            self.error("VALUES rows hold IRIs, placeholders or literals, not variables")
        return term

    # ---- triples ---------------------------------------------------------------------------
    def parse_triples(self) -> ir.Node:
        subject = self.parse_term()
        triples: list[ir.Node] = []
        while True:
            pred = self.parse_verb()
            while True:
                triples.append(ir.Triple(subject, pred, self.parse_term(), ac=self.ac))
                if not self.accept(","):
                    break
            if self.accept(";"):
                if self.at(".", "}") or self.tok.kind == "EOF":
                    break  # a dangling ';' is harmless: tolerate it
                continue
            break
        self.accept(".")
        return triples[0] if len(triples) == 1 else ir.Group(triples, ac=self.ac)

    def parse_verb(self) -> ir.Node:
        if self.tok.kind == "VAR":
            return self.var(self.next())
        return self.parse_path_alt()

    def parse_path_alt(self) -> ir.Node:
        items = [self.parse_path_seq()]
        while self.accept("|"):
            items.append(self.parse_path_seq())
        return items[0] if len(items) == 1 else ir.PathAlt(items, ac=self.ac)

    def parse_path_seq(self) -> ir.Node:
        items = [self.parse_path_elt()]
        while self.accept("/"):
            items.append(self.parse_path_elt())
        return items[0] if len(items) == 1 else ir.PathSeq(items, ac=self.ac)

    def parse_path_elt(self) -> ir.Node:
        inverse = self.accept("^")
        if self.accept("("):
            self.enter()
            item = self.parse_path_alt()
            self.expect(")", "to close the property path")
            self.depth -= 1
        elif self.tok.kind == "NAME" and self.tok.text == "a":
            self.next()
            item = ir.IRI(RDF + "type", ac=self.ac)
        elif self.tok.kind in ("PLACEHOLDER", "PNAME", "IRIREF"):
            item = self.parse_term()
        else:
            self.error(f"expected a predicate (placeholder, IRI or ?var), found {self.describe()}")
        if self.tok.kind == "OP" and self.tok.text in ("*", "+", "?"):
            item = ir.PathMod(item, self.next().text, ac=self.ac)
        return ir.PathInv(item, ac=self.ac) if inverse else item


def parse_fragment(text: str, ac: str | None) -> Fragment:
    """Parse one fragment. Raises FragmentError (message, fragment-relative line) on the first problem."""
    try:
        return FragmentParser(text, ac).parse_fragment()
    except RecursionError:
        raise FragmentError("the fragment is nested too deeply", 1) from None
