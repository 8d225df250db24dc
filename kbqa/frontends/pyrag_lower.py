"""PyRAG lowering: the checked program → one Plan, statically (only the slice `final_answer` depends on).

Each value is symbolic: a term (a variable, or an entity/class placeholder) plus the pattern items that
constrain it. `hop`/`rhop`/`isa`/`filter` add items; `count` and `argmax`/`argmin` make a query that
becomes a sub-SELECT when the chain goes on (and the query itself when it is the final answer);
`compare` makes a yes/no value (an ASK when final); `ask_kb` lowers a sub-question through DeSQ
(QCompiler's leaf machinery: `{name}` of the f-string joins on that variable). Nodes keep `ac = "lineN"`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from assembler.plan import (
    IRI,
    Aggregate,
    BinaryOp,
    Bind,
    Call,
    Filter,
    Group,
    Literal,
    Node,
    OrderKey,
    Placeholder,
    Projection,
    Query,
    SubQuery,
    Triple,
    Var,
    substitute,
)
from kb_dumps.profiles import XSD, KBProfile, get_profile
from kb_dumps.stage_errors import ErrorInfo, internal_error
from kbqa.frontends.desq_expr import expand_uri
from kbqa.frontends.frontend_result import FrontendResult
from kbqa.frontends.pyrag_program import FINAL, OPS, ArgValue, FStr, PCall, Program, Ref, Stmt, read_program
from kbqa.frontends.qcompiler import AtomicQuery, LeafRecord, LeafRepair, LeafTranslate, translate_question
from kbqa.frontends.qcompiler_plan import Lowered, answer_of, pattern_items, rename_apart, tag_ac

if TYPE_CHECKING:
    from kbqa.settings import RequestCaps

_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}(T[\d:.]+Z?)?$")


@dataclass
class Val:
    """A symbolic value: kind node | class | number | bool, its term, the items constraining it, and for
    an aggregate or argmax the query that computes it (used as is when it is the final answer)."""

    kind: str
    term: Node | None
    items: list[Node] = field(default_factory=list)
    query: Query | None = None


@dataclass
class PyragResult(FrontendResult):
    """The Plan (None when any problem was found), every problem, the program and its ask_kb sub-questions."""

    program: Program | None = None
    subquestions: list[LeafRecord] = field(default_factory=list)
    lowered_lines: list[int] = field(default_factory=list)  # the slice that final_answer depends on

    @property
    def constraints(self) -> list[LeafRecord]:
        return self.subquestions

    def to_dict(self) -> dict:
        return {**self._result_dict("pyrag"), "lowered_lines": self.lowered_lines,
                "statements": [{"line": s.line, "target": s.target} for s in (self.program.statements
                                                                              if self.program else [])],
                "subquestions": [q.to_dict() for q in self.subquestions]}


class _LowerError(Exception):
    def __init__(self, line: int, message: str, stage: str = "validate"):
        super().__init__(message)
        self.info = ErrorInfo(stage, f"line {line}: {message}", line=line, ac=f"line{line}")


def _refs(value: ArgValue) -> list[Ref]:
    if isinstance(value, Ref):
        return [value]
    if isinstance(value, PCall):
        return [r for v in value.args.values() for r in _refs(v)]
    if isinstance(value, FStr):
        return [p for p in value.parts if isinstance(p, Ref)]
    return []


def program_slice(statements: list[Stmt]) -> list[Stmt]:
    """The statements `final_answer` depends on (the last assignment of each name before its use)."""
    last_def: dict[str, int] = {}
    deps: list[list[int]] = []
    for i, s in enumerate(statements):
        deps.append([last_def[r.name] for r in _refs(s.value) if r.name in last_def])
        last_def[s.target] = i
    if FINAL not in last_def:
        return []
    keep, todo = set(), [last_def[FINAL]]
    while todo:
        i = todo.pop()
        if i not in keep:
            keep.add(i)
            todo.extend(deps[i])
    return [s for i, s in enumerate(statements) if i in keep]


def _slug(label: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")[:40] or "item"
    return s if not s[0].isdigit() else "p_" + s


def _expand(uri: ArgValue, line: int) -> str | None:
    if uri is None or uri == "":
        return None
    if not isinstance(uri, str):
        raise _LowerError(line, f"uri must be a string such as 'wd:Q42', not {type(uri).__name__}")
    full = expand_uri(uri.strip())
    if full is not None:
        return full
    raise _LowerError(line, f"cannot read the uri {uri[:60]!r}; write wd:Q42 or <http://…>")


def _literal(value: ArgValue, line: int) -> Node:
    if isinstance(value, bool):
        return Literal("true" if value else "false", XSD + "boolean", ac=f"line{line}")
    if isinstance(value, int):
        return Literal(str(value), XSD + "integer", ac=f"line{line}")
    if isinstance(value, float):
        return Literal(repr(value), XSD + "decimal", ac=f"line{line}")
    if isinstance(value, str) and _DATE_RE.match(value):
        text = value if "T" in value else value + "T00:00:00Z"
        return Literal(text, XSD + "dateTime", ac=f"line{line}")
    if isinstance(value, str):
        return Literal(value, ac=f"line{line}")
    raise _LowerError(line, f"cannot compare with {value!r}")


def _c(term: Node | None) -> Node:
    """A copy of a term: each occurrence in the Plan is its own node, so editing one never edits another."""
    assert term is not None
    return Node.from_dict(term.to_dict())


def _dedupe(items: list[Node]) -> list[Node]:
    seen: set[int] = set()
    out = []
    for it in items:
        if id(it) not in seen:
            seen.add(id(it))
            out.append(it)
    return out


class _Lowerer:
    def __init__(self, profile: KBProfile, translate: LeafTranslate | None, repair: LeafRepair | None, rounds: int):
        self.profile, self.translate, self.repair, self.rounds = profile, translate, repair, rounds
        self.env: dict[str, Val] = {}
        self.var_names: set[str] = set()
        self.ph_names: dict[tuple, str] = {}
        self.subquestions: list[LeafRecord] = []
        self.errors: list[ErrorInfo] = []

    def new_var(self, hint: str) -> Var:
        base = hint if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", hint or "") else "v"
        name, k = base, 1
        while name in self.var_names:
            k += 1
            name = f"{base}_{k}"
        self.var_names.add(name)
        return Var(name)

    def placeholder(self, kind: str, label: ArgValue, description: ArgValue, uri: ArgValue, line: int) -> Placeholder:
        if not isinstance(label, str) or not label.strip():
            raise _LowerError(line, f"the {kind} label must be a non-empty string")
        if description is not None and not isinstance(description, str):
            raise _LowerError(line, "the description must be a string")
        full = _expand(uri, line)
        key = (kind, label.strip(), (description or "").strip(), full)
        if key not in self.ph_names:
            base, k, taken = _slug(label), 1, set(self.ph_names.values())
            name = base
            while name in taken:
                k += 1
                name = f"{base}_{k}"
            self.ph_names[key] = name
        return Placeholder(self.ph_names[key], kind, "", key[1], key[2], full, ac=f"line{line}")

    def value(self, v: ArgValue, line: int, target: str) -> Val:
        if isinstance(v, Ref):
            if v.name not in self.env:
                raise _LowerError(line, f"{v.name!r} is used before it is assigned")
            return self.env[v.name]
        if isinstance(v, PCall):
            return getattr(self, "p_" + v.name)(v.args, v.line, target)
        raise _LowerError(line, f"expected a variable or a primitive call, got {v!r}")

    def node_arg(self, args: dict, key: str, line: int, target: str, kinds: tuple[str, ...] = ("node",)) -> Val:
        v = args.get(key)
        if not isinstance(v, Ref | PCall):
            raise _LowerError(line, f"{key} must be a variable (or a primitive call), not {v!r}")
        val = self.value(v, line, "v")
        if val.kind not in kinds:
            raise _LowerError(line, f"{key} is a {val.kind} value here; expected {' or '.join(kinds)}")
        return val

    # ---- primitives -------------------------------------------------------------------------
    def p_entity(self, a: dict, line: int, target: str) -> Val:
        return Val("node", self.placeholder("entity", a.get("label"), a.get("description"), a.get("uri"), line))

    def p_cls(self, a: dict, line: int, target: str) -> Val:
        return Val("class", self.placeholder("class", a.get("label"), a.get("description"), a.get("uri"), line))

    def _prop(self, a: dict, line: int) -> Placeholder:
        return self.placeholder("property", a.get("property"), a.get("description"), a.get("uri"), line)

    def p_hop(self, a: dict, line: int, target: str, reverse: bool = False) -> Val:
        x = self.node_arg(a, "x", line, target)
        v = self.new_var(target)
        t = Triple(Var(v.name), self._prop(a, line), _c(x.term), ac=f"line{line}") if reverse else \
            Triple(_c(x.term), self._prop(a, line), Var(v.name), ac=f"line{line}")
        return Val("node", v, x.items + [t])

    def p_rhop(self, a: dict, line: int, target: str) -> Val:
        return self.p_hop(a, line, target, reverse=True)

    def p_isa(self, a: dict, line: int, target: str) -> Val:
        x = self.node_arg(a, "x", line, target)
        c = self.node_arg(a, "cls", line, target, kinds=("class",))
        t = Triple(_c(x.term), IRI(self.profile.type_predicate), _c(c.term), ac=f"line{line}")
        return Val("node", x.term, x.items + c.items + [t], None)

    def _op(self, a: dict, line: int) -> str:
        op = a.get("op")
        op = "=" if op == "==" else op
        if op not in OPS:
            raise _LowerError(line, f"op must be one of {', '.join(OPS)}, not {op!r}")
        return op

    def p_filter(self, a: dict, line: int, target: str) -> Val:
        x = self.node_arg(a, "x", line, target, kinds=("node", "number"))
        op, value = self._op(a, line), a.get("value")
        items = list(x.items)
        if isinstance(value, Ref | PCall):
            y = self.value(value, line, "v")
            if y.kind not in ("node", "number"):
                raise _LowerError(line, f"cannot compare with a {y.kind} value")
            items += y.items
            right: Node = _c(y.term)
            left: Node = _c(x.term)
        else:
            right = _literal(value, line)
            plain_string = isinstance(value, str) and not _DATE_RE.match(value)
            left = Call("STR", [_c(x.term)]) if plain_string else _c(x.term)  # labels and strings compare as text
        return Val(x.kind, x.term, items + [Filter(BinaryOp(op, left, right), ac=f"line{line}")])

    def p_compare(self, a: dict, line: int, target: str) -> Val:
        x = self.node_arg(a, "x", line, target, kinds=("node", "number"))
        y = self.node_arg(a, "y", line, target, kinds=("node", "number"))
        f = Filter(BinaryOp(self._op(a, line), _c(x.term), _c(y.term)), ac=f"line{line}")
        return Val("bool", None, x.items + y.items + [f])

    def p_count(self, a: dict, line: int, target: str) -> Val:
        x = self.node_arg(a, "x", line, target)
        if not isinstance(x.term, Var):
            raise _LowerError(line, "count() of a single entity is always 1; count a variable from hop/rhop/isa")
        n = self.new_var(target if target != FINAL else "count")
        q = Query("count", [Projection(Aggregate("COUNT", Var(x.term.name), distinct=True), Var(n.name))],
                  where=Group(_dedupe(x.items)), ac=f"line{line}")
        return Val("number", n, [SubQuery(q, ac=f"line{line}")], q)

    def _arg_extreme(self, a: dict, line: int, target: str, descending: bool) -> Val:
        x = self.node_arg(a, "x", line, target)
        if not isinstance(x.term, Var):
            raise _LowerError(line, "argmax/argmin need a variable with several values, not a single entity")
        v = self.new_var("value")
        t = Triple(Var(x.term.name), self._prop(a, line), Var(v.name), ac=f"line{line}")
        q = Query("select", [Var(x.term.name)], where=Group(_dedupe(x.items) + [t]),
                  order_by=[OrderKey(Var(v.name), descending)], limit=1, ac=f"line{line}")
        return Val("node", Var(x.term.name), [SubQuery(q, ac=f"line{line}")], q)

    def p_argmax(self, a: dict, line: int, target: str) -> Val:
        return self._arg_extreme(a, line, target, True)

    def p_argmin(self, a: dict, line: int, target: str) -> Val:
        return self._arg_extreme(a, line, target, False)

    def p_ask_kb(self, a: dict, line: int, target: str) -> Val:
        question = a.get("question")
        if isinstance(question, FStr):
            refs = [p for p in question.parts if isinstance(p, Ref)]
            text = "".join(p if isinstance(p, str) else "{" + p.name + "}" for p in question.parts)
        elif isinstance(question, str):
            refs, text = [], question
        else:
            raise _LowerError(line, "ask_kb() takes a question: a string or an f-string naming earlier variables")
        if self.translate is None:
            raise _LowerError(line, "ask_kb() needs a translator for its sub-question (configure one: --backend)",
                              stage="translate")
        leaf = AtomicQuery(text, f"K{line}")
        t = translate_question(leaf, self.translate, self.repair(text) if self.repair else None, self.rounds)
        self.subquestions.append(LeafRecord(leaf.id, text, t.desq, t.tokens_in, t.tokens_out, t.seconds, t.calls,
                                            t.repairs, list(t.errors)))
        if t.errors or t.query is None:
            self.errors.extend(ErrorInfo(e.stage, f"line {line}: {e.message}", line=line, ac=e.ac) for e in t.errors)
            raise _LowerError(line, f"the sub-question {text!r} could not be lowered", stage=t.errors[0].stage
                              if t.errors else "validate")
        prefix = f"k{line}_"
        q = tag_ac(rename_apart(t.query, prefix), f"line{line}")
        items: list[Node] = []
        exports: set[str] = set()
        for ref in dict.fromkeys(r.name for r in refs):
            val = self.env[ref]
            if val.kind not in ("node", "number") or val.term is None:
                raise _LowerError(line, f"{{{ref}}} is a {val.kind} value; a sub-question can only name things")
            q = substitute(q, lambda n, name=prefix + ref, term=val.term: term  # type: ignore[misc]
                           if isinstance(n, Var) and n.name == name else None)
            items += val.items
            if isinstance(val.term, Var):
                exports.add(val.term.name)
        answer = answer_of(q)
        if q.form == "ask":
            return Val("bool", None, items + list(q.where.items))
        low = Lowered(q, answer, exports)
        return Val("node" if q.form != "count" else "number", Var(answer or "v"), items + pattern_items(low),
                   q if not exports else None)

    # ---- the final query --------------------------------------------------------------------
    def final(self, val: Val, line: int) -> Query:
        if val.query is not None and len(val.items) == 1 and isinstance(val.items[0], SubQuery) and \
                val.items[0].query is val.query:
            return val.query  # count / argmax / a sub-question as the final answer: its own query
        items = _dedupe(val.items)
        if val.kind == "bool":
            return Query("ask", where=Group(items), ac=f"line{line}")
        term = val.term
        if isinstance(term, Var):
            return Query("select", [Var(term.name)], distinct=True, where=Group(items), ac=f"line{line}")
        answer = self.new_var("answer")
        assert term is not None
        return Query("select", [Var(answer.name)], where=Group(items + [Bind(_c(term), Var(answer.name))]),
                     ac=f"line{line}")


def lower_program(text: str, translate_leaf: LeafTranslate | None = None, *,
                  profile: str | KBProfile = "wikidata", repair: LeafRepair | None = None,
                  repair_rounds: int = 2, caps: RequestCaps | None = None) -> PyragResult:
    """Read, check and lower a PyRAG program (see `pyrag.parse_pyrag`). Never raises."""
    try:
        prog = read_program(text, caps)
        result = PyragResult(None, list(prog.errors), prog)
        if prog.errors:
            return result
        prof = get_profile(profile) if not isinstance(profile, KBProfile) else profile
        lowerer = _Lowerer(prof, translate_leaf, repair, repair_rounds)
        part = program_slice(prog.statements)
        result.lowered_lines = [s.line for s in part]
        final_val, final_line = None, 0
        for s in part:
            try:
                val = lowerer.value(s.value, s.line, s.target)
            except _LowerError as e:
                result.errors.extend(lowerer.errors)
                result.errors.append(e.info)
                result.subquestions = lowerer.subquestions
                return result
            lowerer.env[s.target] = val
            if s.target == FINAL:
                final_val, final_line = val, s.line
        result.subquestions = lowerer.subquestions
        if final_val is None:
            result.errors.append(ErrorInfo("validate", f"`{FINAL}` is never assigned"))
            return result
        try:
            result.plan = lowerer.final(final_val, final_line)
        except _LowerError as e:
            result.errors.append(e.info)
        return result
    except Exception as exc:  # "never raises": a bug of ours is reported as stage internal, never as the input's
        return PyragResult(None, [internal_error(exc, "lowering the program")])
