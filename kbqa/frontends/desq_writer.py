"""Plan (or ParseResult) → DeSQ text / JSON: the inverse of `parse_desq`, used by decompose.

Reuses the SPARQL writer's table and overrides one entry: a placeholder is written as
`role:[name]` instead of being resolved to an IRI.
"""

from __future__ import annotations

import re

from assembler.plan import Node, Placeholder, Query, placeholders
from assembler.writer import SparqlWriter
from kb_dumps.profiles import KBProfile
from kbqa.frontends.desq_fragments import KNOWN_PREFIXES
from kbqa.frontends.desq_types import FORMAT, Constraint, GroundingLine, ParseResult


class _DesqNames(KBProfile):
    """Compacts IRIs with every prefix the DeSQ parser knows (no PREFIX lines in DeSQ)."""

    name = "desq"
    prefixes = KNOWN_PREFIXES


class DesqFragmentWriter(SparqlWriter):
    """Writes Plan nodes as DeSQ fragment text: variables keep their names, placeholders stay."""

    TRANSFORMS = dict(SparqlWriter.TRANSFORMS)
    RENAME_VARS = False


def _placeholder(w: SparqlWriter, n: Placeholder) -> str:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n.name) or not re.fullmatch(r"[A-Za-z]*", n.role or ""):
        w.fail(n, f"placeholder name {n.name[:40]!r} or role {n.role[:10]!r} cannot be written in DeSQ")
    return (f"{n.role}:" if n.role else "") + f"[{n.name}]"


DesqFragmentWriter.TRANSFORMS[Placeholder] = _placeholder


def _sections(source: Query | ParseResult) -> tuple[list[Constraint], list[GroundingLine]]:
    if isinstance(source, ParseResult):
        if source.plan is None:
            return list(source.constraints), list(source.grounding)
        query, texts = source.plan, {c.id: c.text for c in source.constraints}
        given = list(source.grounding)
    else:
        query, texts, given = source, {}, []
    w = DesqFragmentWriter(_DesqNames())
    fragments: dict[str, list[str]] = {}
    head_ac = query.ac or "AC1"
    fragments[head_ac] = [w.head(query)]
    for item in query.where.items:
        fragments.setdefault(item.ac or head_ac, []).append(w.write(item))
    mods = w.modifiers(query)
    if mods:
        mod_ac = (query.order_by[0].ac if query.order_by else None) or head_ac
        fragments.setdefault(mod_ac, []).extend(mods)
    if w.errors:
        raise ValueError("; ".join(e.message for e in w.errors))
    constraints = []
    for ac, parts in fragments.items():
        fragment = "\n".join(parts)
        text = texts.get(ac) or _describe(fragment, query)
        constraints.append(Constraint(ac, " ".join(text.split()), fragment))
    if not given:
        seen: dict[str, Placeholder] = {}
        for ph in placeholders(query):
            seen.setdefault(ph.name, ph)
        given = [GroundingLine(p.name, p.kind, p.label or p.name, p.description, p.guessed_uri) for p in seen.values()]
    return constraints, given


def _describe(fragment: str, query: Node) -> str:
    """A readable sentence for an AC that has none: the fragment with labels for placeholders."""
    labels = {p.name: p.label or p.name for p in placeholders(query)}
    return re.sub(r"(?:[A-Za-z]+:)?\[([A-Za-z_][A-Za-z0-9_]*)\]", lambda m: labels.get(m.group(1), m.group(1)),
                  fragment)


def _cell(value: str) -> str:
    return " ".join(value.split()).replace("|", "\\|")


def to_desq_text(source: Query | ParseResult) -> str:
    """DeSQ text (with the `FORMAT desq/1` line) that `parse_desq` reads back into the same Plan.

    Raises ValueError when the Plan holds something DeSQ cannot express (a bad name or IRI)."""
    constraints, grounding = _sections(source)
    names = _DesqNames()
    out = [f"FORMAT {FORMAT}", "ATOMIC CONSTRAINTS"]
    out += [f"{c.id}: {c.text}" for c in constraints]
    out.append("FRAGMENTS")
    out += [f"{c.id} => {c.fragment}" for c in constraints]
    out.append("GROUNDING")
    for g in grounding:
        cells = [_cell(g.label), _cell(g.description)]
        if g.uri:
            cells.append(names.compact(g.uri))
        out.append(f"[{g.name}] {g.kind} | " + " | ".join(cells))
    return "\n".join(out) + "\n"


def to_desq_json(source: Query | ParseResult) -> dict:
    """The JSON form: `{"format": "desq/1", "constraints": [...], "grounding": [...]}`."""
    constraints, grounding = _sections(source)
    return {"format": FORMAT, "constraints": [c.to_dict() for c in constraints],
            "grounding": [g.to_dict() for g in grounding]}
