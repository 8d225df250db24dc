"""decompose(gold SPARQL) → DeSQ text + Plan: the inverse of the DeSQ front-end (case bank, training targets).

One AC per written triple pattern / FILTER / block / modifier, canonical `?varN` variables, every
IRI of a pattern a placeholder named from its label, grounding lines from the label memory with
the gold URI. What cannot be decomposed comes back as `error` with the reason, never dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from assembler import plan as ir
from eval.loaders_sparql import mask_opaque, prepare_gold_sparql
from kb_dumps.dict_records import DictRecord
from kb_dumps.label_memory import LabelMemory, LabelRow
from kb_dumps.profiles import PROFILES, RDF, RDFS, KBProfile, get_profile
from kbqa.frontends.decompose_lower import Lowerer, Unsupported, parse_gold
from kbqa.frontends.decompose_text import Verbaliser
from kbqa.frontends.desq import Constraint, GroundingLine, ParseResult, parse_desq
from kbqa.frontends.desq_writer import to_desq_text

_AUTO_LABEL_SERVICE = re.compile(r"(?i)\bSERVICE\s+(?:wikibase:label|<http://wikiba\.se/ontology#label>)\s*\{")
_NAME_MAX = 40


@dataclass
class GroundingEntry(DictRecord):
    """One placeholder: its kind, label and description (from the label memory) and the gold URI."""

    name: str
    kind: str
    label: str
    description: str
    uri: str
    in_label_memory: bool = False


@dataclass
class DecomposeResult:
    """What decompose made of one gold query; `error` set (and no Plan) when it could not."""

    gold_sparql: str | None  # the gold as decomposed: prefixes added, label service handled
    desq_text: str | None = None
    plan: ir.Query | None = None
    grounding: list[GroundingEntry] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    shape: str = "unsupported"
    profile: str = "wikidata"

    @property
    def ok(self) -> bool:
        return self.error is None and self.plan is not None

    @property
    def mapping(self) -> dict[str, str]:
        """{placeholder name: gold IRI}, what `write_sparql` needs to rebuild the gold query."""
        return {g.name: g.uri for g in self.grounding}

    def to_dict(self) -> dict:
        return {"gold_sparql": self.gold_sparql, "desq_text": self.desq_text,
                "plan": self.plan.to_dict() if self.plan else None,
                "grounding": [g.to_dict() for g in self.grounding], "notes": list(self.notes),
                "error": self.error, "shape": self.shape, "profile": self.profile}

    @classmethod
    def from_dict(cls, d: dict) -> DecomposeResult:
        return cls(d.get("gold_sparql"), d.get("desq_text"),
                   ir.Query.from_json_dict(d["plan"]) if d.get("plan") else None,
                   [GroundingEntry.from_dict(g) for g in d.get("grounding") or []], list(d.get("notes") or []),
                   d.get("error"), d.get("shape", "unsupported"), d.get("profile", "wikidata"))


# ---- placeholders ---------------------------------------------------------------------------


class _Placeholders:
    """IRIs seen while lowering → placeholders; names and labels are filled once all IRIs are known."""

    def __init__(self, profile: KBProfile):
        self.profile = profile
        self.entries: dict[tuple[str, str], GroundingEntry] = {}  # (group, uri) → entry
        self.nodes: list[tuple[ir.Placeholder, tuple[str, str]]] = []

    def make(self, iri: str, position: str) -> ir.Node:
        role = ""
        if position == "predicate":
            direct, role = self.profile.canonical_property(iri)
            if role and "/" in direct[len(self.profile.property_namespace or ""):]:
                # psv:/pqv:/wdtn: live under a role namespace but are not roles: keep the IRI whole.
                direct, role = iri, ""
            key, kind, uri = ("property", direct), "property", direct
        else:
            key, kind, uri = ("term", iri), ("class" if position == "class" else "entity"), iri
        entry = self.entries.get(key)
        if entry is None:
            entry = self.entries[key] = GroundingEntry("", kind, "", "", uri)
        elif kind == "class" and entry.kind == "entity":
            entry.kind = "class"
        node = ir.Placeholder("", kind=entry.kind, role=role)
        self.nodes.append((node, key))
        return node

    def finish(self, labels: LabelMemory | None, notes: list[str]) -> list[GroundingEntry]:
        """Look labels up, name every placeholder, and stamp kind/label/description/URI on the nodes."""
        lookup: dict[tuple[str, str], list[str]] = {k: self._ids(e) for k, e in self.entries.items()}
        rows: dict[str, LabelRow] = {}
        if labels is not None:
            rows = labels.get_many({i for ids in lookup.values() for i in ids})
        used: set[str] = set()
        missing: list[str] = []
        for key, entry in self.entries.items():
            row = next((rows[i] for i in lookup[key] if i in rows), None)
            if row is not None:
                entry.in_label_memory = True
                entry.label = row.label or self._fallback_label(entry)
                entry.description = row.description or ""
                if row.kind == "class" and entry.kind == "entity":
                    entry.kind = "class"
            else:
                entry.label = self._fallback_label(entry)
                if labels is not None and self._own_namespace(entry.uri):
                    missing.append(self.profile.compact(entry.uri))
            entry.name = _unique(_slug(entry.label) or _slug(_local(entry.uri)) or "x", used)
        if labels is None and self.entries:
            notes.append("no label memory given: labels are local names of the IRIs "
                         "(pass a store for real labels)")
        elif missing:
            notes.append(f"not in the label memory (label = local id): {', '.join(missing[:10])}"
                         + (f" and {len(missing) - 10} more" if len(missing) > 10 else ""))
        for node, key in self.nodes:
            e = self.entries[key]
            node.name, node.kind, node.label, node.description, node.guessed_uri = (
                e.name, e.kind, e.label, e.description, e.uri)
        return list(self.entries.values())

    def _ids(self, e: GroundingEntry) -> list[str]:
        ids = [e.uri]
        if e.kind == "property":
            ids.insert(0, self.profile.property_entity(e.uri))
        ns = self.profile.entity_namespace
        local = _local(e.uri)
        if ns and e.kind == "property" and not e.uri.startswith(ns) and re.fullmatch(r"[A-Za-z]?\d+", local):
            ids.append(ns + local)  # psv:P569 → wd:P569
        return list(dict.fromkeys(ids))

    def _fallback_label(self, e: GroundingEntry) -> str:
        local = _local(e.uri)
        if e.kind != "entity" and "." in local and not re.fullmatch(r"[mg]\.\w+", local):
            local = local.rsplit(".", 1)[-1]  # dotted schema names: the last segment reads best
            return local.replace("_", " ")
        opaque = re.fullmatch(r"[A-Za-z]?\d+", local) is not None  # Q42, P31: no words to read
        if self.profile.labels_from_local_names or (e.kind == "property" and not opaque):
            return self.profile.local_name_label(e.uri) or local
        return local

    def _own_namespace(self, uri: str) -> bool:
        spaces = [self.profile.entity_namespace, self.profile.property_namespace,
                  *self.profile.role_namespaces.values()]
        return any(ns and uri.startswith(ns) for ns in spaces) or not spaces[0]


def _local(uri: str) -> str:
    return re.split(r"[#/]", uri.rstrip("/#"))[-1] or uri


def _slug(text: str) -> str:
    import unicodedata

    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "_", ascii_text.lower()).strip("_")[:_NAME_MAX].rstrip("_")
    return ("x_" + slug) if slug[:1].isdigit() else slug


def _unique(name: str, used: set[str]) -> str:
    out, n = name, 2
    while out in used:
        out, n = f"{name}_{n}", n + 1
    used.add(out)
    return out


# ---- the label service ---------------------------------------------------------------------


def strip_auto_label_service(sparql: str) -> tuple[str, list[str]]:
    """Remove `SERVICE wikibase:label { bd:serviceParam … }` (automatic mode) and the `?xLabel`
    variables it bound from the SELECT clause: answers get labels from the assembler anyway.
    Manual mode (the block states label triples: the label is the question) is left in place."""
    masked = mask_opaque(sparql)
    m = _AUTO_LABEL_SERVICE.search(masked)
    if not m:
        return sparql, []
    depth, close = 0, -1
    for i in range(m.end() - 1, len(masked)):
        depth += {"{": 1, "}": -1}.get(masked[i], 0)
        if depth == 0:
            close = i
            break
    inner = masked[m.end():close] if close > 0 else ""
    statements = [s for s in re.split(r"\s\.\s|\.\s*$|\.(?=\s*$)", inner.strip()) if s.strip()]
    if close < 0 or not all(re.match(r"\s*(bd:serviceParam|<http://www\.bigdata\.com/rdf#serviceParam>)", s)
                            for s in statements):
        return sparql, []
    rest = sparql[:m.start()] + sparql[close + 1:]
    dropped = []
    for var, base in re.findall(r"[?$]((\w+?)(?:Label|Description|AltLabel))\b", mask_opaque(rest)):
        if var not in dropped and re.search(rf"[?$]{re.escape(base)}\b", mask_opaque(rest)):
            dropped.append(var)
    head = re.search(r"(?is)\bSELECT\b(.*?)(\bWHERE\b|\{)", mask_opaque(rest))
    if head and dropped:
        clause = rest[head.start(1):head.end(1)]
        for var in dropped:
            clause = re.sub(rf"\s[?$]{re.escape(var)}\b", " ", clause)
        rest = rest[:head.start(1)] + clause + rest[head.end(1):]
    note = "SERVICE wikibase:label removed: answers get labels" + (
        f" (dropped {', '.join('?' + v for v in dropped)} from the projection)" if dropped else "")
    return rest, [note]


# ---- decompose ------------------------------------------------------------------------------


def decompose(gold_sparql: str, profile: str | KBProfile = "wikidata",
              labels: LabelMemory | None = None) -> DecomposeResult:
    """Gold SPARQL → DecomposeResult (DeSQ text, Plan, grounding, notes, shape). Never raises on bad input."""
    prof = get_profile(profile)
    # A profile configured from JSON is a generic one to the prefix tables and the metrics.
    result = DecomposeResult(None, profile=prof.name if prof.name in PROFILES else "generic")
    if not isinstance(gold_sparql, str) or not gold_sparql.strip():
        result.error = "empty gold query"
        return result
    text, notes = strip_auto_label_service(gold_sparql)
    prepared = prepare_gold_sparql(text, kb=result.profile, check_syntax=False)
    result.gold_sparql = prepared.sparql
    result.notes = notes + list(prepared.notes)
    if prepared.reason:
        result.error = prepared.reason
        return result
    try:
        tree = parse_gold(prepared.sparql or "")
    except Exception as exc:  # pyparsing and rdflib raise many types; all mean "does not parse"
        result.error = f"gold SPARQL does not parse: {' '.join(str(exc).split())[:300]}"
        result.shape = "unparsed"
        return result
    table = _Placeholders(prof)
    type_iris = (prof.type_predicate, RDF + "type", prof.subclass_predicate, RDFS + "subClassOf")
    try:
        plan = Lowerer(table.make, type_iris).query(tree)
    except Unsupported as exc:
        result.error = str(exc)
        return result
    except (RecursionError, ValueError, TypeError, KeyError) as exc:
        result.error = f"cannot decompose: {type(exc).__name__}: {str(exc)[:200]}"
        return result
    result.grounding = table.finish(labels, result.notes)
    _rename_vars(plan)
    constraints = _assign_acs(plan, _verbaliser(plan, prof, result.grounding))
    result.shape = shape_of(plan)
    lines = [GroundingLine(g.name, g.kind, g.label, g.description, g.uri) for g in result.grounding]
    try:
        result.desq_text = to_desq_text(ParseResult(plan, [], constraints, lines))
    except ValueError as exc:
        result.error = f"the Plan cannot be written as DeSQ: {exc}"
        return result
    parsed = parse_desq(result.desq_text)
    if not parsed.ok:
        # The DeSQ reader's meaning checks also catch gold queries that are not valid SPARQL 1.1
        # (rdflib accepts `(COUNT(*) AS ?x)` with ?x bound in the pattern): report, never hand out.
        result.error = "the DeSQ reader refuses the decomposition: " + "; ".join(
            e.message for e in parsed.errors[:3])
        return result
    result.plan = parsed.plan
    return result


def _verbaliser(plan: ir.Query, prof: KBProfile, grounding: list[GroundingEntry]) -> Verbaliser:
    by_uri = {g.uri: g.name for g in grounding if g.kind == "property"}
    types = {by_uri[u] for u in (prof.type_predicate, RDF + "type") if u in by_uri}
    subs = {by_uri[u] for u in (prof.subclass_predicate, RDFS + "subClassOf") if u in by_uri}
    return Verbaliser(types, subs)


def _rename_vars(plan: ir.Query) -> None:
    """Variables → ?var1, ?var2, … in order of first appearance (projection first)."""
    names: dict[str, str] = {}
    for node in ir.walk(plan):
        if isinstance(node, ir.Var):
            node.name = names.setdefault(node.name, f"var{len(names) + 1}")


def _stamp(node: ir.Node, ac: str) -> None:
    for n in ir.walk(node):
        n.ac = ac


def _assign_acs(plan: ir.Query, say: Verbaliser) -> list[Constraint]:
    """AC1 is the query form; then one AC per top-level pattern item; then one for the modifiers."""
    for part in (plan.projection, plan.group_by, plan.having):
        for n in part:
            _stamp(n, "AC1")
    plan.ac = plan.where.ac = "AC1"
    head = say.head(plan)
    constraints = [Constraint("AC1", head)]
    for i, item in enumerate(plan.where.items, start=2):
        _stamp(item, f"AC{i}")
        constraints.append(Constraint(f"AC{i}", say.item(item)))
    mods = say.modifiers(plan)
    if plan.order_by:
        ac = f"AC{len(constraints) + 1}"
        for key in plan.order_by:
            _stamp(key, ac)
        constraints.append(Constraint(ac, "the results are " + mods))
    elif mods:
        constraints[0].text = f"{head}, {mods}"
    return constraints


# ---- shapes ---------------------------------------------------------------------------------


def shape_of(plan: ir.Query) -> str:
    """A short name for the coverage table; the first that applies wins."""
    inner = plan.where.items
    if plan.form == "select" and len(inner) == 1 and isinstance(inner[0], ir.SubQuery):
        return shape_of(inner[0].query)  # GrailQA wraps every query in `SELECT (?x AS ?value) { SELECT … }`
    nodes = list(ir.walk(plan.where)) + list(ir.walk(plan.projection))
    kinds = {type(n) for n in nodes}
    roles = {n.role for n in nodes if isinstance(n, ir.Placeholder)}
    if plan.form == "ask":
        return "ask"
    if plan.form == "count":
        return "count"
    if roles & {"p", "ps", "pq"}:
        return "qualifier"
    checks = [(ir.Union, "union"), (ir.Minus, "minus"), (ir.Optional, "optional"), (ir.SubQuery, "subquery")]
    for cls, name in checks:
        if cls in kinds:
            return name
    if any(isinstance(n, ir.Exists) and n.negated for n in nodes):
        return "minus"
    if kinds & {ir.PathSeq, ir.PathAlt, ir.PathInv, ir.PathMod}:
        return "path"
    if plan.order_by or plan.limit is not None:
        return "order-limit"
    if ir.Aggregate in kinds or plan.group_by:
        return "aggregate"
    if ir.Filter in kinds:
        return "filter"
    if ir.Values in kinds:
        return "values"
    n = sum(1 for x in nodes if isinstance(x, ir.Triple))
    return "1-hop" if n <= 1 else "2-hop" if n == 2 else "multi-hop"
