"""The tokens of a SPARQL query as Oxigraph reads them, and the query re-written from those tokens.

Oxigraph (spargebra's PEG grammar) is the engine that runs our queries, so the SERVICE check
(kb_dumps/sparql_check.py) reads the query with Oxigraph's terminals, not the W3C text's nor rdflib's:
a `#` comment ends at `\\r` or `\\n`; `\\uXXXX` escapes count only inside strings and IRIs; `<…>` is an
IRI only when what lies before the next `>` is a valid IRI (else `<` is less-than); a prefixed name's
local part has at most one run of dots; keywords are matched without a word boundary.

Where two readings are possible, the input is refused (`Ambiguous`) instead of guessed: a comment that a
`\\r` ends while text follows on the same line (engines that end comments only at `\\n` read that text as
comment), a backslash outside strings and IRIs other than a prefixed name's `\\#`-style escape, and a `<`
after a value inside parentheses whose IRI reading would hold `'`, `#`, a bracket or "service" (the PEG
parser reads it as less-than in an expression, as an IRI in a list).

`canonical` writes the tokens back with comments dropped, strings and IRIs without `\\u` escapes and
prefixed names with escapes expanded: the text sent to a remote engine, which may lex differently.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_HEX = "[0-9A-Fa-f]"
_UCHAR = rf"\\u{_HEX}{{4}}|\\U{_HEX}{{8}}"
_ECHAR = r"""\\[tbnrf"'\\]"""
_PN_CHARS_BASE = ("A-Za-z\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u02FF\u0370-\u037D\u037F-\u1FFF\u200C-\u200D"
                  "\u2070-\u218F\u2C00-\u2FEF\u3001-\uD7FF\uF900-\uFDCF\uFDF0-\uFFFD\U00010000-\U000EFFFF")
_PN_CHARS_U = _PN_CHARS_BASE + "_"
_PN_CHARS = _PN_CHARS_U + r"\-0-9\u00B7\u0300-\u036F\u203F-\u2040"
_PLX = rf"%{_HEX}{{2}}|\\[_~.\-!$&'()*+,;=/?#@%]"
_PN_PREFIX = rf"[{_PN_CHARS_BASE}][{_PN_CHARS}]*+(?:\.++[{_PN_CHARS}]++)*+"
# spargebra's PN_LOCAL: one optional run of dots (the W3C grammar allows any number)
_PN_LOCAL = (rf"(?:[{_PN_CHARS_U}:0-9]|{_PLX})(?:[{_PN_CHARS}:]|{_PLX})*+"
             rf"(?:\.++(?:[{_PN_CHARS}:]|{_PLX})++)?+")
_VARNAME = rf"[{_PN_CHARS_U}0-9][{_PN_CHARS_U}0-9\u00B7\u0300-\u036F\u203F-\u2040]*+"


def _long(q: str) -> str:
    return rf"{q}{q}{q}(?:(?:{q}{q}|{q})?+(?:[^{q}\\]|{_ECHAR}|{_UCHAR}))*+{q}{q}{q}"


def _short(q: str) -> str:
    return rf"{q}(?:[^{q}\\\n\r]|{_ECHAR}|{_UCHAR})*+{q}"


_WS = re.compile(r"[ \t\n\r]+")
_COMMENT = re.compile(r"#[^\r\n]*+")
_STRING = {q: re.compile(rf"{_long(q)}|{_short(q)}") for q in ("'", '"')}
_VAR = re.compile(rf"[?$]{_VARNAME}")
_BNODE = re.compile(rf"_:(?:[0-9{_PN_CHARS_U}])[{_PN_CHARS}]*+(?:\.++[{_PN_CHARS}]++)*+")
_PNAME = re.compile(rf"(?:{_PN_PREFIX})?:(?:{_PN_LOCAL})?")
_NUMBER = re.compile(r"[0-9]+\.[0-9]*[eE][+-]?[0-9]+|\.[0-9]+[eE][+-]?[0-9]+|[0-9]+[eE][+-]?[0-9]+|[0-9]*\.[0-9]+|[0-9]+")
_LANGTAG = re.compile(r"@[a-zA-Z]++(?:-[a-zA-Z0-9]++)*+")
_WORD = re.compile(rf"[{_PN_CHARS_U}0-9]++")
_PUNCT2 = {"^^", "&&", "||", "!=", ">="}
_IRI_CHARS = re.compile(rf'(?:[^\x00-\x20<>"{{}}|^`\\]|{_UCHAR})*+')
_IRI_PLAIN = re.compile(r'[^\x00-\x20<>"{}|^`\\]*+')
_UCHAR_RE = re.compile(_UCHAR)
_ECHAR_RE = re.compile(rf"{_ECHAR}|{_UCHAR}")
_ECHARS = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}
_UNSAFE_IN_PAREN_IRI = re.compile(r"['#()\[\]]|service", re.I)
_OPERAND_END = {"string", "iri", "pname", "var", "bnode", "number", "langtag", "word"}
_STRING_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r"})


class Ambiguous(ValueError):
    """The query can be read two ways (or not at all) by the engines it may go to; `reason` says why."""


class Token(NamedTuple):
    kind: str  # string | iri | pname | var | bnode | number | langtag | word | punct
    text: str  # as written in the query
    start: int
    value: str = ""  # strings and IRIs: the unescaped value
    spaced: bool = False  # whitespace or a comment came before it


def _unescape(text: str) -> str:
    """The value of a string or IRI body; Ambiguous for an escape that names no character (a surrogate)."""
    def one(m: re.Match[str]) -> str:
        s = m.group()
        if s[1] in "uU":
            code = int(s[2:], 16)
            if 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
                raise Ambiguous(f"the escape {s} names no character")
            return chr(code)
        return _ECHARS[s[1]]

    return _ECHAR_RE.sub(one, text) if "\\" in text else text


def _string_value(text: str) -> str:
    quote = 3 if text[:3] in ('"""', "'''") else 1
    return _unescape(text[quote:-quote])


def _iri_at(query: str, pos: int) -> tuple[str, str] | None:
    """(text, value) of the IRI Oxigraph reads at `pos` (a `<`), or None where it reads less-than."""
    end = query.find(">", pos + 1)
    if end < 0:
        return None
    body = query[pos + 1:end]
    if _IRI_CHARS.fullmatch(body) is None:
        return None
    value = _UCHAR_RE.sub(lambda m: chr(int(m.group()[2:], 16)) if int(m.group()[2:], 16) <= 0x10FFFF else "\x00",
                          body) if "\\" in body else body
    if _IRI_PLAIN.fullmatch(value) is None:  # an escape that makes a character no IRI may hold: not an IRI
        return None
    return query[pos:end + 1], value


def _comment_hides(query: str, end: int) -> bool:
    """A comment ended by `\\r` at `end` while text follows before the next `\\n` (read as comment by others)."""
    if end >= len(query) or query[end] != "\r":
        return False
    nl = query.find("\n", end)
    rest = query[end:nl if nl >= 0 else len(query)]
    return bool(rest.strip(" \t\r"))


def _next(query: str, pos: int) -> tuple[str, int]:
    """The kind of the token at `pos` and where it ends, dispatched on its first character."""
    c = query[pos]
    if c in " \t\n\r":
        return "ws", _WS.match(query, pos).end()  # type: ignore[union-attr]
    if c == "#":
        return "comment", _COMMENT.match(query, pos).end()  # type: ignore[union-attr]
    if c in "'\"":
        m = _STRING[c].match(query, pos)
        return ("string", m.end()) if m else ("badstring", pos + 1)
    if c == "<":
        return "lt", pos + 1
    if c in "?$":
        m = _VAR.match(query, pos)
        if m:
            return "var", m.end()
    elif c == "\\":
        return "backslash", pos + 1
    elif c == "@":
        m = _LANGTAG.match(query, pos)
        if m:
            return "langtag", m.end()
    elif "0" <= c <= "9" or c == ".":
        m = _NUMBER.match(query, pos)
        if m:
            return "number", m.end()
    elif c == "_" and query.startswith("_:", pos):
        m = _BNODE.match(query, pos)
        if m:
            return "bnode", m.end()
    if c == ":" or c.isalpha() or c == "_" or ord(c) > 0x7F:
        m = _PNAME.match(query, pos)
        if m:
            return "pname", m.end()
        m = _WORD.match(query, pos)
        if m:
            return "word", m.end()
    if query[pos:pos + 2] in _PUNCT2:
        return "punct", pos + 2
    return "punct", pos + 1


def _refuse_unreadable(query: str, kind: str, pos: int) -> None:
    """Ambiguous for a token engines read differently: an unclosed string, a backslash outside a string or IRI."""
    if kind == "badstring":
        raise Ambiguous(f"a string at character {pos} is not closed or holds an invalid escape")
    if kind == "backslash":
        what = query[pos:pos + 6]
        if what[1:2] in ("u", "U"):
            raise Ambiguous(f"the escape {what!r} at character {pos} is outside a string or IRI: Oxigraph reads "
                            "it as a backslash, other engines as the character it names; write the character")
        raise Ambiguous(f"a backslash at character {pos} outside a string, an IRI or a prefixed name's escape")


def _track_bracket(stack: list[str], text: str, values_pending: bool) -> bool:
    """Push or pop the open bracket `text` opens or closes ("(" expression or pattern list, "L" a VALUES list, "{",
    "V" a VALUES block, "["); returns whether a VALUES keyword still waits for its block."""
    if text == "{":
        stack.append("V" if values_pending else "{")
        return False
    if text == "(":
        top = stack[-1] if stack else ""
        stack.append("L" if values_pending or top in ("V", "L") else "(")
    elif text == "[":
        stack.append("[")
    elif text in ("}", ")", "]") and stack:
        want = {"}": "{V", ")": "(L", "]": "["}[text]
        if stack[-1] in want:
            stack.pop()
    return values_pending


def tokenize(query: str) -> list[Token]:
    """The tokens Oxigraph reads; Ambiguous where the reading is not certain (see the module docstring)."""
    tokens: list[Token] = []
    stack: list[str] = []  # open brackets: "(" expression or pattern list, "L" a VALUES list, "{", "V" VALUES block, "["
    values_pending = False
    spaced = False
    pos, n = 0, len(query)
    while pos < n:
        kind, end = _next(query, pos)
        if kind == "ws":
            spaced, pos = True, end
            continue
        if kind == "comment":
            if _comment_hides(query, end):
                raise Ambiguous("a comment ends at a carriage return (\\r) with text after it on the same line; "
                                "engines that end comments only at a line feed would read that text as comment: "
                                "end lines with \\n")
            spaced, pos = True, end
            continue
        text = query[pos:end]
        value = ""
        _refuse_unreadable(query, kind, pos)
        if kind == "string":
            value = _string_value(text)
        elif kind == "lt":
            iri = _iri_at(query, pos)
            if iri is None:
                nxt = query[pos + 1:pos + 2]
                text = "<=" if nxt == "=" else "<"  # never "<<": the next `<` may start an IRI
                kind = "punct"
            else:
                text, value = iri
                kind = "iri"
                prev = tokens[-1] if tokens else None
                top = stack[-1] if stack else ""
                if (top == "(" and prev is not None and (prev.kind in _OPERAND_END or prev.text in (")", "]"))
                        and _UNSAFE_IN_PAREN_IRI.search(text[1:-1])):
                    raise Ambiguous(f"{text[:60]!r} at character {pos} follows a value inside parentheses: read as an "
                                    "IRI in a list, as less-than in an expression; put a space after a less-than "
                                    "sign, or write that IRI with a prefix")
        if kind == "word" and text.upper() == "VALUES":
            values_pending = True
        elif kind == "punct":
            values_pending = _track_bracket(stack, text, values_pending)
        tokens.append(Token(kind, text, pos, value, spaced))
        spaced = False
        pos += len(text)
    return tokens


def prefixes(tokens: list[Token]) -> dict[str, str]:
    """The PREFIX declarations: prefix (without its colon) -> IRI as written."""
    out: dict[str, str] = {}
    for i, t in enumerate(tokens[:-2]):
        if t.kind == "word" and t.text.upper() == "PREFIX" and tokens[i + 1].kind == "pname" \
                and tokens[i + 2].kind == "iri":
            out[tokens[i + 1].text[:-1]] = tokens[i + 2].value
    return out


def _pname_iri(token: Token, declared: dict[str, str]) -> str:
    prefix, _, local = token.text.partition(":")
    if prefix not in declared:
        raise Ambiguous(f"the prefixed name {token.text[:60]!r} has an escape but its prefix is not declared in the "
                        "query; declare it, or write the full IRI")
    return declared[prefix] + local.replace("\\", "")


def canonical(query: str, tokens: list[Token] | None = None) -> str:
    """The query written back from its tokens: comments dropped, strings as `"…"` and IRIs without `\\u`
    escapes, prefixed names that hold an escape as full IRIs; tokens that touched still touch."""
    toks = tokenize(query) if tokens is None else tokens
    declared = prefixes(toks)
    out: list[str] = []
    for i, t in enumerate(toks):
        if t.spaced and i:
            out.append(" ")
        if t.kind == "string":
            out.append('"' + t.value.translate(_STRING_ESCAPES) + '"')
        elif t.kind == "iri":
            out.append("<" + t.value + ">")
        elif t.kind == "pname" and "\\" in t.text and not (i and toks[i - 1].text.upper() == "PREFIX"):
            iri = _pname_iri(t, declared)
            if _IRI_PLAIN.fullmatch(iri) is None:
                raise Ambiguous(f"the prefixed name {t.text[:60]!r} does not make an IRI")
            out.append("<" + iri + ">")
        else:
            out.append(t.text)
    return "".join(out)
