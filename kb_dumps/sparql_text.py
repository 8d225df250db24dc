"""SPARQL text, the one module every layer uses: escaping (IRIs, string literals), prefixes (`with_prefixes`),
masking, the query form and the outer LIMIT.

Every string written into a query (the assembler's writer, the endpoint's ingest queries, explore's graphs)
goes through `escape_string` / `iri`, so a label or literal full of SPARQL syntax never changes a query's structure.

Never a safety check: whether a query may run (SERVICE, updates) is decided from the tokens Oxigraph reads,
in kb_dumps/sparql_check.py; a mask can be fooled by escapes such as `ex:p\\#`.

No parser: a query is *masked* (strings, IRIs and comments blanked out with spaces, same length) so
that keywords and braces are found by position. rdflib's parser costs ~100 ms per query, more than a
loopback round trip; the tests check every rewrite with pyoxigraph's parser instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LEXICAL = re.compile(
    r'"""(?:[^"\\]|\\.|"(?!""))*"""'  # long strings
    r"|'''(?:[^'\\]|\\.|'(?!''))*'''"
    r'|"(?:[^"\\\n]|\\.)*"'  # short strings
    r"|'(?:[^'\\\n]|\\.)*'"
    r"|<[^<>\"{}|^`\\\s]*>"  # IRIs
    r"|#[^\n]*",  # comments
    re.S,
)
_FORM = re.compile(r"(?<![:\w?$])(SELECT|ASK|CONSTRUCT|DESCRIBE)(?![:\w])", re.I)
_LIMIT = re.compile(r"(?<![:\w?$])LIMIT\s+(\d+)", re.I)
_VALUES_HEAD = re.compile(r"(?<![:\w?$])VALUES\s*(?:[?$]\w+|\([^()]*\))\s*$", re.I)

# An IRI that may go between <> in a query; an id that does not match is never written into a query.
IRIREF = re.compile(r'[^<>"{}|^`\\\x00-\x20]+')
LANG_TAG = re.compile(r"[A-Za-z]{1,8}(?:-[A-Za-z0-9]{1,8})*")


def mask(query: str) -> str:
    """The query with strings, IRIs and comments replaced by spaces of the same length."""
    return _LEXICAL.sub(lambda m: " " * len(m.group()), query)


def iri(value: str) -> str:
    """`<value>` for a query; ValueError when the value cannot be an IRIREF (it would change the query)."""
    if not IRIREF.fullmatch(value):
        raise ValueError(f"not an IRI that can be written into a query: {value[:80]!r}")
    return f"<{value}>"


_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
# Characters SPARQL forbids inside <…> (IRIREF): they would end the IRI or break the query.
_BAD_IRI = re.compile(r'[<>"{}|^`\\\x00-\x20\x7f]')
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")


def escape_string(value: str) -> str:
    """A SPARQL string literal (with quotes) whose content is exactly `value` (backslash, quotes, line breaks,
    tab, backspace and form feed escaped): the one escaper of the project."""
    return '"' + "".join(_ESCAPES.get(ch, ch) for ch in value) + '"'


def iri_problem(value: str) -> str | None:
    """Why `value` cannot be written as an absolute `<value>`, or None when it can."""
    if not isinstance(value, str) or not value:
        return "empty IRI"
    if _BAD_IRI.search(value):
        return f"IRI {value[:80]!r} contains a character not allowed in an IRI (<>\"{{}}|^`\\ or whitespace)"
    if not _SCHEME.match(value):
        return f"IRI {value[:80]!r} is not absolute (it needs a scheme such as http:)"
    return None


class Prefixes:
    """Declares the prefixes (name → namespace) a query uses but does not declare, as WDQS predeclares them (gold
    queries often omit them). One pattern for all prefixes: a server calls it on every query."""

    _DECLARED = re.compile(r"(?i)PREFIX\s+([A-Za-z][\w.-]*)?\s*:")

    def __init__(self, prefixes: dict[str, str]):
        self.prefixes = prefixes
        names = sorted(prefixes, key=len, reverse=True)
        self._used = re.compile(r"(?<![\w<])(" + "|".join(map(re.escape, names)) + "):") if names else None

    def __call__(self, query: str) -> str:
        if self._used is None:
            return query
        used = set(self._used.findall(query))
        if not used:
            return query
        declared = {m.group(1) for m in self._DECLARED.finditer(query)}
        head = [f"PREFIX {p}: <{ns}>" for p, ns in self.prefixes.items() if p in used and p not in declared]
        return "\n".join([*head, query]) if head else query


def with_prefixes(query: str, prefixes: dict[str, str]) -> str:
    """`query` with the `prefixes` it uses but does not declare declared first."""
    return Prefixes(prefixes)(query)


@dataclass(frozen=True)
class QueryShape:
    """Where the parts of a query that the store cares about are."""

    form: str | None  # select | ask | construct | describe; None when no query form was found
    limit: int | None  # the outer LIMIT, if any
    limit_span: tuple[int, int] | None  # position of the LIMIT's digits
    insert_at: int  # where an outer LIMIT clause may be inserted (before a trailing VALUES block)


def _top_level_groups(masked: str, start: int) -> list[tuple[int, int]]:
    """Spans of the `{ … }` groups at brace depth 0 and outside parentheses (EXISTS in an expression
    opens a group inside parentheses: that is not the WHERE clause)."""
    groups: list[tuple[int, int]] = []
    braces = parens = 0
    open_at = -1
    for i in range(start, len(masked)):
        c = masked[i]
        if c == "(" and braces == 0:
            parens += 1
        elif c == ")" and braces == 0:
            parens = max(parens - 1, 0)
        elif c == "{":
            if braces == 0 and parens == 0:
                open_at = i
            braces += 1
        elif c == "}":
            braces -= 1
            if braces == 0 and open_at >= 0:
                groups.append((open_at, i + 1))
                open_at = -1
            braces = max(braces, 0)
    return groups


def shape(query: str) -> QueryShape:
    masked = mask(query)
    m = _FORM.search(masked)
    if m is None:
        return QueryShape(None, None, None, len(query.rstrip()))
    form = m.group(1).lower()
    groups = _top_level_groups(masked, m.end())
    end = len(query.rstrip())
    tail_start = m.end()
    insert_at = end
    if groups:
        last = groups[-1]
        # A trailing `VALUES ?x { … }` after the solution modifiers is a group too.
        if len(groups) > 1 and _VALUES_HEAD.search(masked[groups[-2][1]:last[0]]):
            head = _VALUES_HEAD.search(masked[groups[-2][1]:last[0]])
            insert_at = groups[-2][1] + head.start()  # type: ignore[union-attr]
            tail_start = groups[-2][1]
        else:
            tail_start = last[1]
    modifiers = masked[tail_start:insert_at]
    limit = _LIMIT.search(modifiers)
    if limit is None:
        return QueryShape(form, None, None, insert_at)
    span = (tail_start + limit.start(1), tail_start + limit.end(1))
    return QueryShape(form, int(limit.group(1)), span, insert_at)


def with_row_cap(query: str, row_cap: int) -> tuple[str, bool]:
    """The query with an outer LIMIT of at most `row_cap + 1` (one more row than kept shows that the cap cut
    the result), and whether that cap applies. ASK queries and a smaller LIMIT are left as they are."""
    s = shape(query)
    if s.form not in ("select", "construct", "describe"):
        return query, False
    cap = row_cap + 1
    if s.limit is None:
        head, tail = query[:s.insert_at].rstrip(), query[s.insert_at:]
        return f"{head}\nLIMIT {cap}{(' ' + tail.lstrip()) if tail.strip() else ''}", True
    if s.limit > cap:
        a, b = s.limit_span  # type: ignore[misc]
        return query[:a] + str(cap) + query[b:], True
    return query, False
