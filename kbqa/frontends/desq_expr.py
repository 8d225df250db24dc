"""Expressions and terms of DeSQ fragments: the base of the recursive-descent fragment parser.

Holds the token helpers, terms (variables, placeholders, IRIs, literals) and FILTER / BIND /
ORDER BY / projection expressions, built as Plan expression nodes (never opaque text, so the
writer can escape every literal inside a FILTER).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from assembler import plan as ir
from assembler.writer import BUILTIN_ARITY, BUILTINS, CASTS
from kb_dumps.profiles import FREEBASE_NS, WIKIDATA_PREFIXES, XSD, KBProfile
from kbqa.frontends.desq_tokens import Token, tokenize, unquote

# Prefixed names accepted in fragments: those of the wikidata, freebase and generic profiles.
KNOWN_PREFIXES: dict[str, str] = {**KBProfile.prefixes, **WIKIDATA_PREFIXES, "ns": FREEBASE_NS, "fb": FREEBASE_NS}
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def expand_uri(uri: str) -> str | None:
    """A guessed URI as the model writes it (`wd:Q42`, `<http://…>`, `http://…`) as a full IRI, or None when
    it cannot be read; the one reader of guessed URIs for DeSQ grounding lines and PyRAG `uri=` arguments."""
    if uri.startswith("<") and uri.endswith(">"):
        uri = uri[1:-1]
    elif re.fullmatch(r"[A-Za-z][\w\-]*:[^\s<>\"{}|^`\\]+", uri) and not uri.startswith(("http:", "https:")):
        prefix, local = uri.split(":", 1)
        return KNOWN_PREFIXES[prefix] + local if prefix in KNOWN_PREFIXES else None
    if re.fullmatch(r"https?://[^\s<>\"{}|^`\\]+", uri):
        return uri
    return None
_MAX_DEPTH = 40  # nesting of braces/parentheses; deeper input is refused, not a RecursionError
# binary operators in one fragment: a chain `a + b + …` is a tree as deep as it is long, and the Plan's tree
# operations (to_dict, copy, the writer) recurse per level; longer input is refused, not a RecursionError
_MAX_OPERATORS = 120


class FragmentError(Exception):
    """Internal: the first problem of a fragment (line relative to the fragment)."""

    def __init__(self, message: str, line: int):
        super().__init__(message)
        self.line = line


class ExprParser:
    """Token cursor, terms and expressions; `ac` is stamped on every node built."""

    def __init__(self, text: str, ac: str | None):
        self.ac = ac
        tokens, err = tokenize(text)
        if err is not None:
            raise FragmentError(err.message, err.line)
        self.toks: list[Token] = tokens
        self.i = 0
        self.depth = 0
        self.operators = 0

    # ---- token helpers --------------------------------------------------------------------
    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def peek(self, k: int = 1) -> Token:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def next(self) -> Token:
        t = self.toks[self.i]
        if t.kind != "EOF":
            self.i += 1
        return t

    def at(self, *words: str) -> bool:
        t = self.tok
        return (t.kind == "OP" and t.text in words) or (t.kind == "NAME" and t.upper in words)

    def accept(self, *words: str) -> bool:
        if self.at(*words):
            self.next()
            return True
        return False

    def expect(self, word: str, what: str = "") -> Token:
        if not self.at(word):
            self.error(f"expected {word!r}{' ' + what if what else ''} but found {self.describe()}")
        return self.next()

    def describe(self) -> str:
        t = self.tok
        return "the end of the fragment" if t.kind == "EOF" else repr(t.text[:40])

    def error(self, message: str) -> None:
        raise FragmentError(message, self.tok.line)

    def enter(self) -> None:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            self.error(f"nesting deeper than {_MAX_DEPTH} levels")

    def binary(self, op: str, left: ir.Node, right: ir.Node) -> ir.BinaryOp:
        self.operators += 1
        if self.operators > _MAX_OPERATORS:
            self.error(f"more than {_MAX_OPERATORS} operators in one fragment; split the condition, or use "
                       "IN (…) for a list of values")
        return ir.BinaryOp(op, left, right, ac=self.ac)

    def parse_term(self) -> ir.Node:
        t = self.tok
        if t.kind == "VAR":
            return self.var(self.next())
        if t.kind == "PLACEHOLDER":
            self.next()
            name = t.name.strip()
            if not _IDENT_RE.fullmatch(name):
                raise FragmentError(
                    f"placeholder [{t.name[:40]}] must be an identifier like [capital_city]; "
                    "put the label in the GROUNDING block", t.line)
            return ir.Placeholder(name, role=t.role, ac=self.ac)
        if t.kind in ("PNAME", "IRIREF"):
            self.next()
            return ir.IRI(self.expand(t), ac=self.ac)
        if t.kind in ("STRING", "STRING_LONG"):
            self.next()
            value = unquote(t.text)
            if self.tok.kind == "LANGTAG":
                return ir.Literal(value, lang=self.next().text[1:], ac=self.ac)
            if self.accept("^^"):
                dt = self.next()
                if dt.kind not in ("PNAME", "IRIREF"):
                    raise FragmentError(f"expected a datatype IRI after ^^, found {dt.text[:40]!r}", dt.line)
                return ir.Literal(value, datatype=self.expand(dt), ac=self.ac)
            return ir.Literal(value, ac=self.ac)
        sign = ""
        if t.kind == "OP" and t.text in ("-", "+") and self.peek().kind == "NUMBER":
            sign = self.next().text.replace("+", "")
            t = self.tok
        if t.kind == "NUMBER":
            self.next()
            text = t.text
            dt = "double" if "e" in text.lower() else "decimal" if "." in text else "integer"
            return ir.Literal(sign + text, datatype=XSD + dt, ac=self.ac)
        if t.kind == "NAME" and t.text.lower() in ("true", "false"):
            self.next()
            return ir.Literal(t.text.lower(), datatype=XSD + "boolean", ac=self.ac)
        self.error(f"expected a variable, placeholder, IRI or literal, found {self.describe()}")
        raise AssertionError  # unreachable

    def expand(self, t: Token) -> str:
        if t.kind == "IRIREF":
            return t.text[1:-1]
        prefix, local = t.text.split(":", 1)
        if prefix not in KNOWN_PREFIXES:
            raise FragmentError(
                f"unknown prefix {prefix}: in {t.text[:40]}; use a placeholder or one of "
                f"{', '.join(sorted(KNOWN_PREFIXES))}", t.line)
        return KNOWN_PREFIXES[prefix] + local

    def var(self, t: Token) -> ir.Var:
        return ir.Var(t.text[1:], ac=self.ac)

    # ---- expressions -----------------------------------------------------------------------
    def parse_bracketed(self) -> ir.Node:
        self.enter()
        self.expect("(")
        expr = self.parse_expr()
        self.expect(")", "to close the expression")
        self.depth -= 1
        return expr

    def parse_expr(self) -> ir.Node:
        left = self.parse_and()
        while self.accept("||"):
            left = self.binary("||", left, self.parse_and())
        return left

    def parse_and(self) -> ir.Node:
        left = self.parse_relational()
        while self.accept("&&"):
            left = self.binary("&&", left, self.parse_relational())
        return left

    def parse_relational(self) -> ir.Node:
        left = self.parse_additive()
        if self.tok.kind == "OP" and self.tok.text in ("=", "!=", "<", ">", "<=", ">="):
            op = self.next().text
            return self.binary(op, left, self.parse_additive())
        negated = False
        if self.at("NOT") and self.peek().kind == "NAME" and self.peek().upper == "IN":
            self.next()
            negated = True
        if self.accept("IN"):
            return ir.In(left, self.parse_arg_list(), negated, ac=self.ac)
        return left

    def parse_additive(self) -> ir.Node:
        return self._left_assoc(("+", "-"), self.parse_multiplicative)

    def parse_multiplicative(self) -> ir.Node:
        return self._left_assoc(("*", "/"), self.parse_unary)

    def _left_assoc(self, ops: tuple[str, ...], operand: Callable[[], ir.Node]) -> ir.Node:
        """`operand (op operand)*` for `op` in `ops`, folded to the left: a - b - c is (a - b) - c."""
        left = operand()
        while self.tok.kind == "OP" and self.tok.text in ops:
            op = self.next().text
            left = self.binary(op, left, operand())
        return left

    def parse_unary(self) -> ir.Node:
        if self.tok.kind == "OP" and self.tok.text in ("!", "-", "+") and self.peek().kind != "NUMBER":
            op = self.next().text
            self.enter()
            arg = self.parse_unary()
            self.depth -= 1
            return ir.UnaryOp(op, arg, ac=self.ac)
        return self.parse_primary()

    def parse_arg_list(self) -> list[ir.Node]:
        self.enter()
        self.expect("(")
        args: list[ir.Node] = []
        if not self.at(")"):
            args.append(self.parse_expr())
            while self.accept(","):
                args.append(self.parse_expr())
        self.expect(")", "to close the argument list")
        self.depth -= 1
        return args

    def parse_exists(self) -> ir.Exists:
        negated = self.accept("NOT")
        self.expect("EXISTS")
        return ir.Exists(self.parse_braced_group(), negated, ac=self.ac)

    def parse_primary(self) -> ir.Node:
        t = self.tok
        if self.at("("):
            return self.parse_bracketed()
        if t.kind == "NAME" and t.upper in ("NOT", "EXISTS"):
            return self.parse_exists()
        if t.kind == "NAME" and t.upper in ir.AGGREGATES:
            return self.parse_aggregate()
        if t.kind == "NAME" and t.text.lower() not in ("true", "false"):
            if t.upper not in BUILTINS:
                self.error(f"unknown function {t.text[:30]}; allowed: SPARQL built-ins like LANG, STR, YEAR, REGEX")
            self.next()
            args = self.parse_arg_list()
            low, high = BUILTIN_ARITY[t.upper]
            if not low <= len(args) <= high:
                raise FragmentError(f"{t.upper} takes {low}" + (f" to {high}" if high != low else "")
                                    + f" arguments, got {len(args)}", t.line)
            return ir.Call(t.upper, args, ac=self.ac)
        if t.kind == "PNAME" and t.text.startswith("xsd:") and self.peek().kind == "OP" and self.peek().text == "(":
            if t.text[4:] not in CASTS:
                self.error(f"unknown cast {t.text[:30]}")
            self.next()
            return ir.Call(t.text, self.parse_arg_list(), ac=self.ac)
        return self.parse_term()

    def parse_aggregate(self) -> ir.Aggregate:
        name = self.next().upper
        self.enter()
        self.expect("(")
        distinct = self.accept("DISTINCT")
        arg = None if self.accept("*") else self.parse_expr()
        separator = None
        if self.accept(";"):
            self.expect("SEPARATOR")
            self.expect("=")
            if self.tok.kind not in ("STRING", "STRING_LONG"):
                self.error("SEPARATOR needs a string")
            separator = unquote(self.next().text)
        self.expect(")", f"to close {name}(")
        self.depth -= 1
        return ir.Aggregate(name, arg, distinct, separator, ac=self.ac)

    def parse_braced_group(self) -> ir.Group:
        raise NotImplementedError  # provided by FragmentParser (EXISTS { … } needs group patterns)
