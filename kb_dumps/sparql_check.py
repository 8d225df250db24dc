"""The safety check of a query, decided from the tokens Oxigraph reads (kb_dumps/sparql_lex.py), never from a mask.

A query is refused before it runs when Oxigraph would read a `SERVICE` in it (it would call the network), when
it is an update, when it has no query form, or when its text can be read two ways (`Ambiguous`: a comment a
`\\r` ends, a `\\u` escape outside strings and IRIs, …). Oxigraph matches keywords without a word boundary
(`trueSERVICE<…>{…}` is `true` then `SERVICE`), so any word or prefix that holds "service" is refused.
Whether the rest of the query is well-formed is for Oxigraph's own parser to say when the query runs.

The scan is linear and takes no lock: it runs in the caller, within the size bound of the request, in well
under a millisecond per kilobyte. Depth and length bounds stop a query that would overflow the engine's
recursive parser or evaluator (a worker death) before it runs. What goes to a remote endpoint is `sent`, the
query re-written from these tokens, so that an engine that lexes differently reads the same query.
The query workers are also cut off from the network (kb_dumps/sandbox.py) where the OS allows it.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

from kb_dumps.sparql_lex import Ambiguous, Token, canonical, prefixes, tokenize
from kb_dumps.stage_errors import QueryError

WIKIBASE_ONTOLOGY = "http://wikiba.se/ontology#"
FORMS = ("SELECT", "ASK", "CONSTRUCT", "DESCRIBE")
UPDATE_WORDS = ("INSERT", "DELETE", "LOAD", "CLEAR", "CREATE", "DROP", "COPY", "MOVE", "ADD", "WITH")
# Oxigraph's parser and evaluator recurse per nesting level and per operator of one expression: past these
# bounds the worker's stack overflows (a crash, not an error), so the check refuses first.
# (measured on pyoxigraph 0.5 with an 8 MB stack: 5,000 chained `+` or 1,000 nested brackets run, 10,000 / 5,000 crash)
MAX_DEPTH = int(os.environ.get("KBQA_QUERY_MAX_DEPTH", 200))  # open brackets at once
MAX_OPERATORS = int(os.environ.get("KBQA_QUERY_MAX_OPERATORS", 2000))  # operators along one path of open brackets
_OPERATORS = {"+", "-", "*", "/", "&&", "||", "=", "!=", "<", ">", "<=", ">=", "!", "|", "^"}
_CHAINING_WORDS = {"UNION", "OPTIONAL", "MINUS", "FILTER", "BIND", "VALUES", "GRAPH"}  # each nests the group once more


@dataclass(frozen=True)
class QueryFacts:
    """What the store needs to know about a query that passed the check."""

    form: str  # select | ask | construct | describe
    has_dataset: bool  # FROM / FROM NAMED: the query names its own dataset
    sent: str = ""  # the query re-written from its tokens: what goes to a remote endpoint


class RefusedQuery(QueryError):
    """A query refused before it runs. `refusal`: service | update | unparsable | ambiguous | complex (the
    server maps update to 403, the others to 400)."""

    def __init__(self, message: str, refusal: str):
        super().__init__(message, stage="execute")
        self.refusal = refusal


def _is_label_service(target: Token | None, declared: dict[str, str]) -> bool:
    """`wikibase:label` (undeclared: WDQS predeclares it) or its full IRI."""
    if target is None:
        return False
    if target.kind == "iri":
        return target.value == WIKIBASE_ONTOLOGY + "label"
    if target.kind == "pname":
        prefix, _, local = target.text.partition(":")
        base = declared.get(prefix, WIKIBASE_ONTOLOGY if prefix == "wikibase" else "")
        return local == "label" and base == WIKIBASE_ONTOLOGY
    return False


def _service_target(tokens: list[Token], i: int) -> Token | None:
    """The token after `SERVICE [SILENT]` at i, when the keyword is written as a word of its own."""
    j = i + 1
    if j < len(tokens) and tokens[j].kind == "word" and tokens[j].text.upper() == "SILENT":
        j += 1
    return tokens[j] if j < len(tokens) and tokens[i].text.upper() == "SERVICE" else None


def _refuse_service(label: bool) -> RefusedQuery:
    if label:
        return RefusedQuery("SERVICE wikibase:label is refused: only a Wikidata Query Service endpoint understands "
                            "it; ask for rdfs:label explicitly", "service")
    return RefusedQuery("SERVICE is refused: queries run offline on the local store; remove the SERVICE clause "
                        "(for wikibase:label, ask for rdfs:label explicitly)", "service")


def _bounds(tokens: list[Token]) -> None:
    """Nesting depth, and operators along one path of open brackets (a left-deep chain in the engine's tree)."""
    depth = 0
    operators = [0]  # per open bracket
    along = 0  # sum of `operators`
    for t in tokens:
        if t.kind == "word":
            if t.text.upper() not in _CHAINING_WORDS:
                continue
        elif t.kind != "punct":
            continue
        elif t.text in ("(", "{", "["):
            depth += 1
            operators.append(0)
            if depth > MAX_DEPTH:
                raise RefusedQuery(f"the query is nested more than {MAX_DEPTH} levels deep; it is too complex to "
                                   "run (setting KBQA_QUERY_MAX_DEPTH)", "complex")
            continue
        elif t.text in (")", "}", "]"):
            depth = max(depth - 1, 0)
            if len(operators) > 1:
                along -= operators.pop()
            continue
        elif t.text not in _OPERATORS:
            continue
        operators[-1] += 1
        along += 1
        if along > MAX_OPERATORS:
            raise RefusedQuery(f"the query chains more than {MAX_OPERATORS} operators (+, &&, UNION, OPTIONAL, …) "
                               "in one expression or group; it is too complex to run (setting "
                               "KBQA_QUERY_MAX_OPERATORS)", "complex")


@functools.lru_cache(maxsize=4096)
def check_query(query: str, allow_label_service: bool = False) -> QueryFacts:
    """The facts of a safe query; RefusedQuery for SERVICE, an update, no query form, an ambiguous text or a
    query past the complexity bounds.

    `allow_label_service`: `SERVICE wikibase:label` passes (only for a Wikidata Query Service endpoint, which
    runs it itself); any other SERVICE is still refused."""
    try:
        tokens = tokenize(query)
    except Ambiguous as e:
        raise RefusedQuery(f"the query is refused: {e}", "ambiguous") from None
    declared = prefixes(tokens)
    form = None
    has_dataset = False
    for i, t in enumerate(tokens):
        if t.kind == "pname":
            prefix = t.text.partition(":")[0]
            if "service" in prefix.lower():
                raise RefusedQuery(f"the prefix {prefix[:60]!r} reads as SERVICE to the engine; rename it", "service")
            continue
        if t.kind != "word":
            continue
        upper = t.text.upper()
        if "SERVICE" in upper:
            label = _is_label_service(_service_target(tokens, i), declared)
            if label and allow_label_service:
                continue
            raise _refuse_service(label)
        if upper.startswith(UPDATE_WORDS):
            raise RefusedQuery("SPARQL Update is refused: the store is read-only for queries", "update")
        if form is None and upper.startswith(FORMS):
            form = next(f for f in FORMS if upper.startswith(f)).lower()
        if upper.startswith("FROM"):
            has_dataset = True
    if form is None:
        raise RefusedQuery("the query does not parse: no SELECT, ASK, CONSTRUCT or DESCRIBE form found", "unparsable")
    _bounds(tokens)
    try:
        sent = canonical(query, tokens)
    except Ambiguous as e:
        raise RefusedQuery(f"the query is refused: {e}", "ambiguous") from None
    return QueryFacts(form=form, has_dataset=has_dataset, sent=sent)
