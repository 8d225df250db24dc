"""The safety check of a query, decided from a parse (rdflib's SPARQL grammar), never from its text.

A query is refused before it runs when its syntax tree holds a `SERVICE` (pyoxigraph would call the
network), when it is an update, or when the checker's parser cannot read it: a query this parser does
not understand cannot be shown to be safe, and pyoxigraph might read it differently (that is how
`ex:p\\#` once hid a SERVICE from a masking regex). The query workers are also cut off from the
network (kb_dumps/sandbox.py) for what a parser disagreement could still let through.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from typing import Any

from kb_dumps.errors import QueryError

WIKIBASE_ONTOLOGY = "http://wikiba.se/ontology#"
_LOCK = threading.Lock()  # pyparsing's packrat cache is shared state: one parse at a time per process
_PARSER: Any = None


@dataclass(frozen=True)
class QueryFacts:
    """What the store needs to know about a query that passed the check."""

    form: str  # select | ask | construct | describe
    has_dataset: bool  # FROM / FROM NAMED: the query names its own dataset


class RefusedQuery(QueryError):
    """A query refused before it runs. `refusal`: service | update | unparsable (the server maps it to 400 / 403)."""

    def __init__(self, message: str, refusal: str):
        super().__init__(message, stage="execute")
        self.refusal = refusal


def _service_post_parse(self: Any, instring: str, loc: int, tokens: Any) -> Any:
    """rdflib's ServiceGraphPattern action re-searches the *whole* query for a service clause to keep its text
    (`service_string`, only used to forward the clause to the remote host): with a `#` inside an earlier IRI
    the search fails and a valid query does not parse, and with many clauses it is quadratic. Nothing here runs
    SERVICE, so the node is built from the tokens alone."""
    from rdflib.plugins.sparql.parserutils import CompValue, ParamValue

    res = CompValue(self.name)
    for t in tokens:
        if isinstance(t, ParamValue):
            res[t.name] = t.tokenList
    return res


def _parser() -> Any:
    global _PARSER
    if _PARSER is None:
        from rdflib.plugins.sparql import parser

        parser.ServiceGraphPattern.postParse = _service_post_parse.__get__(parser.ServiceGraphPattern)
        _PARSER = parser
    return _PARSER


def _walk(tree: Any) -> Any:
    """Every node of an rdflib parse tree (iteratively: a deeply nested query must not overflow the stack)."""
    from pyparsing import ParseResults

    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, dict):  # CompValue is an OrderedDict
            stack.extend(node.values())
        elif isinstance(node, (list, tuple, ParseResults)):
            stack.extend(node)


def _field(node: Any, key: str) -> Any:
    """A CompValue's field, or None: CompValue.get returns the *key name* for a missing key."""
    return node[key] if key in node else None


def _prefixes(prologue: Any) -> dict[str, str]:
    return {_field(d, "prefix") or "": str(d["iri"]) for d in prologue if getattr(d, "name", "") == "PrefixDecl"}


def _is_label_service(term: Any, prefixes: dict[str, str]) -> bool:
    """`wikibase:label` (undeclared: WDQS predeclares it) or its full IRI."""
    from rdflib.term import URIRef

    if isinstance(term, URIRef):
        return str(term) == WIKIBASE_ONTOLOGY + "label"
    if getattr(term, "name", "") == "pname" and _field(term, "localname") == "label":
        prefix = _field(term, "prefix") or ""
        return prefixes.get(prefix, WIKIBASE_ONTOLOGY if prefix == "wikibase" else "") == WIKIBASE_ONTOLOGY
    return False


def _parse_error(e: Exception) -> str:
    text = str(e).split("\n")[0]
    return text[:300]


@functools.lru_cache(maxsize=2048)
def check_query(query: str, allow_label_service: bool = False) -> QueryFacts:
    """The facts of a safe query; RefusedQuery for SERVICE, an update, or a query the parser cannot read.

    `allow_label_service`: `SERVICE wikibase:label` passes (only for a Wikidata Query Service endpoint, which
    runs it itself); any other SERVICE is still refused."""
    parser = _parser()
    with _LOCK:
        try:
            tree = parser.parseQuery(query)
        except RecursionError:
            raise RefusedQuery("the query is nested too deeply to be checked; it is refused", "unparsable") from None
        except Exception as e:  # noqa: BLE001 - pyparsing raises ParseException and, inside actions, anything
            try:
                parser.parseUpdate(query)
            except Exception:  # noqa: BLE001 - not an update either: a malformed query
                raise RefusedQuery(f"the query does not parse: {_parse_error(e)}", "unparsable") from None
            raise RefusedQuery("SPARQL Update is refused: the store is read-only for queries", "update") from None
    prologue, body = tree[0], tree[1]
    prefixes = _prefixes(prologue)
    for node in _walk(body):
        if getattr(node, "name", None) == "ServiceGraphPattern":
            label = _is_label_service(_field(node, "term"), prefixes)
            if label and allow_label_service:
                continue
            if label:
                raise RefusedQuery("SERVICE wikibase:label is refused: only a Wikidata Query Service endpoint "
                                   "understands it; ask for rdfs:label explicitly", "service")
            raise RefusedQuery("SERVICE is refused: queries run offline on the local store; remove the SERVICE "
                               "clause (for wikibase:label, ask for rdfs:label explicitly)", "service")
    form = body.name.removesuffix("Query").lower()
    return QueryFacts(form=form, has_dataset=bool(_field(body, "datasetClause")))
