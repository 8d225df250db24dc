"""What XML cannot carry: a result is checked before it is written as SPARQL XML or RDF/XML (kb_dumps/results.py).

XML 1.0 has no way to write some characters at all, not even as `&#…;` references: U+0000, the other C0
controls but tab, line feed and carriage return, lone surrogates, U+FFFE and U+FFFF. A literal holding one
cannot be written as XML that a parser accepts, and replacing it would hand the client another value, so
such a result is refused (`Unwritable`; /sparql answers 406) naming the character and the formats that
can carry it (JSON, CSV, TSV, Turtle, N-Triples). RDF/XML also writes each predicate as an element name, a namespace plus an XML name
(NCName) at the end of the IRI; a predicate IRI with no such end (`http://x/1`, `http://x/`, `urn:x:1`)
cannot be written there at all (pyoxigraph would write the invalid `<oxprefix:>`), and is refused the same
way.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from kb_dumps.stage_errors import QueryError

if TYPE_CHECKING:
    from kb_dumps.store_types import QueryResult, Term

# XML 1.0 (fifth edition) §2.2 Char: everything else cannot appear in a document.
NOT_XML_CHAR = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
# the same on UTF-8 bytes that a serializer wrote (no surrogates there): C0 controls, U+FFFE, U+FFFF
NOT_XML_BYTES = re.compile(b"[\x00-\x08\x0b\x0c\x0e-\x1f]|\xef\xbf[\xbe\xbf]")
# §2.3 NameStartChar / NameChar without ':' (an NCName, Namespaces in XML 1.0 §3)
_START = ("A-Z_a-z\xc0-\xd6\xd8-\xf6\xf8-\u02ff\u0370-\u037d\u037f-\u1fff\u200c-\u200d\u2070-\u218f"
          "\u2c00-\u2fef\u3001-\ud7ff\uf900-\ufdcf\ufdf0-\ufffd\U00010000-\U000effff")
_NAME = _START + "\\-.0-9\xb7\u0300-\u036f\u203f-\u2040"
_START_CHAR, _NAME_CHAR = re.compile(f"[{_START}]"), re.compile(f"[{_NAME}]")

OTHER_RESULTS = "ask for application/sparql-results+json, text/csv or text/tab-separated-values"
OTHER_GRAPHS = "ask for text/turtle or application/n-triples"


class Unwritable(QueryError):
    """A result that the asked format cannot carry (XML 1.0 has no way to write it): /sparql answers 406."""

    def __init__(self, message: str):
        super().__init__(message, stage="execute")


def has_local_name(iri: str) -> bool:
    """Whether the IRI ends in an XML name (the element name RDF/XML writes for it as a predicate): the run of
    name characters at its end holds a character a name may start with."""
    i = len(iri)
    while i > 0 and _NAME_CHAR.match(iri[i - 1]):
        i -= 1
    return _START_CHAR.search(iri, i) is not None


def _bad_char(term: Term | None) -> str | None:
    if term is None:
        return None
    for value in (term.get("value", ""), term.get("datatype", ""), term.get("xml:lang", "")):
        m = NOT_XML_CHAR.search(value)
        if m:
            return f"U+{ord(m.group()):04X}"
    return None


def check_xml(res: QueryResult, rdf_xml: bool) -> None:
    """Unwritable when `res` cannot be written as XML (SPARQL XML results, or RDF/XML for a graph)."""
    names = ("subject", "predicate", "object") if res.kind == "graph" else tuple(f"?{v}" for v in res.vars)
    other = OTHER_GRAPHS if rdf_xml else OTHER_RESULTS
    what = "RDF/XML" if rdf_xml else "SPARQL XML results"
    for i, row in enumerate(res.rows, 1):
        for name, term in zip(names, row, strict=False):
            char = _bad_char(term)
            if char is not None:
                raise Unwritable(f"row {i}, {name} holds the character {char}, which XML 1.0 cannot carry, "
                                 f"so the result cannot be written as {what}; {other}")
        if rdf_xml and len(row) == 3 and row[1] is not None and not has_local_name(row[1]["value"]):
            iri = row[1]["value"]
            raise Unwritable(f"the predicate <{iri[:200]}> does not end in an XML name, so it cannot be "
                             f"written as an RDF/XML element; {other}")
