"""QCompiler front-end: an expression of atomic questions → one Plan (each leaf through DeSQ). Never raises.

    result = parse_qcompiler("Who directed Titanic? * Where was {director} born?", leaf_translator(translator))
    result.plan, result.errors, result.leaves

Leaves and `{x}`: each *distinct* leaf text is sent to the translator once (concurrently, in a thread
pool), **verbatim, `{x}` included** — the translator is told (prompt) to write the mention as the entity
placeholder `[x]` (grounding label `{x}`), or as the variable `?x`. Lowering then replaces that
placeholder (every grounding line named `x` or labelled `{x}`) by the variable `?x`, and `?x` by the
answer variable of the left side of the `*`: the join. A leaf whose DeSQ has neither is a validate
error naming the leaf, sent back to the model by the repair loop.

`A * B`: B's query with A's pattern in front of its WHERE — A's own items when A is a plain pattern, a
sub-SELECT projecting A's answer when A has an aggregate, ORDER BY, LIMIT or OFFSET; B's query form and
modifiers stay. `A + B + …`: `{ SELECT ?answer … A } UNION { SELECT ?answer … B }`, each branch binding
`?part` to its leaf id(s) ("L1", "L2*L3"), projected as `?answer ?part`: an empty side never empties the
other. Variables and placeholders of each leaf are prefixed with its id (`l2_`), so sides never clash.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from assembler.plan import Bind, Group, Literal, Node, Placeholder, Query, Union, Var, substitute, walk
from kb_dumps.stage_errors import ErrorInfo, KBQAError, Stage, internal_error
from kbqa.frontends.desq import GroundingLine, Rewrite, parse_desq
from kbqa.frontends.frontend_result import FrontendResult
from kbqa.frontends.qcompiler_parse import (
    AtomicQuery,
    DependentQuery,
    ListQuery,
    QNode,
    leaves,
    parse_expression,
    render,
)
from kbqa.frontends.qcompiler_plan import (
    Lowered,
    answer_of,
    as_subquery,
    pattern_items,
    rename_apart,
    rename_var,
    tag_ac,
)
from kbqa.repair import DEFAULT_ROUNDS, Retranslate, repair_loop
from kbqa.settings import RequestCaps

if TYPE_CHECKING:
    from kbqa.pipeline import Engine
    from kbqa.translators.base import TranslationResult, Translator

LeafTranslate = Callable[[str], "TranslationResult | str"]  # leaf question -> DeSQ text, or a TranslationResult
LeafRepair = Callable[[str], Retranslate | None]  # leaf question -> its repair call (None: cannot repair)

__all__ = ["AtomicQuery", "DependentQuery", "LeafRecord", "LeafTranslation", "ListQuery", "QCompilerResult",
           "bind_join", "leaf_repairer", "leaf_translator", "parse_qcompiler", "translate_question"]


@dataclass
class LeafRecord:
    """One leaf occurrence: its DeSQ, what translating it cost, the repair rounds, its problems."""

    id: str
    text: str
    desq: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    calls: int = 0  # model calls for this leaf (0 when an earlier occurrence of the same text was reused)
    repairs: list[dict] = field(default_factory=list)
    errors: list[ErrorInfo] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"id": self.id, "text": self.text, "fragment": self.desq, "tokens_in": self.tokens_in,
                "tokens_out": self.tokens_out, "seconds": round(self.seconds, 6), "calls": self.calls,
                "repairs": self.repairs, "errors": [e.to_dict() for e in self.errors]}


@dataclass
class QCompilerResult(FrontendResult):
    """The Plan (None when any problem was found), every problem, the AST and the leaves."""

    ast: QNode | None = None
    leaves: list[LeafRecord] = field(default_factory=list)

    @property
    def constraints(self) -> list[LeafRecord]:
        """The leaves, under the name the Engine reads for its report (`id`, `text`, `fragment`)."""
        return self.leaves

    @property
    def calls(self) -> int:
        return sum(leaf.calls for leaf in self.leaves)

    def to_dict(self) -> dict:
        return {**self._result_dict("qcompiler"), "ast": self.ast.to_dict() if self.ast else None,
                "expression": render(self.ast) if self.ast else None, "leaves": [x.to_dict() for x in self.leaves],
                "calls": self.calls}


def leaf_translator(translator: Translator, qid: str | None = None) -> LeafTranslate:
    """A Translator (kbqa.translators) as a leaf translator: leaf question → DeSQ. A replay translator finds
    leaves by their question text, so `qid` is passed only when given."""

    def translate(question: str) -> TranslationResult:
        return translator.translate(question, "desq", qid=qid) if qid else translator.translate(question, "desq")

    return translate


def leaf_repairer(translator: Translator) -> LeafRepair:
    """The repair call of a translator for each leaf (None per leaf when the translator cannot repair)."""
    from kbqa.repair import retranslator

    return lambda question: retranslator(translator, question, "desq")


# ---- {x} -> ?x in a leaf's DeSQ ---------------------------------------------------------------

def _stands_for(ph: Placeholder, x: str) -> bool:
    """A placeholder is the mention `{x}` when labelled `{x}`, or named `x` and not a property (a role-less
    one: `ps:[x]` is a statement property)."""
    label = ph.label.strip().strip("'\"")
    return label.lower() == "{" + x.lower() + "}" or (ph.name.lower() == x.lower() and ph.kind != "property"
                                                       and not ph.role)


def bind_join(*names: str) -> Rewrite:
    """The rewrite (for `parse_desq`) that makes each placeholder standing for `{x}` (x in `names`) the
    variable `?x`, and drops its grounding line: the leaf then joins on `?x`."""

    def rewrite(plan: Query, grounding: list[GroundingLine]) -> tuple[Query, list[GroundingLine]]:
        bound = {g.name: x for g in grounding for x in names  # a line no fragment uses is dropped too
                 if _stands_for(Placeholder(g.name, g.kind, label=g.label), x)}
        bound |= {ph.name: x for ph in plan.find_all(Placeholder) for x in names if _stands_for(ph, x)}

        def swap(n: Node) -> Node | None:
            return Var(bound[n.name], ac=n.ac) if isinstance(n, Placeholder) and n.name in bound else None

        return substitute(plan, swap), [g for g in grounding if g.name not in bound]

    return rewrite


# ---- translating the leaves -----------------------------------------------------------------


@dataclass
class LeafTranslation:
    """A distinct leaf text: its DeSQ, its parsed query (joins bound to `?x`), cost, problems."""

    desq: str = ""
    query: Query | None = None
    errors: list[ErrorInfo] = field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    calls: int = 0
    repairs: list[dict] = field(default_factory=list)


def _check_leaf(leaf: AtomicQuery, desq: str) -> tuple[Query | None, str | None, list[ErrorInfo]]:
    names = leaf.placeholders
    parsed = parse_desq(desq, rewrite=bind_join(*names))
    errors = [ErrorInfo(e.stage, f"leaf {leaf.id} {leaf.text!r}: its DeSQ: {e.message}", line=e.line,
                        column=e.column, ac=f"{leaf.id}.{e.ac}" if e.ac else leaf.id) for e in parsed.errors]
    q = parsed.plan
    used = {v.name for v in walk(q.where) if isinstance(v, Var)} if q is not None else set()
    for name in names if q is not None else []:
        if name not in used:
            errors.append(ErrorInfo("validate", f"leaf {leaf.id} {leaf.text!r}: its DeSQ has nothing for "
                                    f"{{{name}}}: write the mention as the entity placeholder [{name}] "
                                    f"(label {{{name}}}) or as the variable ?{name}", ac=leaf.id))
    if q is not None and not errors and q.form != "ask" and answer_of(q) is None:
        errors.append(ErrorInfo("validate", f"leaf {leaf.id} {leaf.text!r}: its DeSQ projects no answer "
                                "variable (SELECT *); project the answer first", ac=leaf.id))
    stage = errors[0].stage if errors else None
    return (None if errors else q), stage, errors


def translate_question(leaf: AtomicQuery, translate: LeafTranslate, repair: LeafRepair | None, rounds: int) -> LeafTranslation:
    out = LeafTranslation()
    try:
        first = translate(leaf.text)
    except KBQAError as e:
        out.errors = [ErrorInfo("translate", f"leaf {leaf.id} {leaf.text!r}: {m.message}", qid=m.qid, ac=leaf.id)
                      for m in e.errors]
        out.calls = 1
        return out
    except Exception as e:  # a translator bug is ours (stage internal) and must not take the whole expression down
        out.errors = [internal_error(e, f"translating leaf {leaf.id} {leaf.text!r}", ac=leaf.id)]
        out.calls = 1
        return out
    outcome = repair_loop(first, lambda desq: _check_leaf(leaf, desq),
                          repair(leaf.text) if repair is not None else None, rounds=rounds)
    last = outcome.rounds[-1]
    out.desq, out.query, out.errors = last.text, outcome.value, list(last.errors)
    out.tokens_in = sum(r.tokens_in for r in outcome.rounds)
    out.tokens_out = sum(r.tokens_out for r in outcome.rounds)
    out.seconds = float(getattr(first, "seconds", 0.0)) + sum(r.seconds for r in outcome.rounds)
    out.calls = len(outcome.rounds)
    out.repairs = [r.to_dict() for r in outcome.rounds] if outcome.repairs else []
    return out


def _translate_all(ast: QNode, translate: LeafTranslate, repair: LeafRepair | None, rounds: int,
                   max_workers: int) -> dict[str, LeafTranslation]:
    """One translation (plus repairs) per distinct leaf text; all leaves at once, since a dependent leaf is
    sent with its `{x}` verbatim and so needs nothing from its left side."""
    firsts: dict[str, AtomicQuery] = {}
    for leaf in leaves(ast):
        firsts.setdefault(leaf.text, leaf)
    todo = list(firsts.values())
    if max_workers <= 1 or len(todo) == 1:
        done = [translate_question(leaf, translate, repair, rounds) for leaf in todo]
    else:
        with ThreadPoolExecutor(max_workers=min(max_workers, len(todo))) as pool:
            done = list(pool.map(lambda leaf: translate_question(leaf, translate, repair, rounds), todo))
    return {leaf.text: d for leaf, d in zip(todo, done, strict=True)}


# ---- lowering -------------------------------------------------------------------------------


class _LowerError(Exception):
    def __init__(self, info: ErrorInfo):
        super().__init__(info.message)
        self.info = info


def _part_id(node: QNode) -> str:
    if isinstance(node, AtomicQuery):
        return node.id
    if isinstance(node, DependentQuery):
        return f"{_part_id(node.left)}*{_part_id(node.right)}"
    return "+".join(_part_id(p) for p in node.parts)


class _Lowerer:
    def __init__(self, translated: dict[str, LeafTranslation]):
        self.translated = translated
        self.unions = 0

    def lower(self, node: QNode, join: str | None = None) -> Lowered:
        """`join`: the variable the free `{x}` of this node stands for (the left side's answer)."""
        if isinstance(node, AtomicQuery):
            return self.leaf(node, join)
        if isinstance(node, DependentQuery):
            return self.dep(node, join)
        return self.union(node, join)

    def leaf(self, leaf: AtomicQuery, join: str | None) -> Lowered:
        base = self.translated[leaf.text].query
        assert base is not None  # leaves with errors stop before lowering
        prefix = leaf.id.lower() + "_"
        q = tag_ac(rename_apart(base, prefix), leaf.id)
        exports: set[str] = set()
        names = leaf.placeholders
        if names and join is not None:
            rename_var(q, prefix + names[0], join)
            exports.add(join)
        return Lowered(q, answer_of(q), exports)

    def dep(self, node: DependentQuery, join: str | None) -> Lowered:
        left = self.lower(node.left, join)
        if left.answer is None:
            raise _LowerError(ErrorInfo("validate", f"{_part_id(node.left)} is a yes/no question (ASK): it has no "
                                        "answer for the right side of '*' to use", ac=_part_id(node.left)))
        right = self.lower(node.right, left.answer)
        q = right.query.copy()
        q.where = Group(pattern_items(left) + list(q.where.items), ac=q.where.ac)
        return Lowered(q, right.answer, left.exports | (right.exports - {left.answer}))

    def union(self, node: ListQuery, join: str | None) -> Lowered:
        self.unions += 1
        k = self.unions
        answer, part = ("answer", "part") if k == 1 else (f"answer{k}", f"part{k}")
        branches, exports = [], set()
        for p in node.parts:
            low = self.lower(p, join)
            pid = _part_id(p)
            if low.answer is None:
                raise _LowerError(ErrorInfo("validate", f"{pid} is a yes/no question (ASK): it cannot be one part "
                                            "of '+'; ask for the things themselves", ac=pid))
            rename_var(low.query, low.answer, answer)
            low.answer = answer
            exports |= low.exports
            branches.append(Group([as_subquery(low), Bind(Literal(pid), Var(part), ac=pid)], ac=pid))
        q = Query("select", [Var(answer), Var(part)], where=Group([Union(branches, ac=_part_id(node))]))
        return Lowered(q, answer, exports)


def parse_qcompiler(text: str, translate_leaf: LeafTranslate | None = None, *, repair: LeafRepair | None = None,
                    repair_rounds: int = DEFAULT_ROUNDS, max_workers: int = 4,
                    caps: RequestCaps | None = None) -> QCompilerResult:
    """Parse and validate an expression; with `translate_leaf`, translate each distinct leaf to DeSQ (repairing
    it through `repair` at most `repair_rounds` times) and lower the whole to one Plan. An expression with more
    leaves than `caps.max_leaves` is refused (stage validate) before any leaf is translated. Never raises."""
    caps = caps or RequestCaps()
    parsed = parse_expression(text)
    result = QCompilerResult(None, list(parsed.errors), parsed.ast)
    if parsed.ast is None:
        return result
    if (n := len(leaves(parsed.ast))) > caps.max_leaves:
        result.errors.append(ErrorInfo(Stage.VALIDATE, caps.refusal("leaves in the expression", n, caps.max_leaves,
                                                                     "max_leaves")))
        return result
    try:
        if translate_leaf is None:
            result.errors.append(ErrorInfo("translate", "no translator for the leaves: each leaf is a question that "
                                           "a translator turns into DeSQ (configure one: --backend)"))
            return result
        translated = _translate_all(parsed.ast, translate_leaf, repair, repair_rounds, max_workers)
        seen: set[str] = set()
        for leaf in leaves(parsed.ast):
            t = translated[leaf.text]
            first = leaf.text not in seen
            seen.add(leaf.text)
            result.leaves.append(LeafRecord(leaf.id, leaf.text, t.desq, t.tokens_in if first else 0,
                                            t.tokens_out if first else 0, t.seconds if first else 0.0,
                                            t.calls if first else 0, t.repairs if first else [],
                                            list(t.errors) if first else []))
            if first:
                result.errors.extend(t.errors)
        if result.errors:
            return result
        lowered = _Lowerer(translated).lower(parsed.ast)
        result.plan = lowered.query
    except _LowerError as e:
        result.errors.append(e.info)
    except Exception as exc:  # "never raises": a bug of ours is reported as stage internal, never as the input's
        result.errors.append(internal_error(exc, "lowering the expression"))
    return result


def frontend(engine: Engine) -> Callable[[str], QCompilerResult]:
    """The `qcompiler` entry of `kbqa.frontends.FRONTENDS`: leaves are translated by the engine's translator."""
    tr, rounds = engine.leaf_translator(), engine.repair_rounds
    leaf = leaf_translator(tr) if tr is not None else None
    repair = leaf_repairer(tr) if tr is not None else None
    return lambda text: parse_qcompiler(text, leaf, repair=repair, repair_rounds=rounds, caps=engine.caps)
