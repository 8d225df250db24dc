"""Answers as plain data: each value with its label (from the label memory) and a normalised value."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from kb_dumps.json_types import JsonObject
from kb_dumps.label_memory import LabelMemory
from kb_dumps.profiles import XSD, KBProfile
from kb_dumps.store_types import QueryResult

_INTEGER_TYPES = {XSD + t for t in ("integer", "int", "long", "short", "byte", "nonNegativeInteger",
                                    "positiveInteger", "negativeInteger", "nonPositiveInteger",
                                    "unsignedInt", "unsignedLong", "unsignedShort", "unsignedByte")}
_REAL_TYPES = {XSD + t for t in ("decimal", "double", "float")}
_DATE_TYPES = {XSD + "dateTime", XSD + "date", XSD + "dateTimeStamp"}
# Wikidata writes day-precision dates as midnight UTC: the date alone is what a person means.
_MIDNIGHT = re.compile(r"^([+-]?\d{4,}-\d{2}-\d{2})(?:T00:00:00(?:\.0+)?)?(?:Z|[+-]00:00)?$")


@dataclass
class AnswerValue:
    """One cell of an answer. `type` is uri | literal | bnode; `value` the IRI or lexical form;
    `normalized` a plain value (int / float for numbers, bool, ISO date text, or the string);
    `value_type` says which: iri | number | boolean | date | string | literal | bnode."""

    type: str
    value: str
    value_type: str
    normalized: str | int | float | bool | None = None
    label: str | None = None
    datatype: str | None = None
    lang: str | None = None

    @property
    def display(self) -> str:
        """What a person reads: the label of an IRI, else the normalised value."""
        if self.label:
            return self.label
        if self.normalized is not None and not isinstance(self.normalized, bool):
            return str(self.normalized)
        return self.value.lower() if isinstance(self.normalized, bool) else self.value

    def term(self) -> dict[str, str]:
        """The SPARQL-JSON term this value came from (for answer metrics)."""
        t = {"type": self.type, "value": self.value}
        if self.datatype:
            t["datatype"] = self.datatype
        if self.lang:
            t["xml:lang"] = self.lang
        return t

    def to_dict(self) -> dict:
        d = {"type": self.type, "value": self.value, "value_type": self.value_type, "normalized": self.normalized}
        for k in ("label", "datatype", "lang"):
            if getattr(self, k) is not None:
                d[k] = getattr(self, k)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> AnswerValue:
        return cls(**d)


@dataclass
class Answers:
    """A SELECT table (`vars`, `rows`) or an ASK `boolean`; `truncated` when the row cap cut it."""

    kind: str  # select | ask
    vars: list[str] = field(default_factory=list)
    rows: list[list[AnswerValue | None]] = field(default_factory=list)
    boolean: bool | None = None
    truncated: bool = False

    @property
    def empty(self) -> bool:
        """No answer at all: no row with a bound value, or a count of 0 (ASK is never empty: false answers)."""
        if self.kind == "ask":
            return self.boolean is None
        bound = [r for r in self.rows if any(v is not None for v in r)]
        if not bound:
            return True
        if len(bound) == 1 and len(bound[0]) == 1 and self.is_count:
            return bound[0][0] is not None and bound[0][0].normalized == 0
        return False

    @property
    def is_count(self) -> bool:
        return len(self.vars) == 1 and len(self.rows) == 1 and self.rows[0][0] is not None \
            and self.rows[0][0].value_type == "number"

    def column(self, var: str | None = None) -> list[AnswerValue | None]:
        i = self.vars.index(var) if var else 0
        return [r[i] for r in self.rows]

    def to_result_dict(self) -> JsonObject:
        """The `QueryResult.to_dict()` shape (kind, vars, rows of terms, boolean) that eval's metrics read."""
        return {"kind": self.kind, "vars": list(self.vars), "boolean": self.boolean,
                "rows": [[v.term() if v else None for v in r] for r in self.rows]}

    def to_dict(self) -> dict:
        return {"kind": self.kind, "vars": self.vars, "boolean": self.boolean, "truncated": self.truncated,
                "rows": [[v.to_dict() if v else None for v in r] for r in self.rows]}

    @classmethod
    def from_dict(cls, d: dict) -> Answers:
        return cls(d["kind"], list(d.get("vars", [])),
                   [[AnswerValue.from_dict(v) if v else None for v in r] for r in d.get("rows", [])],
                   d.get("boolean"), bool(d.get("truncated")))


def normalize_term(term: dict[str, str]) -> AnswerValue:
    """A SPARQL-JSON term → AnswerValue without a label (numbers, booleans and dates parsed)."""
    kind, value = term.get("type", "literal"), str(term.get("value", ""))
    if kind == "uri":
        return AnswerValue("uri", value, "iri", value)
    if kind != "literal":
        return AnswerValue(kind, value, kind, value)
    lang, datatype = term.get("xml:lang"), term.get("datatype")
    if lang:
        return AnswerValue("literal", value, "string", value, lang=lang)
    if datatype is None or datatype == XSD + "string":
        return AnswerValue("literal", value, "string", value)
    vtype, normalized = _typed(value, datatype)
    return AnswerValue("literal", value, vtype, normalized, datatype=datatype)


def _typed(value: str, datatype: str) -> tuple[str, str | int | float | bool]:
    text = value.strip()
    try:
        if datatype in _INTEGER_TYPES:
            return "number", int(text)
        if datatype in _REAL_TYPES:
            number = float(text)
            # JSON has no inf / nan: keep the lexical form for those.
            return ("number", number) if math.isfinite(number) else ("literal", value)
    except ValueError:
        return "literal", value  # an ill-typed literal stays as written
    if datatype == XSD + "boolean" and text in ("true", "false", "1", "0"):
        return "boolean", text in ("true", "1")
    if datatype in _DATE_TYPES:
        m = _MIDNIGHT.match(text)
        return "date", m.group(1) if m else text
    if datatype == XSD + "gYear":
        return "date", text
    return "literal", value


def make_answers(result: QueryResult, memory: LabelMemory | None = None, profile: KBProfile | None = None) -> Answers:
    """Answers from a `QueryResult`, IRIs labelled from `memory` (a LabelMemory, or None for no labels)."""
    if result.kind == "ask":
        return Answers("ask", boolean=bool(result.boolean))
    rows = [[normalize_term(t) if t else None for t in row] for row in result.rows]
    if memory is not None:
        add_labels(rows, memory, profile)
    return Answers("select", list(result.vars), rows, None, bool(getattr(result, "truncated", False)))


def add_labels(rows: list[list[AnswerValue | None]], memory: LabelMemory, profile: KBProfile | None = None) -> None:
    """Fill `label` of every IRI value in place (Wikidata property IRIs are looked up as wd:P…)."""
    def key(iri: str) -> str:
        return profile.property_entity(iri) if profile is not None else iri

    iris = {v.value for r in rows for v in r if v is not None and v.type == "uri"}
    if not iris:
        return
    found = memory.get_many(key(i) for i in iris)
    for r in rows:
        for v in r:
            if v is not None and v.type == "uri":
                row = found.get(key(v.value))
                if row is not None and row.label:
                    v.label = row.label
