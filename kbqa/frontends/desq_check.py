"""Meaning checks on a parsed DeSQ Plan: grounding coverage, placeholder kinds, projected variables."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from assembler.plan import ROLES as PLAN_ROLES
from assembler.plan import (
    Node,
    Placeholder,
    Projection,
    Query,
    Triple,
    Var,
    pattern_vars,
    placeholders,
    walk,
)

if TYPE_CHECKING:
    from kbqa.frontends.desq_types import Constraint, GroundingLine

Report = Callable[..., None]  # report(stage, message, line=..., ac=...)


def validate(plan: Query, constraints: list[Constraint], grounding: list[GroundingLine], report: Report) -> None:
    """Report every meaning problem of `plan` through `report` (stage "validate")."""
    _check_constraints(constraints, report)
    _check_grounding(plan, grounding, report)
    _check_positions(plan, {g.name for g in grounding}, report)
    for node in walk(plan):
        if isinstance(node, Query):
            _check_projection(node, report)


def _check_constraints(constraints: list[Constraint], report: Report) -> None:
    for c in constraints:
        if not c.text.strip():
            report("validate", f"{c.id} has a fragment but no sentence; add '{c.id}: …' under ATOMIC CONSTRAINTS",
                   line=c.line, ac=c.id)


def _check_grounding(plan: Query, grounding: list[GroundingLine], report: Report) -> None:
    defined: dict[str, GroundingLine] = {}
    for g in grounding:
        if g.name in defined:
            report("validate", f"[{g.name}] has two grounding lines; keep one", line=g.line)
        defined[g.name] = g
    used: dict[str, Placeholder] = {}
    for ph in placeholders(plan):
        used.setdefault(ph.name, ph)
    for name, ph in used.items():
        if name not in defined:
            report("validate", f"[{name}] is used but has no grounding line; add "
                   f"'[{name}] kind | label | description' under GROUNDING", ac=ph.ac)
    for name, g in defined.items():
        if name not in used:
            report("validate", f"[{name}] has a grounding line but no fragment uses it; use it or remove it",
                   line=g.line)


def _check_positions(plan: Query, grounded: set[str], report: Report) -> None:
    """Property placeholders only as predicates, entities and classes never as predicates."""
    in_predicate: set[int] = set()
    for node in walk(plan):
        if isinstance(node, Triple):
            for sub in walk(node.p):
                if isinstance(sub, Placeholder):
                    in_predicate.add(id(sub))
    for ph in placeholders(plan):
        where = f"[{ph.name}]"
        if ph.role not in PLAN_ROLES:
            report("validate", f"{where}: unknown statement role {ph.role}:; use p:, ps: or pq:", ac=ph.ac)
        elif ph.role and ph.kind != "property":
            report("validate", f"{where} is {_a(ph.kind)} but carries the role {ph.role}:; only properties have roles",
                   ac=ph.ac)
        if ph.name not in grounded:
            continue  # its kind is unknown; the missing grounding line is reported already
        if id(ph) in in_predicate and ph.kind != "property":
            report("validate", f"{where} is {_a(ph.kind)} in predicate position; use a property placeholder there",
                   ac=ph.ac)
        if id(ph) not in in_predicate and ph.kind == "property":
            report("validate", f"{where} is a property outside predicate position; properties go between "
                   "subject and object", ac=ph.ac)


def _a(kind: str) -> str:
    return ("an " if kind[:1] in "aeiou" else "a ") + kind


def _vars_in(node: Node) -> set[str]:
    return {n.name for n in walk(node) if isinstance(n, Var)}


def _check_projection(q: Query, report: Report) -> None:
    bound = pattern_vars(q.where)
    aliases: set[str] = set()
    for p in q.projection:
        if isinstance(p, Var):
            if p.name not in bound:
                report("validate", f"?{p.name} is projected but occurs in no pattern", ac=p.ac or q.ac)
        elif isinstance(p, Projection):
            for name in sorted(_vars_in(p.expr) - bound):
                report("validate", f"?{name} is used in ({_short(p)}) but occurs in no pattern", ac=p.ac or q.ac)
            if p.var.name in bound:
                report("validate", f"?{p.var.name} is both a pattern variable and the name of an "
                       f"expression (… AS ?{p.var.name}); choose a new name", ac=p.ac or q.ac)
            aliases.add(p.var.name)
    for key in q.order_by:
        for name in sorted(_vars_in(key) - bound - aliases):
            report("validate", f"ORDER BY uses ?{name}, which occurs in no pattern", ac=key.ac or q.ac)


def _short(node: Node) -> str:
    return type(node).__name__ if not isinstance(node, Projection) else f"… AS ?{node.var.name}"

