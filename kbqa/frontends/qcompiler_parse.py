"""QCompiler expressions: tokenizer, recursive-descent parser (AST) and validation, every problem an ErrorInfo.

Grammar (DESIGN "Formats"): `Expr ::= Dep ('+' Dep)*`, `Dep ::= Atom ('*' Atom)*`, `Atom ::= text | '(' Expr ')'`;
`*` (or `×`) binds tighter than `+`, `*` is left-associative. An operator counts only with whitespace on
both sides (a `)` may stand for the space before it), so a leaf keeps "Titanic (1997 film)" or "C++". A
group's `(` opens at the start of the expression or right after an operator (or another group's `(`);
inside a leaf, `(` … `)` are text, and a `)` that closes nothing in its leaf closes the group.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kb_dumps.stage_errors import ErrorInfo, internal_error

OPERATORS = {"+": "+", "*": "*", "×": "*"}
MAX_LENGTH = 20_000  # characters; a longer "expression" is refused before tokenizing
MAX_DEPTH = 50  # nested groups; deeper is refused instead of recursing without bound
PLACEHOLDER_RE = re.compile(r"\{([^{}]*)\}")
NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


# ---- AST -------------------------------------------------------------------------------------


@dataclass
class AtomicQuery:
    """A leaf: one atomic question; `id` is L1, L2, … in order of appearance, `column` where it starts (1-based)."""

    text: str
    id: str = ""
    column: int = 0

    @property
    def placeholders(self) -> list[str]:
        """The `{name}` names of the leaf, in order, each once (malformed ones are a validation error)."""
        return list(dict.fromkeys(m.group(1).strip() for m in PLACEHOLDER_RE.finditer(self.text)))

    def to_dict(self) -> dict:
        return {"node": "atom", "id": self.id, "text": self.text}


@dataclass
class DependentQuery:
    """`left * right`: `{name}` in `right` is the answer of `left`."""

    left: QNode
    right: QNode

    def to_dict(self) -> dict:
        return {"node": "dep", "left": self.left.to_dict(), "right": self.right.to_dict()}


@dataclass
class ListQuery:
    """`a + b + …`: independent parts whose answers are all wanted."""

    parts: list[QNode]

    def to_dict(self) -> dict:
        return {"node": "list", "parts": [p.to_dict() for p in self.parts]}


QNode = AtomicQuery | DependentQuery | ListQuery


def leaves(node: QNode) -> list[AtomicQuery]:
    """Every leaf, left to right."""
    if isinstance(node, AtomicQuery):
        return [node]
    if isinstance(node, DependentQuery):
        return leaves(node.left) + leaves(node.right)
    return [leaf for p in node.parts for leaf in leaves(p)]


def render(node: QNode) -> str:
    """The expression text of a node (groups parenthesised where precedence needs it)."""
    if isinstance(node, AtomicQuery):
        return node.text
    if isinstance(node, DependentQuery):
        right = render(node.right)
        if not isinstance(node.right, AtomicQuery):
            right = f"({right})"
        left = render(node.left)
        if isinstance(node.left, ListQuery):
            left = f"({left})"
        return f"{left} * {right}"
    return " + ".join(render(p) for p in node.parts)


# ---- tokens ----------------------------------------------------------------------------------


@dataclass
class Token:
    kind: str  # "(" ")" "op" "leaf"
    text: str
    column: int  # 1-based


@dataclass
class ExprParse:
    """The AST (None when there were errors) and every problem found."""

    ast: QNode | None
    errors: list[ErrorInfo] = field(default_factory=list)


class _Fail(Exception):
    def __init__(self, message: str, column: int | None):
        super().__init__(message)
        self.column = column


def _is_op_at(text: str, i: int, prev_ok: bool) -> bool:
    """Whether text[i] is an operator: an operator char with whitespace (or the end) after it and
    whitespace before it (or a group's `)` when `prev_ok`)."""
    if text[i] not in OPERATORS:
        return False
    after = i + 1 >= len(text) or text[i + 1].isspace()
    before = i > 0 and text[i - 1].isspace()
    return after and (before or prev_ok)


def tokenize(text: str) -> list[Token]:
    """Tokens of an expression. Raises _Fail (column, message) on a malformed one."""
    tokens: list[Token] = []
    i, n = 0, len(text)
    depth = 0  # open groups
    expect_operand = True
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            break
        ch = text[i]
        if expect_operand:
            if ch == "(":
                tokens.append(Token("(", "(", i + 1))
                depth += 1
                if depth > MAX_DEPTH:
                    raise _Fail(f"groups nested deeper than {MAX_DEPTH}", i + 1)
                i += 1
                continue
            if ch in OPERATORS and _is_op_at(text, i, True):
                prev = tokens[-1].text if tokens else None
                where = f"after '{prev}'" if prev else "at the start"
                raise _Fail(f"expected a question {where}, found the operator '{ch}'", i + 1)
            if ch == ")":
                raise _Fail("empty group '()' or a question missing before ')'", i + 1)
            i = _leaf(text, i, depth, tokens)
            expect_operand = False
            continue
        # after a leaf or a group: an operator, a group's ')' or the end
        if ch == ")":
            if depth == 0:
                raise _Fail("')' closes no group", i + 1)
            depth -= 1
            tokens.append(Token(")", ")", i + 1))
            i += 1
            continue
        if ch in OPERATORS and _is_op_at(text, i, tokens[-1].kind == ")"):
            tokens.append(Token("op", OPERATORS[ch], i + 1))
            i += 1
            expect_operand = True
            continue
        raise _Fail(f"expected an operator (' + ', ' * ') or the end after ')', found {text[i:i + 20]!r}", i + 1)
    if expect_operand:
        if tokens and tokens[-1].kind == "op":
            raise _Fail(f"the expression ends with the operator '{tokens[-1].text}': a question must follow it",
                        tokens[-1].column)
        raise _Fail("the expression is empty" if not tokens else "a group is opened but holds no question", None)
    if depth:
        raise _Fail(f"{depth} group(s) opened with '(' but never closed", None)
    return tokens


def _leaf(text: str, start: int, depth: int, tokens: list[Token]) -> int:
    """Read one leaf from `start`; returns where it ends (a spaced operator, a group's `)` or the end)."""
    i, n = start, len(text)
    inner = 0  # parentheses opened inside the leaf itself
    while i < n:
        ch = text[i]
        if ch.isspace():
            j = i
            while j < n and text[j].isspace():
                j += 1
            if j < n and text[j] in OPERATORS and _is_op_at(text, j, False):
                break
            i = j
            continue
        if ch == "(":
            inner += 1
        elif ch == ")":
            if inner:
                inner -= 1
            elif depth:
                break  # closes the enclosing group
            else:
                raise _Fail("')' closes no group (inside a question, write balanced parentheses)", i + 1)
        i += 1
    leaf = text[start:i].rstrip()
    tokens.append(Token("leaf", leaf, start + 1))
    return i


# ---- parser ----------------------------------------------------------------------------------


class _Parser:
    def __init__(self, tokens: list[Token]):
        self.tokens = tokens
        self.pos = 0

    def peek(self) -> Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def expr(self) -> QNode:
        parts = [self.dep()]
        while (t := self.peek()) is not None and t.kind == "op" and t.text == "+":
            self.pos += 1
            parts.append(self.dep())
        if len(parts) == 1:
            return parts[0]
        flat: list[QNode] = []
        for p in parts:  # `+` is associative: a parenthesised list inside a list is the same list
            flat.extend(p.parts if isinstance(p, ListQuery) else [p])
        return ListQuery(flat)

    def dep(self) -> QNode:
        node = self.atom()
        while (t := self.peek()) is not None and t.kind == "op" and t.text == "*":
            self.pos += 1
            node = DependentQuery(node, self.atom())  # left-associative
        return node

    def atom(self) -> QNode:
        t = self.peek()
        if t is None:
            raise _Fail("a question is missing at the end", None)
        self.pos += 1
        if t.kind == "leaf":
            return AtomicQuery(t.text, column=t.column)
        if t.kind == "(":
            node = self.expr()
            close = self.peek()
            if close is None or close.kind != ")":
                raise _Fail("'(' is never closed", t.column)
            self.pos += 1
            return node
        raise _Fail(f"expected a question, found {t.text!r}", t.column)


def parse_expression(text: str) -> ExprParse:
    """Tokenize, parse and validate a QCompiler expression. Never raises."""
    try:
        if not isinstance(text, str):
            return ExprParse(None, [ErrorInfo("parse", f"expected an expression (text), got {type(text).__name__}")])
        body = _strip_fences(text)
        if len(body) > MAX_LENGTH:
            return ExprParse(None, [ErrorInfo("parse", f"the expression is longer than {MAX_LENGTH} characters")])
        try:
            tokens = tokenize(body)
            parser = _Parser(tokens)
            ast = parser.expr()
            if parser.pos != len(tokens):
                t = tokens[parser.pos]
                raise _Fail(f"unexpected {t.text!r}", t.column)
        except _Fail as f:
            return ExprParse(None, [ErrorInfo("parse", str(f), line=1 if f.column else None, column=f.column)])
        for k, leaf in enumerate(leaves(ast), 1):
            leaf.id = f"L{k}"
        errors = validate(ast)
        return ExprParse(None if errors else ast, errors)
    except Exception as exc:  # "never raises": a bug of ours is reported as stage internal, never as the input's
        return ExprParse(None, [internal_error(exc, "reading the expression")])


def _strip_fences(text: str) -> str:
    """The expression without code fences or an `EXPRESSION:` label a model may add; one line."""
    lines = [ln for ln in text.splitlines() if not ln.strip().startswith("```")]
    body = " ".join(ln.strip() for ln in lines if ln.strip())
    return re.sub(r"^(expression|qcompiler)\s*:\s*", "", body, flags=re.I)


# ---- validation (QCompiler appendix D, generalised) -------------------------------------------


def _leaf_err(leaf: AtomicQuery, rule: str, message: str) -> ErrorInfo:
    return ErrorInfo("validate", f"leaf {leaf.id} {leaf.text!r}: {message} (rule: {rule})", line=1,
                     column=leaf.column or None, ac=leaf.id)


def validate(ast: QNode) -> list[ErrorInfo]:
    """Every validation problem: placeholder syntax, leaves with no words, unbound placeholders, right
    sides of `*` without a placeholder or with two different names."""
    errors: list[ErrorInfo] = []
    for leaf in leaves(ast):
        for m in PLACEHOLDER_RE.finditer(leaf.text):
            if not NAME_RE.fullmatch(m.group(1).strip()):
                errors.append(_leaf_err(leaf, "placeholder-name", f"{m.group(0)!r} is not a placeholder: write "
                                        "{name} with a name of letters, digits and '_' (e.g. {director})"))
        rest = PLACEHOLDER_RE.sub(" ", leaf.text)
        if "{" in rest or "}" in rest:
            errors.append(_leaf_err(leaf, "placeholder-braces", "unbalanced '{' or '}': write a placeholder as "
                                    "{name}"))
        if not re.search(r"\w", rest):
            errors.append(_leaf_err(leaf, "leaf-text", "the leaf has no question text besides its placeholders"))
    _check(ast, dependent=False, errors=errors)
    return errors


def _free(node: QNode) -> list[tuple[AtomicQuery, str]]:
    """(leaf, name) for each placeholder not bound inside `node` (a `*` binds its right side's names)."""
    if isinstance(node, AtomicQuery):
        return [(node, name) for name in node.placeholders if NAME_RE.fullmatch(name)]
    if isinstance(node, DependentQuery):
        return _free(node.left)
    return [x for p in node.parts for x in _free(p)]


def _check(node: QNode, dependent: bool, errors: list[ErrorInfo]) -> None:
    """`dependent`: the node is (a part of) the right side of a `*`, so its free names are bound."""
    if isinstance(node, AtomicQuery):
        if not dependent:
            for name in node.placeholders:
                if NAME_RE.fullmatch(name):
                    errors.append(_leaf_err(node, "independent-leaf", f"{{{name}}} is not bound: an independent "
                                            "question must not contain a placeholder; put it on the right of "
                                            "'*' after the question whose answer it stands for"))
        return
    if isinstance(node, ListQuery):
        for p in node.parts:
            _check(p, dependent, errors)
        return
    _check(node.left, dependent, errors)
    right_parts = node.right.parts if isinstance(node.right, ListQuery) else [node.right]
    for part in right_parts:
        free = _free(part)
        first = leaves(part)[0]
        if not free:
            errors.append(_leaf_err(first, "dependent-needs-placeholder", "the right side of '*' must refer to "
                                    "the answer of its left side with a placeholder such as {x}"))
        names = sorted({name for _, name in free})
        if len(names) > 1:
            listed = ", ".join("{" + n + "}" for n in names)
            errors.append(_leaf_err(first, "one-name", f"the right side of '*' uses {listed}; all stand for "
                                    "the one answer of the left side: use one name"))
        _check(part, True, errors)
