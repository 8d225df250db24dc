"""The one benchmark record type every loader produces: question(s), gold SPARQL, gold answers."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from kb_dumps.json_types import JsonObject

XSD_BOOLEAN = "http://www.w3.org/2001/XMLSchema#boolean"

# A gold answer term in the SPARQL-JSON shape of kb_dumps.store_types.QueryResult rows:
# {"type": "uri"|"literal"|"bnode", "value": str, "datatype"?: str, "xml:lang"?: str}.
Term = dict[str, str]


@dataclass
class Record:
    """One benchmark question, as plain data.

    `answers` holds the gold answers given in the file (None when the file gives none, so the
    gold query must be run): a list of rows, each a list of terms (None = unbound) aligned with
    `answer_vars` — the same shape as `QueryResult.rows`, so multi-column golds keep their columns.
    An ASK gold has `boolean` set and `answers` empty. `usable` is False when the record cannot be
    evaluated (no question text, gold query that does not parse, a Blazegraph-only part that cannot
    be rewritten, ...), and `reason` says why; such records are kept and counted, never dropped.
    """

    id: str
    questions: dict[str, str]
    sparql: str | None
    answers: list[list[Term | None]] | None = None
    usable: bool = True
    reason: str | None = None
    dataset: str = ""
    meta: JsonObject = field(default_factory=dict)
    answer_vars: list[str] = field(default_factory=list)
    boolean: bool | None = None

    @property
    def question(self) -> str:
        """The English question when there is one, else the first language given."""
        if "en" in self.questions:
            return self.questions["en"]
        return next(iter(self.questions.values()), "")

    @property
    def has_gold_answers(self) -> bool:
        return self.boolean is not None or self.answers is not None

    def gold_result(self) -> JsonObject | None:
        """Gold answers in `QueryResult.to_dict()` shape (kind, vars, rows, boolean), or None."""
        if self.boolean is not None:
            return {"kind": "ask", "vars": [], "rows": [], "boolean": self.boolean}
        if self.answers is None:
            return None
        return {"kind": "select", "vars": list(self.answer_vars), "rows": [list(r) for r in self.answers],
                "boolean": None}

    def to_dict(self) -> JsonObject:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: JsonObject) -> Record:
        return cls(
            id=str(d["id"]),
            questions=dict(d.get("questions") or {}),
            sparql=d.get("sparql"),
            answers=None if d.get("answers") is None else [list(r) for r in d["answers"]],
            usable=bool(d.get("usable", True)),
            reason=d.get("reason"),
            dataset=d.get("dataset", ""),
            meta=dict(d.get("meta") or {}),
            answer_vars=list(d.get("answer_vars") or []),
            boolean=d.get("boolean"),
        )


def uri(value: str) -> Term:
    return {"type": "uri", "value": value}


def literal(value: str, datatype: str | None = None, lang: str | None = None) -> Term:
    t: Term = {"type": "literal", "value": value}
    if datatype:
        t["datatype"] = datatype
    if lang:
        t["xml:lang"] = lang
    return t


def clean_term(t: JsonObject) -> Term:
    """Keep only the SPARQL-JSON keys of a term (benchmark files add labels, names, ...)."""
    out: Term = {"type": str(t.get("type", "literal")), "value": str(t.get("value", ""))}
    if out["type"] == "typed-literal":  # SPARQL-JSON of old endpoints
        out["type"] = "literal"
    for k in ("datatype", "xml:lang"):
        if t.get(k):
            out[k] = str(t[k])
    return out


def rows_from_bindings(bindings: list[JsonObject], head_vars: list[str] | None = None
                       ) -> tuple[list[str], list[list[Term | None]]]:
    """SPARQL-JSON bindings ({var: term}) -> (vars, rows); vars from the head, else the union in order seen."""
    names = list(head_vars or [])
    for b in bindings:
        for k in b:
            if k not in names:
                names.append(k)
    rows = [[clean_term(b[v]) if isinstance(b.get(v), dict) else None for v in names] for b in bindings]
    return names, rows
