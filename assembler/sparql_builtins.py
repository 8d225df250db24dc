"""The SPARQL grammar facts the writer checks names and literals against: the built-in calls and their arities, the
casts, variable names, language tags and the lexical forms of numeric literals. (Escaping is
`kb_dumps.sparql_text`, the one SPARQL text module.)
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

VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NUMERIC_FORMS = {
    XSD + "integer": re.compile(r"[+-]?\d+"),
    XSD + "decimal": re.compile(r"[+-]?\d*\.\d+"),
    XSD + "double": re.compile(r"[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+"),
    XSD + "boolean": re.compile(r"true|false"),
}
