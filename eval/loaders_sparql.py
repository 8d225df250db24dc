"""Gold SPARQL preparation: add missing standard prefixes, rewrite Blazegraph's label service, check syntax.

Benchmark queries were written for the Wikidata Query Service (Blazegraph): they often omit
`PREFIX` lines and some use `SERVICE wikibase:label`, which pyoxigraph would try to reach over the
network. Every gold query passes through `prepare_gold_sparql` before anything runs it; what cannot
be rewritten makes the record unusable with the reason, never disappears.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from rdflib.plugins.sparql.algebra import translateQuery
from rdflib.plugins.sparql.parser import parseQuery

from kb_dumps.profiles import RDFS, SCHEMA, SKOS, WIKIDATA_PREFIXES, get_profile

# rdflib warns "… does not look like a valid URI" for a prefixed name with an escaped `#` (`:pets\#weight`, valid
# SPARQL, what the Spider4SPARQL files write): the query is read right and the warning tells a user nothing to do.
logging.getLogger("rdflib.term").setLevel(logging.ERROR)

WIKIBASE = WIKIDATA_PREFIXES["wikibase"]
BIGDATA = "http://www.bigdata.com/rdf#"

# Strings, IRIs and comments: masked out (same length) so keywords inside them are not seen.
_OPAQUE = re.compile(
    r'"""(?:[^"\\]|\\.|"(?!""))*"""'
    r"|'''(?:[^'\\]|\\.|'(?!''))*'''"
    r'|"(?:[^"\\\n]|\\.)*"'
    r"|'(?:[^'\\\n]|\\.)*'"
    r"|<[^<>\"{}|^`\\\s]*>"
    r"|#[^\n]*",
    re.S,
)
# The rest of the Wikidata Query Service's standard prefixes (kb_dumps.profiles keeps the common
# ones); gold queries use them undeclared too (RuBQ uses psn:).
WDQS_EXTRA_PREFIXES = {
    "wdtn": "http://www.wikidata.org/prop/direct-normalized/",
    "psn": "http://www.wikidata.org/prop/statement/value-normalized/",
    "pqn": "http://www.wikidata.org/prop/qualifier/value-normalized/",
    "pr": "http://www.wikidata.org/prop/reference/",
    "prv": "http://www.wikidata.org/prop/reference/value/",
    "prn": "http://www.wikidata.org/prop/reference/value-normalized/",
    "wdno": "http://www.wikidata.org/prop/novalue/",
    "wdref": "http://www.wikidata.org/reference/",
    "wdv": "http://www.wikidata.org/value/",
    "wdata": "https://www.wikidata.org/wiki/Special:EntityData/",
}
_PREFIX_DECL = re.compile(r"(?i)\bPREFIX\s+([A-Za-z][\w.-]*)?:\s*<([^>]*)>")
_SERVICE = re.compile(r"(?i)(?<![:\w])SERVICE\s+(?:SILENT\s+)?")
_LABEL_SUFFIXES = {"Label": RDFS + "label", "Description": SCHEMA + "description", "AltLabel": SKOS + "altLabel"}
_BLAZEGRAPH_ONLY = re.compile(r"(?<![\w])(bd|hint|bds|gas):[\w]+")


@dataclass
class PreparedQuery:
    """A gold query ready to run offline, or the reason it cannot be."""

    sparql: str | None
    reason: str | None = None
    notes: list[str] = field(default_factory=list)


class UnusableQuery(Exception):
    pass


def mask_opaque(query: str) -> str:
    """The query with strings, IRIs and comments blanked out (positions kept)."""
    return _OPAQUE.sub(lambda m: " " * len(m.group(0)), query)


def declared_prefixes(query: str) -> dict[str, str]:
    return {(m.group(1) or ""): m.group(2) for m in _PREFIX_DECL.finditer(query)}


def add_missing_prefixes(query: str, prefixes: dict[str, str]) -> tuple[str, list[str]]:
    """Prepend declarations for the standard prefixes the query uses but does not declare."""
    have = declared_prefixes(query)
    masked = mask_opaque(query)
    missing = [p for p in prefixes if p not in have and re.search(rf"(?<![\w:?$]){re.escape(p)}:", masked)]
    if not missing:
        return query, []
    head = "".join(f"PREFIX {p}: <{prefixes[p]}>\n" for p in missing)
    return head + query, missing


def _matching_brace(masked: str, open_at: int) -> int:
    depth = 0
    for i in range(open_at, len(masked)):
        if masked[i] == "{":
            depth += 1
        elif masked[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    raise UnusableQuery("unbalanced braces after SERVICE")


def _enclosing_group(masked: str, start: int, end: int) -> tuple[int, int]:
    depth = 0
    i = start - 1
    while i >= 0:
        if masked[i] == "}":
            depth += 1
        elif masked[i] == "{":
            if depth == 0:
                break
            depth -= 1
        i -= 1
    return i, (_matching_brace(masked, i) if i >= 0 else len(masked))


def _term_text(t) -> str:
    return t.n3()


def _inner_triples(inner: str, prologue: str) -> list[tuple]:
    try:
        algebra = translateQuery(parseQuery(prologue + "SELECT * WHERE {" + inner + "}")).algebra
    except Exception as e:  # rdflib raises pyparsing and plain exceptions alike
        raise UnusableQuery(f"cannot read the SERVICE wikibase:label block: {e}") from e
    triples: list[tuple] = []

    def walk(node) -> None:
        if getattr(node, "name", None) == "BGP":
            triples.extend(node["triples"])
        elif isinstance(node, dict):
            for v in node.values():
                walk(v)

    walk(algebra)
    return triples


def rewrite_label_service(query: str) -> tuple[str, list[str]]:
    """Replace each `SERVICE wikibase:label { ... }` by plain patterns; other SERVICE blocks are refused.

    Manual mode (`?x rdfs:label ?l` inside the block) becomes `?x rdfs:label ?l FILTER(LANG(?l) = "en")`,
    required when the block is the only content of its group (the block *is* the question) and
    OPTIONAL otherwise (a display label must not remove rows). Automatic mode (`?xLabel`,
    `?xDescription`, `?xAltLabel` for a variable `?x` of the query) adds
    `OPTIONAL { ?x rdfs:label ?xLabel FILTER(LANG(?xLabel) = "en") }` (schema:description,
    skos:altLabel). Blazegraph falls back to the id when no label exists; here the variable stays unbound.
    """
    notes: list[str] = []
    prologue = "".join(f"PREFIX {p}: <{iri}>\n" for p, iri in
                       {**WIKIDATA_PREFIXES, **WDQS_EXTRA_PREFIXES, "bd": BIGDATA,
                        **declared_prefixes(query)}.items())
    while True:
        masked = mask_opaque(query)
        m = _SERVICE.search(masked)
        if not m:
            return query, notes
        brace = masked.find("{", m.end())
        if brace < 0:
            raise UnusableQuery("SERVICE without a group")
        # The regex ran on the masked text, so read the target (often an <IRI>) from the query itself.
        target = re.sub(r"(?i)^SILENT\s+", "", query[m.start() + len("SERVICE"):brace].strip())
        if target not in ("wikibase:label", f"<{WIKIBASE}label>"):
            raise UnusableQuery(f"SERVICE {target} needs a remote endpoint and has no offline rewrite")
        close = _matching_brace(masked, brace)
        lang, manual = "en", []
        for s, p, o in _inner_triples(query[brace + 1:close], prologue):
            if str(p) == WIKIBASE + "language":
                langs = [x.strip() for x in str(o).split(",") if x.strip() and "AUTO_LANGUAGE" not in x]
                lang = langs[0] if langs else "en"
            elif str(s) != BIGDATA + "serviceParam":
                manual.append((s, p, o))
        g_open, g_close = _enclosing_group(masked, m.start(), close)
        rest = masked[g_open + 1:m.start()] + masked[close + 1:g_close]
        standalone = not rest.replace(".", " ").strip()
        parts = []
        for s, p, o in manual:
            pattern = f"{_term_text(s)} {_term_text(p)} {_term_text(o)} ."
            if o.__class__.__name__ == "Variable":
                pattern += f' FILTER(LANG({_term_text(o)}) = "{lang}")'
            parts.append(pattern if standalone else f"OPTIONAL {{ {pattern} }}")
        bound_inside = {str(o) for _, _, o in manual}
        rest_query = query[:m.start()] + query[close + 1:]
        auto = []
        for var, base, suffix in re.findall(r"[?$]((\w+?)(Label|Description|AltLabel))\b", mask_opaque(rest_query)):
            if var in bound_inside or var in auto:
                continue
            if re.search(rf"[?$]{re.escape(base)}\b", mask_opaque(rest_query)):
                auto.append(var)
                pred = _LABEL_SUFFIXES[suffix]
                parts.append(f'OPTIONAL {{ ?{base} <{pred}> ?{var} FILTER(LANG(?{var}) = "{lang}") }}')
        query = query[:m.start()] + " ".join(parts) + query[close + 1:]
        notes.append(f"rewrote SERVICE wikibase:label ({len(manual)} manual pattern(s)"
                     + (f", automatic {', '.join('?' + v for v in auto)}" if auto else "") + f", language {lang})")


def standard_prefixes(kb: str) -> dict[str, str]:
    """The prefixes a query for this KB may use without declaring them."""
    prefixes = dict(get_profile(kb).prefixes)
    if kb == "wikidata":
        prefixes.update(WDQS_EXTRA_PREFIXES)
    return prefixes


def syntax_error(query: str) -> str | None:
    """Why the query does not parse (rdflib parser + algebra, which resolves prefixes), or None."""
    try:
        translateQuery(parseQuery(query))
    except Exception as e:  # pyparsing.ParseException, unknown prefixes and friends
        return " ".join(str(e).split())[:300]
    return None


def prepare_gold_sparql(sparql: str | None, kb: str = "wikidata", check_syntax: bool = True) -> PreparedQuery:
    """Make a benchmark's gold query runnable offline, or say why it cannot be."""
    if sparql is None or not str(sparql).strip():
        return PreparedQuery(None, None)
    query = str(sparql).strip()
    notes: list[str] = []
    try:
        query, notes = rewrite_label_service(query)
    except UnusableQuery as e:
        return PreparedQuery(query, f"Blazegraph-only query: {e}")
    if not re.search(r"(?<![\w:?$])bd:", mask_opaque(_PREFIX_DECL.sub(" ", query))):
        # The rewrite removed the only uses of bd:; its declaration alone would trip the check below.
        query = re.sub(rf"(?i)\bPREFIX\s+bd:\s*<{re.escape(BIGDATA)}>\s*", "", query)
    left = _BLAZEGRAPH_ONLY.search(mask_opaque(query))
    if left or BIGDATA in query:
        what = left.group(0) if left else BIGDATA
        return PreparedQuery(query, f"Blazegraph-only query: uses {what!r}, which has no offline equivalent", notes)
    query, added = add_missing_prefixes(query, standard_prefixes(kb))
    if added:
        notes.append("added prefixes " + ", ".join(f"{p}:" for p in added))
    if check_syntax and (err := syntax_error(query)):
        return PreparedQuery(query, f"gold SPARQL does not parse: {err}", notes)
    return PreparedQuery(query, None, notes)
