"""Tokenizer for DeSQ fragments: the SPARQL subset plus `[name]` placeholders and `p:[name]` roles.

Hand-written rather than rdflib's or pyoxigraph's parser because placeholders are not SPARQL: a
fragment like `?var3 p:[award] ?s .` is not a query those parsers accept, and we want every
problem as a located, collected error, never an exception.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Order matters: longer / more specific patterns first. `<…>` follows SPARQL's IRIREF (no spaces),
# which is what tells `<http://x>` from the `<` of `?a < 3`.
_TOKEN_SPEC = [
    ("WS", r"[ \t\r\n]+"),
    ("COMMENT", r"#[^\n]*"),
    ("PLACEHOLDER", r"(?:(?P<role>[A-Za-z][A-Za-z0-9_\-]*):)?\[(?P<pname>[^\[\]\n]*)\]"),
    ("IRIREF", r"<[^<>\"{}|^`\\\x00-\x20]*>"),
    ("STRING_LONG", r'"""(?:[^"\\]|\\.|"(?!""))*"""|\'\'\'(?:[^\'\\]|\\.|\'(?!\'\'))*\'\'\''),
    ("STRING", r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\''),
    ("VAR", r"[?$][A-Za-z_][A-Za-z0-9_]*"),
    ("PNAME", r"[A-Za-z][A-Za-z0-9_\-]*:(?:[A-Za-z0-9_%](?:[A-Za-z0-9_\-.%:]*[A-Za-z0-9_\-%:])?)?"),
    ("NUMBER", r"(?:\d+\.?\d*|\.\d+)[eE][+-]?\d+|\d*\.\d+|\d+"),
    ("LANGTAG", r"@[A-Za-z]+(?:-[A-Za-z0-9]+)*"),
    ("NAME", r"[A-Za-z_][A-Za-z0-9_]*"),
    ("OP", r"\^\^|&&|\|\||!=|<=|>=|[{}().;,*/|^+?!=<>\-]"),
]
_MASTER = re.compile("|".join(f"(?P<{name}>{pattern})" for name, pattern in _TOKEN_SPEC))


@dataclass
class Token:
    kind: str  # one of the _TOKEN_SPEC names (minus WS/COMMENT), or "EOF"
    text: str
    line: int  # 1-based, relative to the fragment
    role: str = ""  # PLACEHOLDER only
    name: str = ""  # PLACEHOLDER only (the raw text between the brackets)

    @property
    def upper(self) -> str:
        return self.text.upper()


@dataclass
class TokenizeError:
    message: str
    line: int


def tokenize(text: str) -> tuple[list[Token], TokenizeError | None]:
    """Tokens of `text` (ending with EOF) and the first problem, if any (tokenizing stops there)."""
    tokens: list[Token] = []
    pos, line, n = 0, 1, len(text)
    while pos < n:
        m = _MASTER.match(text, pos)
        if m is None:
            ch = text[pos]
            return tokens + [Token("EOF", "", line)], TokenizeError(f"unexpected character {ch!r}", line)
        kind = m.lastgroup or ""
        value = m.group()
        if kind == "PLACEHOLDER":
            tokens.append(Token(kind, value, line, role=m.group("role") or "", name=m.group("pname")))
        elif kind not in ("WS", "COMMENT"):
            tokens.append(Token(kind, value, line))
        line += value.count("\n")
        pos = m.end()
    tokens.append(Token("EOF", "", line))
    return tokens, None


_UNESCAPES = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f", '"': '"', "'": "'", "\\": "\\"}


def unquote(token: str) -> str:
    """The value of a SPARQL string token (short or long quotes, backslash escapes)."""
    q = 3 if token[:3] in ('"""', "'''") else 1
    body = token[q:-q]
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in ("u", "U"):
                width = 4 if nxt == "u" else 8
                digits = body[i + 2:i + 2 + width]
                if len(digits) == width and all(c in "0123456789abcdefABCDEF" for c in digits):
                    code = int(digits, 16)
                    if code <= 0x10FFFF:
                        out.append(chr(code))
                        i += 2 + width
                        continue
            out.append(_UNESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)
