"""Plan → SPARQL text through one table of writer functions keyed by node type (sqlglot style).

KB differences come from the `KBProfile` (prefixes, statement-role IRIs), never from branches on
the KB name. Every string that reaches the text is either checked (IRIs, variable names, language
tags, function names, operators) or escaped (literals), so a label or literal full of SPARQL syntax
cannot change the structure of the query; `SERVICE` has no node and so can never be written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from assembler import plan as ir
from assembler.sparql_builtins import BUILTIN_ARITY, BUILTINS, CASTS, NUMERIC_FORMS, VAR_NAME
from kb_dumps.profiles import XSD, KBProfile, get_profile
from kb_dumps.sparql_text import LANG_TAG, escape_string, iri_problem
from kb_dumps.stage_errors import ErrorInfo, QueryError


class _WriteError(Exception):
    """Internal: aborts writing one node; collected into `WriteResult.errors`."""


@dataclass
class WriteResult:
    """The text (None when there were errors), the problems found, and the variable renaming."""

    sparql: str | None
    errors: list[ErrorInfo] = field(default_factory=list)
    var_map: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.sparql is not None and not self.errors

    def raise_for_errors(self) -> str:
        """The SPARQL text, or a QueryError (stage "assemble") carrying every problem."""
        if not self.ok:
            first = self.errors[0] if self.errors else ErrorInfo("assemble", "no query written")
            raise QueryError(first.message, stage="assemble", ac=first.ac, errors=self.errors)
        return self.sparql  # type: ignore[return-value]

    def to_dict(self) -> dict:
        return {"sparql": self.sparql, "errors": [e.to_dict() for e in self.errors], "var_map": self.var_map}


class SparqlWriter:
    """Writes one Plan. `TRANSFORMS` maps node type → writer function; subclasses override entries."""

    TRANSFORMS: dict[type, Callable[[SparqlWriter, ir.Node], str]] = {}
    # Whether ?var names are renumbered ?var1, ?var2… in order of first appearance.
    RENAME_VARS = True

    def __init__(self, profile: KBProfile, mapping: dict[str, str] | None = None, rename_vars: bool | None = None):
        self.profile = profile
        self.mapping = dict(mapping or {})
        self.rename_vars = self.RENAME_VARS if rename_vars is None else rename_vars
        self.var_map: dict[str, str] = {}
        self.used_prefixes: set[str] = set()
        self.errors: list[ErrorInfo] = []

    # ---- entry points ---------------------------------------------------------------------
    def write(self, node: ir.Node) -> str:
        writer = self.TRANSFORMS.get(type(node))
        if writer is None:
            self.fail(node, f"cannot write a {type(node).__name__} node here")
        return writer(self, node)

    def write_query_text(self, query: ir.Query) -> str | None:
        """The whole query with its prefix declarations, or None when a problem was collected."""
        try:
            body = self.write(query)
        except _WriteError:
            return None
        except RecursionError:
            self.errors.append(ErrorInfo(stage="assemble", message="the Plan is nested too deeply to write"))
            return None
        if self.errors:
            return None
        prologue = "".join(f"PREFIX {p}: <{self.profile.prefixes[p]}>\n" for p in sorted(self.used_prefixes))
        return prologue + body

    def fail(self, node: ir.Node | None, message: str) -> None:
        self.errors.append(ErrorInfo(stage="assemble", message=message, ac=getattr(node, "ac", None)))
        raise _WriteError(message)

    # ---- shared pieces --------------------------------------------------------------------
    def iri(self, iri: str, node: ir.Node | None = None) -> str:
        problem = iri_problem(iri)
        if problem:
            self.fail(node, problem)
        compact = self.profile.compact(iri)
        if not compact.startswith("<"):
            self.used_prefixes.add(compact.split(":", 1)[0])
        return compact

    def var(self, name: str, node: ir.Node | None = None) -> str:
        if not isinstance(name, str) or not VAR_NAME.fullmatch(name):
            self.fail(node, f"invalid variable name {str(name)[:40]!r}")
        if not self.rename_vars:
            return "?" + name
        if name not in self.var_map:
            self.var_map[name] = f"var{len(self.var_map) + 1}"
        return "?" + self.var_map[name]

    def resolve_placeholder(self, node: ir.Placeholder) -> str:
        iri = self.mapping.get(node.name)
        if iri is None:
            self.fail(node, f"placeholder [{node.name}] has no grounding (no IRI in the mapping)")
        if not iri.startswith("http") and ":" in iri and not iri.startswith("<"):
            try:
                iri = self.profile.expand(iri)
            except ValueError as exc:
                self.fail(node, f"placeholder [{node.name}]: {exc}")
        elif iri.startswith("<") and iri.endswith(">"):
            iri = iri[1:-1]
        if node.kind == "property":
            # The label memory keeps Wikidata properties as wd:P…; a predicate needs wdt:/p:/….
            iri = self.profile.direct_property(iri)
            try:
                iri = self.profile.role_iri(iri, node.role or "")
            except (ValueError, KeyError) as exc:
                self.fail(node, f"placeholder [{node.name}]: {exc}")
        elif node.role:
            self.fail(node, f"placeholder [{node.name}] is a {node.kind} but carries the role {node.role}:")
        return iri

    def group_body(self, group: ir.Group, indent: str) -> str:
        lines = []
        for item in group.items:
            try:
                text = self.write(item)
            except _WriteError:
                continue  # already collected; keep going so every problem is reported at once
            lines.extend(indent + "  " + line for line in text.split("\n"))
        return "{\n" + "\n".join(lines) + ("\n" if lines else "") + indent + "}"

    def nested(self, group: ir.Group) -> str:
        # Nested blocks are written flat then re-indented by the caller: simple and still valid.
        return self.group_body(group, "")

    def head(self, query: ir.Query) -> str:
        if query.form == "ask":
            return "ASK"
        if query.form not in ("select", "count"):
            self.fail(query, f"unknown query form {query.form!r}; expected select, ask or count")
        cols = " ".join(self.write(p) for p in query.projection) if query.projection else "*"
        return "SELECT " + ("DISTINCT " if query.distinct else "") + cols

    def modifiers(self, query: ir.Query) -> list[str]:
        out = []
        if query.group_by:
            out.append("GROUP BY " + " ".join(self._group_key(k) for k in query.group_by))
        if query.having:
            out.append("HAVING " + " ".join(f"({self.write(h)})" for h in query.having))
        if query.order_by:
            out.append("ORDER BY " + " ".join(self.write(k) for k in query.order_by))
        for name, value in (("LIMIT", query.limit), ("OFFSET", query.offset)):
            if value is not None:
                if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                    self.fail(query, f"{name} must be a non-negative integer, got {value!r}")
                out.append(f"{name} {value}")
        return out

    def _group_key(self, key: ir.Node) -> str:
        text = self.write(key)
        return text if isinstance(key, ir.Var) else f"({text})"

    def path_part(self, node: ir.Node) -> str:
        text = self.write(node)
        return text if isinstance(node, ir.IRI | ir.Placeholder) else f"({text})"


# ---- the table ------------------------------------------------------------------------------


def _query(w: SparqlWriter, q: ir.Query) -> str:
    head = w.head(q)
    body = w.nested(q.where)
    mods = w.modifiers(q)
    return "\n".join([f"{head} WHERE {body}", *mods])


def _var(w: SparqlWriter, n: ir.Var) -> str:
    return w.var(n.name, n)


def _iri(w: SparqlWriter, n: ir.IRI) -> str:
    return w.iri(n.value, n)


def _placeholder(w: SparqlWriter, n: ir.Placeholder) -> str:
    try:
        return w.iri(w.resolve_placeholder(n), n)
    except _WriteError:
        # Collected already; keep writing so every unresolved placeholder is reported at once.
        return "<urn:x-kbqa:unresolved>"


def _literal(w: SparqlWriter, n: ir.Literal) -> str:
    if not isinstance(n.value, str):
        w.fail(n, f"literal value must be a string, got {type(n.value).__name__}")
    if not n.value.isascii():
        try:
            n.value.encode("utf-8")
        except UnicodeEncodeError:
            w.fail(n, f"literal {n.value[:40]!r} is not valid Unicode text (a lone surrogate); fix the text")
    if n.lang:
        if not LANG_TAG.fullmatch(n.lang):
            w.fail(n, f"invalid language tag {n.lang[:20]!r}")
        return escape_string(n.value) + "@" + n.lang
    if n.datatype:
        form = NUMERIC_FORMS.get(n.datatype)
        if form is not None and form.fullmatch(n.value):
            return n.value  # the bare form is both shorter and what people write
        return escape_string(n.value) + "^^" + w.iri(n.datatype, n)
    return escape_string(n.value)


def _triple(w: SparqlWriter, n: ir.Triple) -> str:
    p = w.write(n.p)
    if isinstance(n.p, ir.PathMod | ir.PathSeq | ir.PathAlt | ir.PathInv):
        p = p if p.startswith("(") else f"({p})"
    return f"{w.write(n.s)} {p} {w.write(n.o)} ."


def _path_seq(w: SparqlWriter, n: ir.PathSeq) -> str:
    return "/".join(w.path_part(i) for i in n.items)


def _path_alt(w: SparqlWriter, n: ir.PathAlt) -> str:
    return "|".join(w.path_part(i) for i in n.items)


def _path_inv(w: SparqlWriter, n: ir.PathInv) -> str:
    return "^" + w.path_part(n.item)


def _path_mod(w: SparqlWriter, n: ir.PathMod) -> str:
    if n.mod not in ir.PATH_MODS:
        w.fail(n, f"invalid path modifier {n.mod!r}; expected one of * + ?")
    return w.path_part(n.item) + n.mod


def _filter(w: SparqlWriter, n: ir.Filter) -> str:
    return f"FILTER({w.write(n.expr)})"


def _bind(w: SparqlWriter, n: ir.Bind) -> str:
    return f"BIND({w.write(n.expr)} AS {w.write(n.var)})"


def _optional(w: SparqlWriter, n: ir.Optional) -> str:
    return "OPTIONAL " + w.nested(n.group)


def _minus(w: SparqlWriter, n: ir.Minus) -> str:
    return "MINUS " + w.nested(n.group)


def _union(w: SparqlWriter, n: ir.Union) -> str:
    if len(n.groups) < 2:
        w.fail(n, "UNION needs at least two groups")
    return " UNION ".join(w.nested(g) for g in n.groups)


def _group(w: SparqlWriter, n: ir.Group) -> str:
    return w.nested(n)


def _values(w: SparqlWriter, n: ir.Values) -> str:
    names = " ".join(w.write(v) for v in n.vars)
    rows = []
    for row in n.rows:
        if len(row) != len(n.vars):
            w.fail(n, f"VALUES row has {len(row)} entries for {len(n.vars)} variables")
        rows.append("(" + " ".join("UNDEF" if t is None else w.write(t) for t in row) + ")")
    return f"VALUES ({names}) {{ " + " ".join(rows) + " }"


def _subquery(w: SparqlWriter, n: ir.SubQuery) -> str:
    inner = "\n".join("  " + line for line in w.write(n.query).split("\n"))
    return "{\n" + inner + "\n}"


def _binary(w: SparqlWriter, n: ir.BinaryOp) -> str:
    if n.op not in ir.BINARY_OPS:
        w.fail(n, f"unknown operator {str(n.op)[:10]!r}")
    return f"({w.write(n.left)} {n.op} {w.write(n.right)})"


def _unary(w: SparqlWriter, n: ir.UnaryOp) -> str:
    if n.op not in ir.UNARY_OPS:
        w.fail(n, f"unknown operator {str(n.op)[:10]!r}")
    return f"{n.op}({w.write(n.arg)})"


def _call(w: SparqlWriter, n: ir.Call) -> str:
    name = str(n.name)
    low, high = BUILTIN_ARITY.get(name.upper(), (1, 1))
    if name.upper() not in BUILTINS and not (name.startswith("xsd:") and name[4:] in CASTS):
        w.fail(n, f"unknown function {name[:30]!r}")
    if not low <= len(n.args) <= high:
        w.fail(n, f"{name} takes {low}" + (f" to {high}" if high != low else "") + f" arguments, got {len(n.args)}")
    if name.upper() == "BOUND" and not isinstance(n.args[0], ir.Var):
        w.fail(n, "BOUND takes a variable")
    args = ", ".join(w.write(a) for a in n.args)
    if name.upper() in BUILTINS:
        return f"{name.upper()}({args})"
    return f"{w.iri(XSD + name[4:], n)}({args})"


def _in(w: SparqlWriter, n: ir.In) -> str:
    items = ", ".join(w.write(i) for i in n.items)
    return f"({w.write(n.expr)} {'NOT IN' if n.negated else 'IN'} ({items}))"


def _exists(w: SparqlWriter, n: ir.Exists) -> str:
    return ("NOT EXISTS " if n.negated else "EXISTS ") + w.nested(n.group)


def _aggregate(w: SparqlWriter, n: ir.Aggregate) -> str:
    name = str(n.name).upper()
    if name not in ir.AGGREGATES:
        w.fail(n, f"unknown aggregate {str(n.name)[:20]!r}")
    arg = "*" if n.arg is None else w.write(n.arg)
    if arg == "*" and name != "COUNT":
        w.fail(n, f"{name}(*) is not SPARQL; only COUNT(*)")
    sep = f"; SEPARATOR={escape_string(n.separator)}" if n.separator is not None and name == "GROUP_CONCAT" else ""
    return f"{name}({'DISTINCT ' if n.distinct else ''}{arg}{sep})"


def _projection(w: SparqlWriter, n: ir.Projection) -> str:
    return f"({w.write(n.expr)} AS {w.write(n.var)})"


def _order_key(w: SparqlWriter, n: ir.OrderKey) -> str:
    return f"{'DESC' if n.descending else 'ASC'}({w.write(n.expr)})"


SparqlWriter.TRANSFORMS = {
    ir.Query: _query,
    ir.Var: _var,
    ir.IRI: _iri,
    ir.Placeholder: _placeholder,
    ir.Literal: _literal,
    ir.Triple: _triple,
    ir.PathSeq: _path_seq,
    ir.PathAlt: _path_alt,
    ir.PathInv: _path_inv,
    ir.PathMod: _path_mod,
    ir.Filter: _filter,
    ir.Bind: _bind,
    ir.Optional: _optional,
    ir.Minus: _minus,
    ir.Union: _union,
    ir.Group: _group,
    ir.Values: _values,
    ir.SubQuery: _subquery,
    ir.BinaryOp: _binary,
    ir.UnaryOp: _unary,
    ir.Call: _call,
    ir.In: _in,
    ir.Exists: _exists,
    ir.Aggregate: _aggregate,
    ir.Projection: _projection,
    ir.OrderKey: _order_key,
}


def write_sparql(query: ir.Query, profile: KBProfile | str = "wikidata", mapping: dict[str, str] | None = None,
                 *, rename_vars: bool = True) -> WriteResult:
    """Write `query` as SPARQL for `profile`, placeholders resolved through `mapping`
    (`{placeholder name: IRI}`, full or prefixed). Never raises on a bad Plan: problems are
    returned in `WriteResult.errors` (stage "assemble", with the AC of the offending node)."""
    writer = SparqlWriter(get_profile(profile), mapping, rename_vars=rename_vars)
    text = writer.write_query_text(query)
    return WriteResult(sparql=text, errors=writer.errors, var_map=dict(writer.var_map))
