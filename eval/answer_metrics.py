"""Answer-level metrics: value normalisation, per-question set P/R/F1 (QALD-style and strict), macro averages."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from decimal import MAX_EMAX, MIN_EMIN, Context, Decimal, InvalidOperation
from typing import TypeAlias

import numpy as np
from scipy.optimize import linear_sum_assignment

from eval.query_metrics import PRF, queries_match
from kb_dumps.json_types import JsonObject, JsonValue
from kb_dumps.profiles import FREEBASE_NS, WIKIDATA_PREFIXES
from kb_dumps.store_types import QueryResult

XSD = "http://www.w3.org/2001/XMLSchema#"
_NUMERIC = {XSD + t for t in ("integer", "decimal", "double", "float", "long", "int", "short", "byte",
                              "nonNegativeInteger", "positiveInteger", "negativeInteger", "nonPositiveInteger",
                              "unsignedLong", "unsignedInt", "unsignedShort", "unsignedByte")}
_DATES = {XSD + "dateTime", XSD + "date", XSD + "dateTimeStamp"}
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_DATE = re.compile(r"([+-]?\d{4,})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?")
_PREFIXED = re.compile(r"([A-Za-z][\w-]*):([^\s/<>\"][^\s<>\"]*)")
# Prefixes a plain string from a benchmark file may use for an IRI (`wd:Q1`, `ns:m.0abc`).
_PREFIXES = {**WIKIDATA_PREFIXES, "ns": FREEBASE_NS, "fb": FREEBASE_NS}

# 15 significant digits over any exponent (the default context overflows past 1E+999999)
_WIDE = Context(prec=15, Emax=MAX_EMAX, Emin=MIN_EMIN)
Key = tuple  # a normalised value: ("iri", ...), ("num", ...), ("date", ...), ("bool", ...), ("str", ...)
# Every answer form `as_answers` reads: a store's result, or the JSON forms (its dict, SPARQL-JSON results, rows,
# terms, a bool, None).
AnswersInput: TypeAlias = QueryResult | JsonValue


def _number_key(value: str) -> Key | None:
    try:
        d = Decimal(value.strip())
    except InvalidOperation:
        return None
    if not d.is_finite():
        return ("num", str(d))
    # 15 significant digits: a double computed by the store (89.253731343283582) equals the
    # gold written with more digits (89.25373134328358208955…); exact integers are unaffected.
    if abs(d.adjusted()) > 40:  # "1E+999999": compared in scientific form, never written out digit by digit
        return ("num", format(_WIDE.normalize(d), "E"))
    if d != d.to_integral_value() or len(d.as_tuple().digits) > 15:
        d = Decimal(format(d, ".15g"))
    d = d.normalize()
    s = format(d, "f")
    return ("num", "0" if s in ("-0", "0") else s)


def _date_key(value: str) -> Key | None:
    m = _DATE.fullmatch(value.strip())
    if not m:
        return None
    year = int(m.group(1))  # "+1990" and "1990" are the same year; keep the sign of BCE years
    day = f"{year:04d}-{m.group(2)}-{m.group(3)}" if year >= 0 else f"-{-year:04d}-{m.group(2)}-{m.group(3)}"
    if m.group(4) is None or (m.group(4), m.group(5), m.group(6)) == ("00", "00", "00"):
        return ("date", day)  # Wikidata stores day (and year) precision as midnight
    return ("datetime", f"{day}T{m.group(4)}:{m.group(5)}:{m.group(6)}")


def _literal_key(value: str, datatype: str | None) -> Key:
    v = value.strip()
    if datatype == XSD + "boolean" or (not datatype and v.lower() in ("true", "false")):
        return ("bool", v.lower() in ("true", "1"))
    if datatype in _NUMERIC or (not datatype and _NUMBER.fullmatch(v)):
        return _number_key(v) or ("str", v)
    if datatype == XSD + "gYear" and re.fullmatch(r"[+-]?\d{4,}", v):
        return _date_key(f"{v}-01-01") or ("str", v)
    if datatype == XSD + "gYearMonth" and re.fullmatch(r"[+-]?\d{4,}-\d{2}", v):
        return _date_key(f"{v}-01") or ("str", v)
    if datatype in _DATES or not datatype:
        k = _date_key(v)
        if k:
            return k
    # Strings: language tag and xsd:string dropped, whitespace collapsed, case folded.
    return ("str", " ".join(v.split()).casefold())


def _iri_key(iri: str) -> Key:
    if iri.startswith("https://www.wikidata.org/entity/"):
        iri = "http://" + iri[len("https://"):]
    return ("iri", iri)


def term_key(term: JsonValue | Decimal) -> Key | None:
    """A comparable key for one answer value: a SPARQL-JSON term dict, a plain string, a bool or a number."""
    if term is None:
        return None
    if isinstance(term, bool):
        return ("bool", term)
    if isinstance(term, (int, float, Decimal)):
        return _number_key(str(term))
    if isinstance(term, dict):
        kind, value = term.get("type"), str(term.get("value", ""))
        if kind == "uri":
            return _iri_key(value)
        if kind == "bnode":
            return ("bnode", value)
        return _literal_key(value, term.get("datatype"))
    s = str(term).strip()
    if re.fullmatch(r"https?://\S+", s):
        return _iri_key(s)
    if s.startswith("<") and s.endswith(">"):
        return _iri_key(s[1:-1])
    m = _PREFIXED.fullmatch(s)
    if m and m.group(1) in _PREFIXES:
        return _iri_key(_PREFIXES[m.group(1)] + m.group(2))
    return _literal_key(s, None)


@dataclass
class AnswerSet:
    """Normalised answers: a SELECT table (columns of keys) or an ASK boolean."""

    kind: str  # select | ask
    columns: list[str] = field(default_factory=list)
    rows: list[tuple] = field(default_factory=list)
    boolean: bool | None = None

    @property
    def as_boolean(self) -> bool | None:
        """The boolean an answer stands for: ASK, or one SELECT cell holding true/false."""
        if self.kind == "ask":
            return self.boolean
        if len(self.rows) == 1 and len(self.rows[0]) == 1 and self.rows[0][0] and self.rows[0][0][0] == "bool":
            return self.rows[0][0][1]
        return None

    @property
    def empty(self) -> bool:
        return self.kind == "select" and not self.rows


def as_answers(x: AnswersInput) -> AnswerSet:
    """Normalise any answer form: QueryResult (or its dict), Record.gold_result(), SPARQL-JSON results,
    a list of rows, a list of terms / strings (one column), a bool (ASK), or None (no answers)."""
    if x is None:
        return AnswerSet("select")
    if isinstance(x, bool):
        return AnswerSet("ask", boolean=x)
    if hasattr(x, "kind") and hasattr(x, "rows"):  # kb_dumps.store_types.QueryResult
        x = {"kind": x.kind, "vars": list(x.vars), "rows": x.rows, "boolean": x.boolean}
    if isinstance(x, dict):
        if "boolean" in x and x.get("boolean") is not None and (x.get("kind") in (None, "ask")):
            return AnswerSet("ask", boolean=bool(x["boolean"]))
        if "results" in x:  # SPARQL-JSON {"head": {"vars"}, "results": {"bindings"}}
            names = list((x.get("head") or {}).get("vars") or [])
            bindings = (x.get("results") or {}).get("bindings") or []
            for b in bindings:
                names.extend(k for k in b if k not in names)
            x = {"kind": "select", "vars": names, "rows": [[b.get(v) for v in names] for b in bindings]}
        rows = x.get("rows") or []
        names = list(x.get("vars") or [])
        return _table(names, rows)
    if isinstance(x, (list, tuple)):
        if all(isinstance(r, (list, tuple)) for r in x):
            return _table([], list(x))
        if x and all(isinstance(r, dict) and "type" not in r for r in x):  # SPARQL-JSON bindings
            return as_answers({"results": {"bindings": list(x)}})
        return _table(["x"], [[t] for t in x])
    raise TypeError(f"cannot read answers of type {type(x).__name__}")


def _table(names: list[str], rows: list) -> AnswerSet:
    width = max([len(names)] + [len(r) for r in rows])
    names = names + [f"c{i}" for i in range(len(names), width)]
    keyed = set()
    for r in rows:
        k = tuple(term_key(t) for t in r) + (None,) * (width - len(r))
        if any(v is not None for v in k):  # a row with every cell unbound is no answer
            keyed.add(k)
    return AnswerSet("select", names, sorted(keyed, key=repr))


def _set_f1(a: set, b: set) -> float:
    hits = len(a & b)
    return 2 * hits / (len(a) + len(b)) if a or b else 1.0


def table_prf(gold: AnswerSet, pred: AnswerSet) -> PRF:
    """Set P/R/F1 of two non-empty SELECT tables, columns matched by best assignment (Hungarian).

    Predicted columns left over are ignored (a display column costs nothing); gold columns left over
    count as missed: P and R are multiplied by matched gold columns / gold columns.
    """
    kg, kp = len(gold.columns), len(pred.columns)
    gcols = [{r[i] for r in gold.rows} - {None} for i in range(kg)]
    pcols = [{r[j] for r in pred.rows} - {None} for j in range(kp)]
    score = np.array([[_set_f1(g, p) for p in pcols] for g in gcols])
    gi, pj = linear_sum_assignment(score, maximize=True)
    g_rows = {tuple(r[i] for i in gi) for r in gold.rows}
    p_rows = {tuple(r[j] for j in pj) for r in pred.rows}
    g_rows.discard(tuple(None for _ in gi))
    p_rows.discard(tuple(None for _ in pj))
    hits = len(g_rows & p_rows)
    scale = len(gi) / kg if kg else 0.0
    p = scale * hits / len(p_rows) if p_rows else 0.0
    r = scale * hits / len(g_rows) if g_rows else 0.0
    return PRF(p, r, 2 * p * r / (p + r) if p + r else 0.0)


@dataclass
class AnswerScore:
    """One question, both figures side by side."""

    qald: PRF
    strict: PRF
    gold_empty: bool
    pred_empty: bool
    both_empty: bool
    query_match: bool | None = None
    note: str | None = None

    def to_dict(self) -> JsonObject:
        d = asdict(self)
        d["qald"], d["strict"] = self.qald.to_dict(), self.strict.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: JsonObject) -> AnswerScore:
        return cls(PRF.from_dict(d["qald"]), PRF.from_dict(d["strict"]), d["gold_empty"], d["pred_empty"],
                   d["both_empty"], d.get("query_match"), d.get("note"))


def _qald_prf(gold: AnswerSet, pred: AnswerSet) -> tuple[PRF, str | None]:
    if gold.kind == "ask" or pred.kind == "ask":
        pb = pred.as_boolean
        gb = gold.as_boolean
        if gb is None or pb is None:
            return PRF(), "ASK compared with a result that is not one boolean"
        return (PRF(1.0, 1.0, 1.0), None) if gb == pb else (PRF(), None)
    if gold.empty and pred.empty:
        return PRF(1.0, 1.0, 1.0), "both empty"
    if gold.empty:
        return PRF(), "gold empty, prediction not"
    if pred.empty:
        return PRF(1.0, 0.0, 0.0), "no answer given"  # GERBIL: an empty answer is "could not answer"
    return table_prf(gold, pred), None


def score_question(gold: AnswersInput, pred: AnswersInput, *, gold_sparql: str | None = None, pred_sparql: str | None = None,
                   query_match: bool | None = None, kb: str = "wikidata") -> AnswerScore:
    """QALD-style and strict P/R/F1 of one question (see eval/README.md for the rules).

    `gold` / `pred`: anything `as_answers` reads. Strict differs only on questions whose gold and
    predicted answers are both empty: correct only if the queries match at query level (`query_match`,
    computed from the two queries when not given), or when the gold has no query (an unanswerable
    question) and the predictor gave none either.
    """
    g, p = as_answers(gold), as_answers(pred)
    qald, note = _qald_prf(g, p)
    both = g.empty and p.empty
    strict = qald
    if both:
        if query_match is None:
            if gold_sparql is None and not pred_sparql:
                query_match = True
            else:
                query_match = queries_match(pred_sparql, gold_sparql, kb)
        strict = qald if query_match else PRF()
    return AnswerScore(qald, strict, g.empty, p.empty, both, query_match, note)


@dataclass
class AnswerSummary:
    """Macro averages over questions; `f1_qald` is GERBIL's "Macro F1 QALD" (from macro P and R)."""

    n: int
    qald: dict[str, float]
    strict: dict[str, float]
    both_empty: int
    both_empty_unmatched: int

    def to_dict(self) -> JsonObject:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: JsonObject) -> AnswerSummary:
        return cls(**d)


def _macro(prfs: list[PRF]) -> dict[str, float]:
    n = len(prfs)
    if not n:
        return {"precision": 0.0, "recall": 0.0, "f1": 0.0, "f1_qald": 0.0}
    p = sum(x.precision for x in prfs) / n
    r = sum(x.recall for x in prfs) / n
    return {"precision": p, "recall": r, "f1": sum(x.f1 for x in prfs) / n,
            "f1_qald": 2 * p * r / (p + r) if p + r else 0.0}


def macro_average(scores: list[AnswerScore]) -> AnswerSummary:
    """Both figures side by side: QALD-style and strict, each as macro P, R, mean F1 and F1 of macro P/R."""
    return AnswerSummary(
        n=len(scores),
        qald=_macro([s.qald for s in scores]),
        strict=_macro([s.strict for s in scores]),
        both_empty=sum(s.both_empty for s in scores),
        both_empty_unmatched=sum(s.both_empty and not s.query_match for s in scores),
    )
