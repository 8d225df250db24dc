"""The schema and value memory of a store: which classes carry which predicates, and the literal values a
question may quote, so that the `explore` translator links a question to the knowledge graph's own structure.

Built from the store itself with a few aggregate SPARQL queries (local store or endpoint alike) and kept as
plain JSON in `<store>/current/schema/schema.json` (never pickle). Contents:
  classes     class IRI -> {label, count}
  predicates  predicate IRI -> {label, name, count, literals, iris, datatypes{dt: n}, domains{class: n},
              ranges{class: n}}; `name` is the readable name from the IRI (`singer#song_release_year` ->
              "singer song release year"), `label` the label memory's label (or the local name)
  values      normalised literal -> [[predicate, count, lexical form, datatype]] for short literals
  groups      super-property IRI -> {label, subs[]}: property groups through `rdfs:subPropertyOf` ("statistics"
              whose sub-properties are the attributes); a file written before groups existed has no such key
              and `open_schema` adds it with one query
Knowledge graphs without `rdfs:label` (relational data turned into RDF, BESTIARY) get readable names from
IRI local names; everything else comes from the label memory.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TypedDict

from grounding.schema_queries import (
    WHOLE_KG_ROWS,
    FetchStats,
    class_queries,
    datatype_queries,
    grouped,
    keyset,
    per_predicate,
    value_queries,
    whole_kg,
)
from grounding.text import normalize
from kb_dumps.json_types import JsonObject
from kb_dumps.label_memory import LabelMemory, LabelRow
from kb_dumps.layout import StoreLayout
from kb_dumps.profiles import KBProfile
from kb_dumps.store_types import Store, Term

log = logging.getLogger(__name__)

SCHEMA_FORMAT = 1
XSD = "http://www.w3.org/2001/XMLSchema#"
NUMERIC_TYPES = frozenset(XSD + t for t in ("integer", "decimal", "double", "float", "long", "int", "short",
                                            "nonNegativeInteger", "positiveInteger", "gYear"))
DATE_TYPES = frozenset(XSD + t for t in ("date", "dateTime", "gYear", "gYearMonth"))
# Literals longer than this are descriptions, not values a question quotes.
MAX_VALUE_CHARS = 80
MAX_VALUE_WORDS = 10
# Bounds that keep the memory small on a large KB (per predicate: top classes; in all: values).
MAX_CLASSES_PER_PREDICATE = 25
MAX_VALUES = 300_000
QUERY_TIMEOUT_S = 120.0
SUB_PROPERTY_OF = "http://www.w3.org/2000/01/rdf-schema#subPropertyOf"
# A group names at least this many sub-properties (one sub-property is a synonym, not a group).
MIN_GROUP = 2


class ClassInfo(TypedDict, total=False):
    """One class of the store: its label (set once the label memory is read) and its instance count."""

    label: str
    count: int


class GroupInfo(TypedDict):
    """One property group: the super-property's label and its sub-properties."""

    label: str
    subs: list[str]


# One quotable literal: [predicate, count, lexical form, datatype or None] (a JSON array in schema.json).
ValueRow = list[str | int | None]


def readable_name(iri: str) -> str:
    """A readable name from an IRI: the last path segment, `#` `_` `-` and camelCase split into words.

    `http://valuenet/ontop/singer#song_release_year` -> "singer song release year";
    `…/ontology#hasAlignment` -> "ontology has alignment" is avoided: a fragment after a namespace
    document (`ontology#x`) keeps only the fragment.
    """
    tail = iri.rstrip("/#")
    seg = re.split(r"[/:]", tail)[-1]
    if "#" in seg:
        owner, frag = seg.split("#", 1)
        seg = frag if owner.lower() in ("ontology", "ontologies", "schema", "vocab", "ns", "owl", "rdf-schema",
                                        "22-rdf-syntax-ns") or "." in owner else f"{owner} {frag}"
    seg = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", seg)
    seg = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", seg)
    seg = re.sub(r"^ref-", "", seg)
    return re.sub(r"[_\-\s=]+", " ", seg).strip().lower()


@dataclass
class PredicateInfo:
    label: str
    name: str
    count: int = 0
    literals: int = 0
    iris: int = 0
    datatypes: dict[str, int] = field(default_factory=dict)
    domains: dict[str, int] = field(default_factory=dict)
    ranges: dict[str, int] = field(default_factory=dict)

    @property
    def numeric(self) -> bool:
        total = sum(self.datatypes.values())
        num = sum(n for dt, n in self.datatypes.items() if dt in NUMERIC_TYPES)
        return total > 0 and num * 2 >= total

    @property
    def literal(self) -> bool:
        return self.literals >= self.iris

    @property
    def date(self) -> bool:
        total = sum(self.datatypes.values())
        return total > 0 and sum(n for dt, n in self.datatypes.items() if dt in DATE_TYPES) * 2 >= total

    def to_dict(self) -> JsonObject:
        return {"label": self.label, "name": self.name, "count": self.count, "literals": self.literals,
                "iris": self.iris, "datatypes": self.datatypes, "domains": self.domains, "ranges": self.ranges}


@dataclass
class ValueHit:
    """A literal of the store that a span of the question equals (normalised)."""

    predicate: str
    count: int
    value: str
    datatype: str | None


def _predicates_by_class(predicates: dict[str, PredicateInfo],
                         classes: Callable[[PredicateInfo], dict[str, int]]) -> dict[str, list[str]]:
    """class -> the predicates (in the schema's order) that have it among `classes(info)`: their domains or ranges."""
    out: dict[str, list[str]] = defaultdict(list)
    for p, info in predicates.items():
        for c in classes(info):
            out[c].append(p)
    return out


class SchemaMemory:
    """Classes, predicates and quotable values of one store (see the module docstring)."""

    def __init__(self, classes: dict[str, ClassInfo], predicates: dict[str, PredicateInfo],
                 values: dict[str, list[ValueRow]], meta: JsonObject,
                 groups: dict[str, GroupInfo] | None = None):
        self.classes = classes
        self.groups = groups  # None: read from a file that predates groups (open_schema fills it in)
        self.predicates = predicates
        self.values = values
        self.meta = meta
        self.type_predicate: str = meta.get("type_predicate", "")

    # ---- lookups -----------------------------------------------------------------------------
    def value_hits(self, norm: str) -> list[ValueHit]:
        return [ValueHit(p, n, v, dt) for p, n, v, dt in self.values.get(norm, [])]

    def predicates_of(self, cls: str) -> list[str]:
        """Predicates whose subjects include instances of `cls`."""
        return self._by_domain.get(cls, [])

    def predicates_into(self, cls: str) -> list[str]:
        """Predicates whose objects include instances of `cls`."""
        return self._by_range.get(cls, [])

    @cached_property
    def _by_domain(self) -> dict[str, list[str]]:
        return _predicates_by_class(self.predicates, lambda info: info.domains)

    @cached_property
    def _by_range(self) -> dict[str, list[str]]:
        return _predicates_by_class(self.predicates, lambda info: info.ranges)

    def class_label(self, cls: str) -> str:
        return self.classes.get(cls, {}).get("label") or readable_name(cls)

    # ---- persistence -------------------------------------------------------------------------
    def to_dict(self) -> JsonObject:
        return {"format": SCHEMA_FORMAT, "meta": self.meta, "classes": self.classes,
                "predicates": {p: i.to_dict() for p, i in self.predicates.items()}, "values": self.values,
                **({"groups": self.groups} if self.groups is not None else {})}

    def save(self, store_dir: str | Path) -> Path:
        """Write atomically (temp file + rename): a reader never sees half a memory."""
        path = schema_path(store_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(), f, ensure_ascii=False, separators=(",", ":"))
        os.replace(tmp, path)
        return path

    @classmethod
    def from_dict(cls, d: JsonObject) -> SchemaMemory:
        if d.get("format") != SCHEMA_FORMAT:
            raise ValueError(f"schema memory format {d.get('format')!r} is not {SCHEMA_FORMAT}; rebuild it with "
                             f"`kbqa index`")
        preds = {p: PredicateInfo(**i) for p, i in d.get("predicates", {}).items()}
        return cls(d.get("classes", {}), preds, d.get("values", {}), d.get("meta", {}), d.get("groups"))

    @classmethod
    def load(cls, store_dir: str | Path) -> SchemaMemory | None:
        path = schema_path(store_dir)
        if not path.is_file():
            return None
        with open(path, encoding="utf-8") as f:
            return cls.from_dict(json.load(f))


def schema_path(store_dir: str | Path) -> Path:
    return StoreLayout.of(store_dir).current / "schema" / "schema.json"


# ---- building ------------------------------------------------------------------------------


def _rows(store: Store, query: str) -> list[list[Term | None]]:
    res = store.query(query, timeout_s=QUERY_TIMEOUT_S, row_cap=2_000_000)
    return res.rows


def _val(term: Term | None) -> str | None:
    return term.get("value") if isinstance(term, dict) else None


def build_schema(store: Store, profile: KBProfile, memory: LabelMemory | None = None) -> SchemaMemory:
    """Read the schema and the value memory off `store` (a `Store`); labels from `memory` when given."""
    t0 = time.perf_counter()
    tp = profile.type_predicate
    skip = set(profile.label_predicates) | set(profile.description_predicates) | set(profile.alias_predicates)
    stats = FetchStats()
    classes: dict[str, ClassInfo] = {}
    q_classes = f"SELECT ?key (COUNT(?s) AS ?n) WHERE {{{{ ?s <{tp}> ?key {{after}} }}}} GROUP BY ?key {{limit}}"
    for c, n in keyset(store, q_classes, stats):
        if _val(c) and c.get("type") == "uri":
            classes[_val(c)] = {"count": int(_val(n) or 0)}
    preds: dict[str, PredicateInfo] = {}

    def info(p: str) -> PredicateInfo:
        if p not in preds:
            preds[p] = PredicateInfo(label="", name=readable_name(p))
        return preds[p]

    q_kinds = ("SELECT ?key (SUM(IF(isLiteral(?o), 1, 0)) AS ?lit) (COUNT(*) AS ?n) WHERE {{ ?s ?key ?o {after} }} "
               "GROUP BY ?key {limit}")
    for p, lit, n in keyset(store, q_kinds, stats):
        if _val(p) in skip or not _val(p):
            continue
        i = info(_val(p))
        i.count, i.literals = int(_val(n) or 0), int(_val(lit) or 0)
        i.iris = i.count - i.literals
    with_literals = sorted(p for p, i in preds.items() if i.literals)
    for p, dt, n in grouped(store, "datatypes", *datatype_queries(), with_literals, stats):
        if _val(p) in preds and _val(dt):
            preds[_val(p)].datatypes[_val(dt)] = int(_val(n) or 0)
    for side, attr in (("s", "domains"), ("o", "ranges")):
        for p, c, n in grouped(store, attr, *class_queries(tp, side, MAX_CLASSES_PER_PREDICATE), sorted(preds), stats):
            if _val(p) in preds and _val(c):
                getattr(preds[_val(p)], attr)[_val(c)] = int(_val(n) or 0)
    for i in preds.values():
        i.domains = dict(sorted(i.domains.items(), key=lambda kv: -kv[1])[:MAX_CLASSES_PER_PREDICATE])
        i.ranges = dict(sorted(i.ranges.items(), key=lambda kv: -kv[1])[:MAX_CLASSES_PER_PREDICATE])
    values, kept = _read_values(store, preds, skip, with_literals, stats)
    _label(classes, preds, profile, memory)
    groups = build_groups(store, preds, memory)
    meta = {"profile": profile.name, "type_predicate": tp, "classes": len(classes), "predicates": len(preds),
            "values": kept, "seconds": round(time.perf_counter() - t0, 3), "queries": stats.queries,
            "per_predicate": stats.per_predicate, "skipped": stats.skipped, "timeouts": stats.timeouts}
    log.info("schema memory: %s", meta)
    return SchemaMemory(classes, preds, values, meta, groups)


def _read_values(store: Store, preds: dict[str, PredicateInfo], skip: set[str], with_literals: list[str],
                 stats: FetchStats) -> tuple[dict[str, list[ValueRow]], int]:
    """The value memory (normalised literal -> its rows) and how many rows it keeps: one query over the whole KG
    when it is small enough, else one per predicate with literals."""
    values: dict[str, list[ValueRow]] = defaultdict(list)
    whole_values, one_values = value_queries(MAX_VALUE_CHARS)
    # distinct (predicate, literal) pairs are at most the literal triples: few enough, one query over the KG
    literal_triples = sum(i.literals for i in preds.values())
    rows = (whole_kg(store, whole_values, stats) if literal_triples <= WHOLE_KG_ROWS else None)
    if rows is None:
        rows = ([{"type": "uri", "value": p}, *row]
                for p, row in per_predicate(store, "values", one_values, with_literals, stats))
    kept = 0
    for p, o, n in rows:
        pid = _val(p)
        if pid in skip or pid not in preds or kept >= MAX_VALUES:
            continue
        text = _val(o) or ""
        norm = normalize(text)
        if not norm or len(norm.split()) > MAX_VALUE_WORDS:
            continue
        values[norm].append([pid, int(_val(n) or 0), text, o.get("datatype") if o else None])
        kept += 1
    for hits in values.values():  # most used first, then by name: one order whatever order the engine's rows came in
        hits.sort(key=lambda h: (-int(h[1] or 0), str(h[0]), str(h[2]), str(h[3] or "")))
    return dict(values), kept


def build_groups(store: Store, preds: dict[str, PredicateInfo], memory: LabelMemory | None = None
                 ) -> dict[str, GroupInfo]:
    """Super-properties with at least MIN_GROUP sub-properties that the KB uses, each with its label."""
    subs: dict[str, list[str]] = defaultdict(list)
    for sub, sup in _rows(store, f"SELECT ?s ?g WHERE {{ ?s <{SUB_PROPERTY_OF}> ?g }}"):
        if _val(sub) in preds and _val(sup) and sup.get("type") == "uri" and _val(sup) != _val(sub):
            subs[_val(sup)].append(_val(sub))
    rows = memory.get_many(list(subs)) if memory is not None and subs else {}
    out: dict[str, GroupInfo] = {}
    for g, members in subs.items():
        if len(members) >= MIN_GROUP:
            row = rows.get(g)
            out[g] = {"label": row.label if row is not None and row.label else readable_name(g),
                      "subs": sorted(members)}
    return out


def _label(classes: dict[str, ClassInfo], preds: dict[str, PredicateInfo], profile: KBProfile,
           memory: LabelMemory | None) -> None:
    """Labels from the label memory (Wikidata `wdt:P19` -> its `wd:P19` row), else the readable IRI name."""
    rows: dict[str, LabelRow] = {}
    if memory is not None:
        ids = list(classes) + [profile.property_entity(p) for p in preds]
        for k in range(0, len(ids), 5000):
            rows.update(memory.get_many(ids[k:k + 5000]))
    for c, d in classes.items():
        row = rows.get(c)
        d["label"] = row.label if row is not None and row.label else readable_name(c)
    for p, i in preds.items():
        row = rows.get(profile.property_entity(p))
        i.label = row.label if row is not None and row.label else profile.local_name_label(p)


def open_schema(store_dir: str | Path, store: Store, profile: KBProfile, memory: LabelMemory | None = None
                ) -> SchemaMemory:
    """The store's schema memory, built and saved on first use when `kbqa index` has not made one."""
    schema = SchemaMemory.load(store_dir)
    if schema is not None and schema.meta.get("profile") == profile.name and schema.groups is not None:
        return schema
    own = None
    if memory is None and StoreLayout.of(store_dir).labels.is_file():
        # labels must be the label memory's: grounding checks a confirmed URI against them
        memory = own = LabelMemory(StoreLayout.of(store_dir).labels, readonly=True)
    try:
        if schema is None or schema.meta.get("profile") != profile.name:
            schema = build_schema(store, profile, memory)
        else:  # written before property groups: add them, keep the rest
            schema.groups = build_groups(store, schema.predicates, memory)
    finally:
        if own is not None:
            own.close()
    _save(schema, store_dir)
    return schema


def _save(schema: SchemaMemory, store_dir: str | Path) -> None:
    try:
        schema.save(store_dir)
    except OSError as e:  # a read-only store directory: keep it in memory
        log.warning("could not save the schema memory: %s", e)
