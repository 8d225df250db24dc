"""Rewrites of a query's text for one engine, named by its dialect (`Dialect.rewrites`, kb_dumps/endpoint_settings.py):
the same answer on that engine as the SPARQL 1.1 standard (and Oxigraph) gives, where the engine errs.

- `min_of_strings` (Virtuoso 7.2): `MIN(?x)` without GROUP BY over plain string literals answers one unbound row
  (a grouped MIN, MAX and MIN over numbers are right; openlink/virtuoso-opensource issue 706 reports the kind),
  so explore's "the first name in alphabetical order" candidates vanished on Virtuoso. The same MIN over
  `STR(?x)` for a string is right there; a number, a date or an IRI keeps its own value and type:
  `MIN(IF(isLiteral(?x) && DATATYPE(?x) = xsd:string, STR(?x), ?x))` is the standard MIN of the same values.

A rewrite reads the query's tokens (kb_dumps/sparql_lex.py), so a `MIN(` inside a string or an IRI is left alone.
"""

from __future__ import annotations

from collections.abc import Callable

from kb_dumps.sparql_lex import Token, tokenize

XSD_STRING = "<http://www.w3.org/2001/XMLSchema#string>"


def _min_operand(tokens: list[Token], i: int) -> Token | None:
    """The variable of `MIN ( [DISTINCT] ?x )` starting at token i, else None (an expression is left as it is)."""
    if tokens[i].kind != "word" or tokens[i].text.upper() != "MIN":
        return None
    j = i + 1
    if j >= len(tokens) or tokens[j].text != "(":
        return None
    j += 1
    if j < len(tokens) and tokens[j].kind == "word" and tokens[j].text.upper() == "DISTINCT":
        j += 1
    if j + 1 < len(tokens) and tokens[j].kind == "var" and tokens[j + 1].text == ")":
        return tokens[j]
    return None


def min_of_strings(query: str) -> str:
    """Each `MIN(?x)` as `MIN(IF(isLiteral(?x) && DATATYPE(?x) = xsd:string, STR(?x), ?x))`."""
    if "min" not in query.lower():
        return query
    tokens = tokenize(query)
    operands = [v for i in range(len(tokens)) if (v := _min_operand(tokens, i)) is not None]
    out = query
    for v in reversed(operands):  # from the end: earlier positions stay valid
        x = v.text
        out = out[:v.start] + f"IF(isLiteral({x}) && DATATYPE({x}) = {XSD_STRING}, STR({x}), {x})" + \
            out[v.start + len(x):]
    return out


REWRITES: dict[str, Callable[[str], str]] = {"min_of_strings": min_of_strings}


def rewrite(query: str, names: tuple[str, ...]) -> str:
    """`query` after the named rewrites, in order."""
    for name in names:
        query = REWRITES[name](query)
    return query
