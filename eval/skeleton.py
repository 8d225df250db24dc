"""Query skeletons: a Wikidata query with every id and literal replaced by a typed slot, variables renamed in order.

One function, `skeleton(sparql)`, makes the training labels of the structure chooser and scores its predictions
(kbqa/translators/structure/). A skeleton is plain text over the query's own tokens:

    SELECT ?v0 WHERE { E1 p:R1 ?v1 . ?v1 ps:R1 E2 . ?v1 pq:R2 ?v0 }

- an entity (`wd:Q…`, or its full IRI) becomes `E1`, `E2`, … in order of first appearance; the same id twice is the
  same slot (a shared entity is part of the structure);
- a property keeps its role and becomes `R1`, `R2`, …: `wdt:R1`, `p:R1`, `ps:R1`, `pq:R1`, `psv:R1`, `pqv:R1`,
  `wdtn:R1`, and `wd:R1` where a property id stands as an entity (`?x wdt:P1647 wd:P31`); full IRIs of the
  prop/direct, prop, prop/statement and prop/qualifier namespaces read as those prefixes;
- a literal becomes a typed slot: `NUM1`, `DATE1` (a date string or an `xsd:date`/`xsd:dateTime` literal), `LANG1` (a
  string compared with `lang(…)`), `STR1` (any other string); a language tag (`"x"@en`) is kept;
- variables become `?v0`, `?v1`, … in order of first appearance; PREFIX/BASE declarations are dropped; keywords and
  function names are upper-cased; a `.` right before `}` is dropped, so `{ a b c . }` and `{ a b c }` are one skeleton.

`fill(skeleton_text, values)` writes the query back from a skeleton and slot values (the inverse, up to variable
names, prefixes and spacing), and `coarse(text)` forgets roles and numbering (LC-QuAD 2.0's own `intermediate_sparql`
writes every entity `@@ent@@` and every property `@@pred@@`; `coarse` of both must agree).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kb_dumps.sparql_lex import Ambiguous, Token, tokenize

WD = "http://www.wikidata.org/"
# namespace IRI -> prefix; the prefix names the role a property plays in the query
NAMESPACES = {
    "wd": WD + "entity/",
    "wdt": WD + "prop/direct/",
    "wdtn": WD + "prop/direct-normalized/",
    "p": WD + "prop/",
    "ps": WD + "prop/statement/",
    "psv": WD + "prop/statement/value/",
    "pq": WD + "prop/qualifier/",
    "pqv": WD + "prop/qualifier/value/",
}
PROPERTY_ROLES = ("wdt", "wdtn", "p", "ps", "psv", "pq", "pqv")
_BY_LENGTH = sorted(NAMESPACES.items(), key=lambda kv: -len(kv[1]))  # longest namespace first
_ID = re.compile(r"[QP][1-9][0-9]*\Z")
_DATE = re.compile(r"[+-]?\d{3,4}-\d\d(-\d\d)?([T ][0-9:]+Z?)?\Z")
_XSD_DATES = {"xsd:date", "xsd:dateTime", "<http://www.w3.org/2001/XMLSchema#dateTime>",
              "<http://www.w3.org/2001/XMLSchema#date>"}
_BEFORE_SIGN = {"=", "<", ">", "<=", ">=", "!=", "(", ",", "*", "/"}  # a sign after these belongs to the number
_SLOT = re.compile(r"(?:(wd|wdt|wdtn|p|ps|psv|pq|pqv):)?\b(E|R|NUM|DATE|LANG|STR)(\d+)\b")
_COARSE_SLOT = re.compile(r"(?:\b(?:wd|wdt|wdtn|p|ps|psv|pq|pqv):)?\bR\d+\b|\bE\d+\b")


class SkeletonError(ValueError):
    """The query cannot be read into tokens (the lexer refused it)."""


@dataclass(frozen=True)
class Slot:
    """One slot of a skeleton: `name` as written (`E1`, `R2`, `NUM1`), its kind, and the gold value."""

    name: str
    kind: str  # entity | property | literal
    value: str  # wd:Q…, P… (the bare property id), or the literal's text as written (quotes removed)
    roles: tuple[str, ...] = ()  # property: the roles it is written with (wdt, p, ps, pq, …), in order
    type: str = ""  # literal: num | date | lang | str


@dataclass(frozen=True)
class Skeleton:
    """A query's skeleton text and its slots in order of first appearance."""

    text: str
    slots: tuple[Slot, ...] = field(default_factory=tuple)

    def slot(self, name: str) -> Slot | None:
        return next((s for s in self.slots if s.name == name), None)


def _wikidata_term(tok: Token) -> tuple[str, str] | None:
    """(prefix, local id) for a pname or full IRI of a Wikidata namespace holding a Q/P id, else None."""
    if tok.kind == "pname":
        prefix, _, local = tok.text.partition(":")
        if prefix in NAMESPACES and _ID.match(local):
            return prefix, local
        return None
    if tok.kind == "iri":
        for prefix, ns in _BY_LENGTH:
            if tok.value.startswith(ns) and _ID.match(tok.value[len(ns):]):
                return prefix, tok.value[len(ns):]
    return None


def _drop_prologue(tokens: list[Token]) -> list[Token]:
    out, i = [], 0
    while i < len(tokens):
        t = tokens[i]
        if t.kind == "word" and t.text.upper() == "PREFIX" and i + 2 < len(tokens):
            i += 3  # PREFIX name: <iri>
            continue
        if t.kind == "word" and t.text.upper() == "BASE" and i + 1 < len(tokens):
            i += 2
            continue
        out.append(t)
        i += 1
    return out


def _literal_type(tokens: list[Token], i: int) -> str:
    """num | date | lang | str for the string at tokens[i] (its datatype and what it is compared with)."""
    tok = tokens[i]
    nxt = tokens[i + 1] if i + 1 < len(tokens) else None
    if nxt is not None and nxt.text == "^^" and i + 2 < len(tokens):
        dt = tokens[i + 2].text
        if dt in _XSD_DATES:
            return "date"
        if re.search(r"(integer|decimal|double|float|int)\b", dt):
            return "num"
    if _DATE.match(tok.value.strip()):
        return "date"
    # `lang(?x) = 'en'`: LANG ( ?x ) = 'en' — the string right after `=` four tokens past LANG
    window = [t.text.upper() for t in tokens[max(0, i - 6):i]]
    if "LANG" in window and window[-1] in ("=", "!="):
        return "lang"
    return "str"


class _SkeletonWriter:
    """One pass over a query's tokens: the skeleton's words, its slots and the variables' new names."""

    def __init__(self, tokens: list[Token]):
        self.tokens = tokens
        self.names: dict[tuple[str, str], str] = {}  # (kind, value) -> slot name
        self.slots: dict[str, dict] = {}
        self.counters: dict[str, int] = {}
        self.variables: dict[str, str] = {}
        self.out: list[str] = []

    def slot_name(self, kind: str, key: str, letter: str, value: str, lit_type: str = "") -> str:
        if (kind, key) not in self.names:
            self.counters[letter] = self.counters.get(letter, 0) + 1
            name = f"{letter}{self.counters[letter]}"
            self.names[(kind, key)] = name
            self.slots[name] = {"kind": kind, "value": value, "roles": [], "type": lit_type}
        return self.names[(kind, key)]

    def wikidata_term(self, prefix: str, local: str) -> None:
        """An entity slot, or a property slot written with its role."""
        if local.startswith("Q"):
            self.out.append(self.slot_name("entity", local, "E", f"wd:{local}"))
            return
        role = "wd" if prefix == "wd" else prefix
        name = self.slot_name("property", local, "R", local)
        if role not in self.slots[name]["roles"]:
            self.slots[name]["roles"].append(role)
        self.out.append(f"{role}:{name}")

    def number(self, i: int, tok: Token) -> None:
        value = tok.text
        if self.out and self.out[-1] in ("-", "+") and i >= 2 and self.tokens[i - 2].text in _BEFORE_SIGN:
            sign = self.out.pop()  # a signed number is one literal
            value = value if sign == "+" else sign + value
        self.out.append(self.slot_name("literal", f"num:{value}", "NUM", value, "num"))

    def string(self, i: int, tok: Token) -> int:
        """The string's literal slot; how many tokens after it to skip (its datatype, when the slot's type says it)."""
        lit_type = _literal_type(self.tokens, i)
        letter = {"num": "NUM", "date": "DATE", "lang": "LANG", "str": "STR"}[lit_type]
        self.out.append(self.slot_name("literal", f"{lit_type}:{tok.value}", letter, tok.value, lit_type))
        nxt = self.tokens[i + 1] if i + 1 < len(self.tokens) else None
        if nxt is not None and nxt.text == "^^" and lit_type in ("num", "date"):
            return 2  # the datatype belongs to the slot's type
        return 0

    def token(self, i: int, tok: Token) -> int:
        """Write one token; how many tokens after it to skip."""
        wt = _wikidata_term(tok)
        if wt is not None:
            self.wikidata_term(*wt)
        elif tok.kind == "var":
            if tok.text[1:] not in self.variables:
                self.variables[tok.text[1:]] = f"?v{len(self.variables)}"
            self.out.append(self.variables[tok.text[1:]])
        elif tok.kind == "number":
            self.number(i, tok)
        elif tok.kind == "string":
            return self.string(i, tok)
        elif tok.kind == "word":
            self.out.append(tok.text.upper() if tok.text.lower() not in ("a",) else "a")
        else:  # bnodes, punctuation, IRIs outside Wikidata's namespaces: as written
            self.out.append(tok.text)
        return 0

    def skeleton(self) -> Skeleton:
        skip = 0
        for i, tok in enumerate(self.tokens):
            if skip:
                skip -= 1
                continue
            skip = self.token(i, tok)
        text = " ".join(self.out)
        text = re.sub(r"\s*\.\s*}", " }", text)  # `a b c . }` = `a b c }`
        text = re.sub(r"\(\s+", "( ", text)
        text = " ".join(text.split())
        return Skeleton(text, tuple(Slot(n, s["kind"], s["value"], tuple(s["roles"]), s["type"])
                                    for n, s in self.slots.items()))


def skeleton(sparql: str) -> Skeleton:
    """The skeleton of one query (see the module docstring). SkeletonError when the lexer refuses the text."""
    try:
        tokens = _drop_prologue(tokenize(sparql))
    except Ambiguous as e:
        raise SkeletonError(f"query cannot be tokenised: {e}") from e
    except Exception as e:  # the lexer's own errors on broken text
        raise SkeletonError(f"query cannot be tokenised: {' '.join(str(e).split())[:200]}") from e
    return _SkeletonWriter(tokens).skeleton()


def _quote(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"


def fill(skeleton_text: str, values: dict[str, str]) -> str:
    """SPARQL from a skeleton and slot values (`E1` -> `wd:Q5` or `Q5`, `R1` -> `P31`, `NUM1` -> `3`, …).

    A slot without a value stays as written (the result then does not parse: a missing slot is not guessed).
    Dates are written as `xsd:dateTime` literals, numbers bare, other literals single-quoted.
    """
    def one(m: re.Match[str]) -> str:
        role, letter, n = m.group(1), m.group(2), m.group(3)
        name = f"{letter}{n}"
        if name not in values:
            return m.group(0)
        v = values[name]
        if letter == "E":
            return v if ":" in v else f"wd:{v}"
        if letter == "R":
            pid = v.rsplit(":", 1)[-1].rsplit("/", 1)[-1]
            return f"{role or 'wdt'}:{pid}"
        prefix = f"{role}:" if role else ""
        if letter == "NUM":
            return prefix + (v if re.fullmatch(r"[+-]?\d+(\.\d+)?([eE][+-]?\d+)?", v) else _quote(v))
        if letter == "DATE":
            if re.fullmatch(r"-?\d{1,4}", v):  # a bare year: the first instant of that year
                v = f"{int(v):04d}-01-01T00:00:00Z"
            return prefix + _quote(v) + "^^xsd:dateTime"
        return prefix + _quote(v)

    return _SLOT.sub(one, skeleton_text)


def coarse(skeleton_text: str) -> str:
    """The skeleton with roles and slot numbers forgotten: entities `ENT`, properties `PRED` (LC-QuAD's view)."""
    return _COARSE_SLOT.sub(lambda m: "ENT" if m.group(0).startswith("E") else "PRED", skeleton_text)


def lcquad_intermediate_skeleton(intermediate: str) -> str:
    """LC-QuAD 2.0's `intermediate_sparql` (`@@ent@@`, `@@pred@@`) through the same normaliser, then `coarse`."""
    text = intermediate.replace("@@ent@@", " wd:Q1 ").replace("@@pred@@", " wdt:P1 ")
    return coarse(skeleton(text).text)
