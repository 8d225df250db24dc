"""Checks and escapes for text that enters a SPARQL query: IRIs, literals, names, built-in calls.

Every string the writer emits passes through here, so that a label or literal full of SPARQL
syntax can never change the structure of an assembled query.
"""

from __future__ import annotations

import re

from kb_dumps.profiles import XSD

# SPARQL 1.1 built-in calls the writer accepts, with their (min, max) argument counts (None: any);
# a name outside this table is an error, never text.
_ANY = 10_000
BUILTIN_ARITY: dict[str, tuple[int, int]] = {
    **dict.fromkeys(("STR", "LANG", "DATATYPE", "BOUND", "IRI", "URI", "ABS", "CEIL", "FLOOR", "ROUND", "STRLEN",
                     "UCASE", "LCASE", "ENCODE_FOR_URI", "YEAR", "MONTH", "DAY", "HOURS", "MINUTES", "SECONDS",
                     "TIMEZONE", "TZ", "MD5", "SHA1", "SHA256", "SHA384", "SHA512", "ISIRI", "ISURI", "ISBLANK",
                     "ISLITERAL", "ISNUMERIC"), (1, 1)),
    **dict.fromkeys(("LANGMATCHES", "CONTAINS", "STRSTARTS", "STRENDS", "STRBEFORE", "STRAFTER", "STRLANG",
                     "STRDT", "SAMETERM"), (2, 2)),
    **dict.fromkeys(("RAND", "NOW", "UUID", "STRUUID"), (0, 0)),
    "BNODE": (0, 1), "CONCAT": (0, _ANY), "COALESCE": (0, _ANY), "IF": (3, 3),
    "REGEX": (2, 3), "SUBSTR": (2, 3), "REPLACE": (3, 4),
}
BUILTINS = frozenset(BUILTIN_ARITY)
# Casts written as `xsd:integer(?x)`.
CASTS = frozenset({"integer", "decimal", "double", "float", "string", "boolean", "dateTime", "date"})

_VAR_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
# Characters SPARQL forbids inside <…> (IRIREF): they would end the IRI or break the query.
_BAD_IRI_RE = re.compile(r'[<>"{}|^`\\\x00-\x20\x7f]')
_LANG_RE = re.compile(r"[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*")
_NUMERIC_FORMS = {
    XSD + "integer": re.compile(r"[+-]?\d+"),
    XSD + "decimal": re.compile(r"[+-]?\d*\.\d+"),
    XSD + "double": re.compile(r"[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+"),
    XSD + "boolean": re.compile(r"true|false"),
}
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def escape_string(value: str) -> str:
    """A SPARQL string literal (with quotes) whose content is exactly `value`."""
    return '"' + "".join(_ESCAPES.get(ch, ch) for ch in value) + '"'


def iri_problem(iri: str) -> str | None:
    """Why `iri` cannot be written as `<iri>`, or None when it can."""
    if not isinstance(iri, str) or not iri:
        return "empty IRI"
    if _BAD_IRI_RE.search(iri):
        return f"IRI {iri[:80]!r} contains a character not allowed in an IRI (<>\"{{}}|^`\\ or whitespace)"
    if not _SCHEME_RE.match(iri):
        return f"IRI {iri[:80]!r} is not absolute (it needs a scheme such as http:)"
    return None
