"""Query-level metrics without a store: parse both queries (rdflib), normalise, compare structure and IRIs."""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import TypeAlias

import numpy as np
from rdflib import BNode, Literal, URIRef, Variable
from rdflib.paths import Path as RdfPath
from rdflib.plugins.sparql.algebra import translateQuery
from rdflib.plugins.sparql.parser import parseQuery
from rdflib.plugins.sparql.parserutils import CompValue
from rdflib.term import Identifier
from scipy.optimize import linear_sum_assignment

from eval.loaders_sparql import UnusableQuery, add_missing_prefixes, rewrite_label_service, standard_prefixes
from kb_dumps.json_types import JsonObject
from kb_dumps.profiles import WIKIDATA_PREFIXES, KBProfile, get_profile
from kb_dumps.stage_errors import ErrorInfo

# Algebra nodes whose children may be reordered without changing the query's meaning.
_COMMUTATIVE = {"Join", "Union"}
_WD_ENTITY = WIKIDATA_PREFIXES["wd"]
# A term of rdflib's algebra (URIRef, Literal, Variable, BNode) or a property path in a triple's middle.
RdfTerm: TypeAlias = Identifier | RdfPath
# A node of rdflib's SPARQL algebra: a CompValue, a term, a container of nodes, or a plain value (an operator's
# text, a number, a flag).
AlgebraNode: TypeAlias = ("CompValue | RdfTerm | str | int | float | bool | None | list[AlgebraNode] "
                          "| tuple[AlgebraNode, ...] | set[AlgebraNode] | frozenset[AlgebraNode] "
                          "| dict[AlgebraNode, AlgebraNode]")
# What a variable's colour is hashed from: its contexts, or (position, neighbours' colours) per triple.
_Signature: TypeAlias = list[str] | list[str | tuple[int, tuple[str, ...]]]


@dataclass
class PRF:
    """Precision, recall, F1 of one comparison (both sides empty counts as perfect agreement)."""

    precision: float = 0.0
    recall: float = 0.0
    f1: float = 0.0

    @classmethod
    def from_counts(cls, hits: float, n_pred: int, n_gold: int) -> PRF:
        if n_pred == 0 and n_gold == 0:
            return cls(1.0, 1.0, 1.0)
        p = hits / n_pred if n_pred else 0.0
        r = hits / n_gold if n_gold else 0.0
        return cls(p, r, 2 * p * r / (p + r) if p + r else 0.0)

    def to_dict(self) -> dict[str, float]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, float]) -> PRF:
        return cls(**d)


@dataclass(frozen=True)
class NormalisedQuery:
    """A query after prefix expansion, canonical variable renaming and sorting (immutable: it is cached)."""

    form: str  # SelectQuery | AskQuery | ConstructQuery | DescribeQuery
    canonical: str  # the exact-match key
    triples: tuple[tuple[str, str, str], ...]  # canonical names ?v0, ?v1, ...; paths as SPARQL text
    entities: frozenset[str]
    properties: frozenset[str]


@dataclass
class QueryScore:
    """Query-level comparison of one predicted query with the gold one."""

    exact_match: bool = False
    triples: PRF = field(default_factory=PRF)
    entities: PRF = field(default_factory=PRF)
    properties: PRF = field(default_factory=PRF)
    error: JsonObject | None = None  # ErrorInfo.to_dict() when a query did not parse

    def to_dict(self) -> JsonObject:
        return {"exact_match": self.exact_match, "triples": self.triples.to_dict(),
                "entities": self.entities.to_dict(), "properties": self.properties.to_dict(), "error": self.error}

    @classmethod
    def from_dict(cls, d: JsonObject) -> QueryScore:
        return cls(bool(d["exact_match"]), PRF.from_dict(d["triples"]), PRF.from_dict(d["entities"]),
                   PRF.from_dict(d["properties"]), d.get("error"))


# ---- normalisation ------------------------------------------------------------------------------
def _h(x: _Signature) -> str:
    return hashlib.blake2b(repr(x).encode(), digest_size=8).hexdigest()


def _is_var(t: AlgebraNode) -> bool:
    return isinstance(t, (Variable, BNode))


def _const(t: AlgebraNode) -> str:
    if isinstance(t, URIRef):
        return f"<{t}>"
    if isinstance(t, Literal):
        lang = t.language.lower() if t.language else None
        return Literal(str(t), lang=lang, datatype=t.datatype).n3()
    if isinstance(t, RdfPath):
        return t.n3()
    return repr(t)


def _path_iris(p: RdfTerm | None) -> list[str]:
    if isinstance(p, URIRef):
        return [str(p)]
    out = []
    for attr in ("args", "path"):
        sub = getattr(p, attr, None)
        for s in (sub if isinstance(sub, list) else [sub] if sub is not None else []):
            out.extend(_path_iris(s))
    return out


class _Collector:
    """One walk over the algebra: triples, variable contexts in order of appearance, IRIs by position."""

    def __init__(self) -> None:
        self.triples: list[tuple[RdfTerm, RdfTerm, RdfTerm]] = []
        self.contexts: dict[str, list[str]] = {}
        self.order: list[str] = []
        self.iris_other: list[str] = []
        self.iris_pred: list[str] = []

    def var(self, v: Variable | BNode, ctx: str) -> None:
        name = str(v) if isinstance(v, Variable) else f"_:{v}"
        if name not in self.contexts:
            self.contexts[name] = []
            self.order.append(name)
        self.contexts[name].append(ctx)

    def walk(self, node: AlgebraNode, ctx: str = "") -> None:
        if isinstance(node, CompValue):
            if node.name == "BGP":
                for t in node["triples"]:
                    self.triples.append(t)
                    for pos, term in enumerate(t):
                        if _is_var(term):
                            self.var(term, "T")
                        elif pos == 1:
                            self.iris_pred.extend(_path_iris(term))
                        elif isinstance(term, URIRef):
                            self.iris_other.append(str(term))
                return
            for k, v in node.items():
                if not k.startswith("_"):
                    self.walk(v, f"{node.name}.{k}")
        elif isinstance(node, dict):
            for k, v in node.items():
                self.walk(k, ctx)
                self.walk(v, ctx)
        elif isinstance(node, (list, tuple, set, frozenset)):
            for v in node:
                self.walk(v, ctx)
        elif _is_var(node):
            self.var(node, ctx)
        elif isinstance(node, URIRef):
            self.iris_other.append(str(node))


def _canonical_names(c: _Collector) -> dict[str, str]:
    """Variable name -> ?vN, by colour refinement over the triples (names never matter, structure does)."""
    def key(term: RdfTerm) -> str:
        return (str(term) if isinstance(term, Variable) else f"_:{term}") if _is_var(term) else _const(term)

    colour = {v: _h(sorted(c.contexts[v])) for v in c.order}
    for _ in range(3):  # a few rounds separate all but truly symmetric variables
        sig: dict[str, list] = {v: [colour[v]] for v in c.order}
        for t in c.triples:
            keys = [key(x) for x in t]
            for i, x in enumerate(t):
                if _is_var(x):
                    sig[keys[i]].append((i, tuple("*" if j == i else colour.get(keys[j], keys[j])
                                                  for j in range(3))))
        colour = {v: _h(sorted(sig[v], key=repr)) for v in c.order}
    ranked = sorted(c.order, key=lambda v: (colour[v], c.order.index(v)))
    return {v: f"?v{i}" for i, v in enumerate(ranked)}


def _serialise(node: AlgebraNode, names: dict[str, str]) -> str:
    """A canonical text of an rdflib algebra node (any of its node, term and container types), with variables
    renamed by `names`: two queries that differ only in order or nesting serialise alike."""
    if isinstance(node, Variable):
        return names.get(str(node), f"?{node}")
    if isinstance(node, BNode):
        return names.get(f"_:{node}", "_:b")
    if isinstance(node, CompValue):
        return _serialise_comp(node, names)
    if isinstance(node, dict):
        return "{" + ",".join(sorted(f"{_serialise(k, names)}:{_serialise(v, names)}" for k, v in node.items())) + "}"
    if isinstance(node, (list, tuple)):
        return "[" + ",".join(_serialise(x, names) for x in node) + "]"
    if isinstance(node, (set, frozenset)):
        return "{" + ",".join(sorted(_serialise(x, names) for x in node)) + "}"
    if isinstance(node, (URIRef, Literal, RdfPath)):
        return _const(node)
    return repr(node)


def _serialise_comp(node: CompValue, names: dict[str, str]) -> str:
    if node.name == "OrderCondition" and node.get("order") in (None, "ASC"):
        return _serialise(node["expr"], names)  # `ASC(?x)` and `?x` order alike
    if node.name in ("ConditionalAndExpression", "ConditionalOrExpression"):
        # `(a && b) && c` = `a && (b && c)` = `a && b && c`: flatten and sort the operands
        operands: list[AlgebraNode] = []
        stack: list[AlgebraNode] = [node]
        while stack:
            n = stack.pop()
            if isinstance(n, CompValue) and n.name == node.name:
                stack.append(n["expr"])
                stack.extend(n.get("other") or [])
            else:
                operands.append(n)
        return f"{node.name}(" + ",".join(sorted(_serialise(x, names) for x in operands)) + ")"
    if node.name in ("AdditiveExpression", "MultiplicativeExpression"):
        # `(a - b) + c` = `a - b + c`: left-nested chains written by a Plan merge into one
        inner = node["expr"]
        ops, others = list(node.get("op") or []), list(node.get("other") or [])
        while isinstance(inner, CompValue) and inner.name == node.name:
            ops = list(inner.get("op") or []) + ops
            others = list(inner.get("other") or []) + others
            inner = inner["expr"]
        return (f"{node.name}(" + _serialise(inner, names) + "," +
                ",".join(f"{o}{_serialise(x, names)}" for o, x in zip(ops, others, strict=False)) + ")")
    if node.name == "BGP":
        return "BGP(" + " ".join(sorted(" ".join(_serialise(x, names) for x in t) + " ."
                                        for t in node["triples"])) + ")"
    if node.name in _COMMUTATIVE:
        parts: list[str] = []
        stack = [node]
        while stack:  # flatten nested Join(Join(a, b), c) so that order and nesting do not matter
            n = stack.pop()
            for k in ("p1", "p2"):
                child = n.get(k)
                if isinstance(child, CompValue) and child.name == node.name:
                    stack.append(child)
                else:
                    parts.append(_serialise(child, names))
        return f"{node.name}(" + ",".join(sorted(parts)) + ")"
    items = []
    for k, v in node.items():
        if k.startswith("_"):
            continue
        s = _serialise(v, names)
        if k == "PV" and isinstance(v, list):  # projection order does not change the answer set
            s = "[" + ",".join(sorted(_serialise(x, names) for x in v)) + "]"
        items.append(f"{k}={s}")
    return f"{node.name}(" + ",".join(sorted(items)) + ")"


def _property_key(iri: str, profile: KBProfile) -> str:
    """p:/ps:/pq:/wdt:/wd:P… of one property -> one key (the direct-property IRI)."""
    if iri.startswith(_WD_ENTITY) and profile.kind_hint(iri) == "property":
        return profile.property_namespace + iri[len(_WD_ENTITY):]
    return profile.canonical_property(iri)[0]


def _prepare_text(sparql: str, kb: str) -> str:
    try:
        sparql, _ = rewrite_label_service(sparql)
    except UnusableQuery:
        pass  # leave the SERVICE in place: it still parses, it just cannot run
    # Other KBs' queries may still borrow Wikidata's prefixes; the KB's own win on a clash.
    prefixes = standard_prefixes(kb) if kb == "wikidata" else {**standard_prefixes("wikidata"), **standard_prefixes(kb)}
    return add_missing_prefixes(sparql, prefixes)[0]


@lru_cache(maxsize=8192)
def normalise_query(sparql: str, kb: str = "wikidata") -> NormalisedQuery | ErrorInfo:
    """Parse and normalise a query (cached: gold queries are parsed once per process)."""
    try:
        query = translateQuery(parseQuery(_prepare_text(sparql, kb)))
    except Exception as e:  # pyparsing errors, unknown prefixes, algebra failures: all mean "does not parse"
        return ErrorInfo(stage="parse", message=f"query does not parse: {' '.join(str(e).split())[:300]}")
    profile = get_profile(kb)
    c = _Collector()
    c.walk(query.algebra)
    names = _canonical_names(c)
    triples = tuple(sorted(tuple(_serialise(x, names) for x in t) for t in c.triples))
    props = {_property_key(i, profile) for i in c.iris_pred}
    ents = set()
    for i in c.iris_other:  # a property IRI in subject/object position (wd:P31) is still a property
        (props.add(_property_key(i, profile)) if profile.kind_hint(i) == "property" else ents.add(i))
    return NormalisedQuery(query.algebra.name, _serialise(query.algebra, names), triples,
                           frozenset(ents), frozenset(props))


# ---- comparison ---------------------------------------------------------------------------------
def _triple_hits(pred: tuple, gold: tuple) -> int:
    """Matched triples after mapping predicted variables onto gold ones by best assignment."""
    def blind(t: tuple) -> tuple:
        return tuple("?" if x.startswith("?") else x for x in t)

    pv = sorted({x for t in pred for x in t if x.startswith("?")})
    gv = sorted({x for t in gold for x in t if x.startswith("?")})
    mapping: dict[str, str] = {}
    if pv and gv:
        score = np.zeros((len(pv), len(gv)))
        pi, gi = {v: i for i, v in enumerate(pv)}, {v: i for i, v in enumerate(gv)}
        by_key: dict[tuple, list[tuple]] = {}
        for t in gold:
            by_key.setdefault(blind(t), []).append(t)
        for t in pred:
            for g in by_key.get(blind(t), []):
                for a, b in zip(t, g, strict=True):
                    if a.startswith("?") and b.startswith("?"):
                        score[pi[a], gi[b]] += 1
        rows, cols = linear_sum_assignment(score, maximize=True)
        mapping = {pv[r]: gv[c] for r, c in zip(rows, cols, strict=True) if score[r, c] > 0}
    renamed = Counter(tuple(mapping.get(x, "?p" + x[1:]) if x.startswith("?") else x for x in t) for t in pred)
    return sum((renamed & Counter(gold)).values())


def _set_prf(pred: frozenset, gold: frozenset) -> PRF:
    return PRF.from_counts(len(pred & gold), len(pred), len(gold))


def score_query(pred_sparql: str | None, gold_sparql: str, kb: str = "wikidata") -> QueryScore:
    """Compare a predicted query with the gold one; a query that does not parse scores 0 with the reason."""
    gold = normalise_query(gold_sparql, kb)
    if isinstance(gold, ErrorInfo):
        return QueryScore(error={**gold.to_dict(), "message": "gold " + gold.message})
    if pred_sparql is None or not pred_sparql.strip():
        return QueryScore(error=ErrorInfo(stage="translate", message="no predicted query").to_dict())
    pred = normalise_query(pred_sparql, kb)
    if isinstance(pred, ErrorInfo):
        return QueryScore(error=pred.to_dict())
    return QueryScore(
        exact_match=pred.canonical == gold.canonical,
        triples=PRF.from_counts(_triple_hits(pred.triples, gold.triples), len(pred.triples), len(gold.triples)),
        entities=_set_prf(pred.entities, gold.entities),
        properties=_set_prf(pred.properties, gold.properties),
    )


def queries_match(pred_sparql: str | None, gold_sparql: str | None, kb: str = "wikidata") -> bool:
    """Exact structural match (what the strict answer metric asks for both-empty questions)."""
    if not pred_sparql or not gold_sparql:
        return False
    return score_query(pred_sparql, gold_sparql, kb).exact_match


# ---- DeSQ placeholders --------------------------------------------------------------------------
@dataclass
class PlaceholderScore:
    """Grounding accuracy per placeholder kind (entity / property / class) and overall."""

    by_kind: dict[str, dict[str, float]] = field(default_factory=dict)
    overall: dict[str, float] = field(default_factory=dict)
    wrong: list[JsonObject] = field(default_factory=list)  # {placeholder, kind, predicted, gold}

    def to_dict(self) -> JsonObject:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: JsonObject) -> PlaceholderScore:
        return cls(dict(d["by_kind"]), dict(d["overall"]), list(d["wrong"]))


def _iri_key(iri: str | None, profile: KBProfile) -> str | None:
    if not iri:
        return None
    try:
        full = profile.expand(iri)
    except ValueError:
        full = iri
    return _property_key(full, profile) if profile.kind_hint(full) == "property" else full


def per_placeholder(pred: dict[str, str | None], gold: dict[str, str], kinds: dict[str, str] | None = None,
                    kb: str = "wikidata") -> PlaceholderScore:
    """Accuracy of predicted grounding {placeholder: iri} against gold, per kind (`wd:Q1` = full IRI;
    `wdt:P1`, `p:P1`, `ps:P1`, `pq:P1` and `wd:P1` count as the same property)."""
    profile = get_profile(kb)
    counts: dict[str, list[int]] = {}
    wrong = []
    for name, g in gold.items():
        gk = _iri_key(g, profile)
        kind = (kinds or {}).get(name) or (profile.kind_hint(gk or "") or "entity")
        ok = _iri_key(pred.get(name), profile) == gk
        c = counts.setdefault(kind, [0, 0])
        c[0] += ok
        c[1] += 1
        if not ok:
            wrong.append({"placeholder": name, "kind": kind, "predicted": pred.get(name), "gold": g})
    by_kind = {k: {"correct": c, "total": t, "accuracy": c / t} for k, (c, t) in sorted(counts.items())}
    total = sum(t for _, t in counts.values())
    correct = sum(c for c, _ in counts.values())
    return PlaceholderScore(by_kind, {"correct": correct, "total": total,
                                      "accuracy": correct / total if total else 1.0}, wrong)
