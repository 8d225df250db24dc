"""PyRAG front-end: a small Python program over KB primitives, read with `ast` and lowered statically. Never run.

    film = entity("Titanic", "1997 film by James Cameron")
    director = hop(film, "director")
    final_answer = hop(director, "place of birth")

The program is parsed with `ast.parse` and then only *read*: no `exec`, `eval`, `compile` or import of
it ever happens, so a program that calls `os.system` or loops forever does nothing but produce an error.
The subset: top-level assignments `name = primitive(args)` or `name = other_name` (and docstrings); the
arguments are string / number / boolean constants, earlier names, nested primitive calls, and — for
`ask_kb` only — f-strings naming earlier variables (`{director}`, no format spec). Anything else (imports,
attribute access, subscripts, calls to other names, loops, comprehensions, lambdas, `exec`/`eval`/`open`/
`__import__`, dunder names) is an error naming the line. Primitives, with an optional `uri=` guess
(kept only when the KB confirms it, like DeSQ's fourth grounding cell):

    entity(label, description="", uri=None)      cls(label, description="", uri=None)
    hop(x, property, description="", uri=None)   rhop(x, property, description="", uri=None)
    isa(x, cls)   filter(x, op, value)   compare(x, op, y)   count(x)
    argmax(x, property, description="", uri=None)   argmin(...)   ask_kb(question)

This file is the program tree (`Program`, `Stmt`, `PCall`, `Ref`, `FStr`) and its reader (`read_program`): it reads
and checks. Lowering is `pyrag_lower.py`; the front-end entry is `pyrag.py`.
"""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass, field
from typing import TypeAlias

from kb_dumps.stage_errors import ErrorInfo, Stage, echo
from kbqa.settings import RequestCaps

MAX_LENGTH = 20_000  # characters; longer programs are refused before parsing
OPS = ("=", "!=", "<", ">", "<=", ">=")
# name -> (parameters in order, how many are required)
PRIMITIVES: dict[str, tuple[tuple[str, ...], int]] = {
    "entity": (("label", "description", "uri"), 1),
    "cls": (("label", "description", "uri"), 1),
    "hop": (("x", "property", "description", "uri"), 2),
    "rhop": (("x", "property", "description", "uri"), 2),
    "isa": (("x", "cls"), 2),
    "filter": (("x", "op", "value"), 3),
    "compare": (("x", "op", "y"), 3),
    "count": (("x",), 1),
    "argmax": (("x", "property", "description", "uri"), 2),
    "argmin": (("x", "property", "description", "uri"), 2),
    "ask_kb": (("question",), 1),
}
FINAL = "final_answer"
_FORBIDDEN_CALLS = {"exec", "eval", "open", "__import__", "compile", "getattr", "setattr", "globals", "locals",
                    "input", "breakpoint", "vars", "delattr", "memoryview", "type", "object"}
_KIND_NAMES = {
    "Import": "an import", "ImportFrom": "an import", "While": "a loop", "For": "a loop", "AsyncFor": "a loop",
    "FunctionDef": "a function definition", "AsyncFunctionDef": "a function definition",
    "ClassDef": "a class definition", "Lambda": "a lambda", "ListComp": "a comprehension",
    "SetComp": "a comprehension", "DictComp": "a comprehension", "GeneratorExp": "a comprehension",
    "Attribute": "attribute access", "Subscript": "a subscript", "With": "a with-block", "Try": "a try-block",
    "If": "an if-statement", "IfExp": "a conditional expression", "Global": "a global statement",
    "Nonlocal": "a nonlocal statement", "Delete": "a del statement", "AugAssign": "an augmented assignment",
    "AnnAssign": "an annotated assignment", "Raise": "a raise", "Assert": "an assert", "Return": "a return",
    "Starred": "a starred expression", "Await": "an await", "Yield": "a yield", "YieldFrom": "a yield",
    "NamedExpr": "an assignment expression", "BinOp": "an arithmetic expression", "BoolOp": "a boolean expression",
    "Compare": "a comparison (use compare() or filter())", "List": "a list", "Tuple": "a tuple", "Dict": "a dict",
    "Set": "a set", "Match": "a match statement", "Pass": "a pass statement", "Expr": "an expression statement",
}


# ---- the program, as plain data -----------------------------------------------------------------


@dataclass
class Ref:
    """A use of an earlier variable."""

    name: str
    line: int


@dataclass
class FStr:
    """An f-string: text pieces and variable references, in order."""

    parts: list[str | Ref]


@dataclass
class PCall:
    """A primitive call with its arguments by parameter name (constants, Refs, FStrs or nested PCalls)."""

    name: str
    args: dict[str, ArgValue]
    line: int


# An argument of a primitive call: a constant, an earlier name, an f-string (ask_kb only) or a nested call.
ArgValue: TypeAlias = str | int | float | bool | None | Ref | FStr | PCall


@dataclass
class Stmt:
    target: str
    value: PCall | Ref
    line: int


@dataclass
class Program:
    statements: list[Stmt] = field(default_factory=list)
    errors: list[ErrorInfo] = field(default_factory=list)


def _kind(node: ast.AST) -> str:
    return _KIND_NAMES.get(type(node).__name__, f"a {type(node).__name__} node")


class _Reader:
    def __init__(self) -> None:
        self.errors: list[ErrorInfo] = []
        self.defined: set[str] = set()

    def error(self, node: ast.AST | None, message: str, stage: str = "parse") -> None:
        line = getattr(node, "lineno", None)
        col = getattr(node, "col_offset", None)
        where = f"line {line}: " if line else ""
        self.errors.append(ErrorInfo(stage, where + message, line=line, column=col + 1 if col is not None else None,
                                     ac=f"line{line}" if line else None))

    def statement(self, node: ast.stmt) -> Stmt | None:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return None  # a docstring / comment string: allowed, ignored
        if not isinstance(node, ast.Assign):
            self.error(node, f"{_kind(node)} is not allowed; write only assignments `name = primitive(...)` "
                       "(never executed: the program is read, not run)")
            return None
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            self.error(node, "assign to exactly one plain name (`x = hop(y, \"p\")`)")
            return None
        target = node.targets[0].id
        if not self.name_ok(node.targets[0]):
            return None
        if target in PRIMITIVES:
            self.error(node, f"{target!r} is a primitive; choose another variable name")
            return None
        value = self.expr(node.value, top=True)
        if value is None:
            return None
        self.defined.add(target)
        return Stmt(target, value, node.lineno)

    def name_ok(self, node: ast.Name) -> bool:
        if node.id.startswith("__") or node.id.endswith("__"):
            self.error(node, f"dunder names such as {node.id!r} are not allowed")
            return False
        return True

    def expr(self, node: ast.expr, top: bool = False, fstring_ok: bool = False) -> ArgValue:
        """A value: Ref, PCall, constant, FStr; None after reporting an error."""
        if isinstance(node, ast.Name):
            if not self.name_ok(node):
                return None
            if node.id in PRIMITIVES:
                self.error(node, f"{node.id} is a primitive: call it, e.g. {node.id}(...)")
                return None
            if node.id not in self.defined:
                self.error(node, f"{node.id!r} is used before it is assigned", stage="validate")
                return None
            return Ref(node.id, node.lineno)
        if isinstance(node, ast.Call):
            return self.call(node)
        if top:
            self.error(node, f"the right side must be a primitive call or a name, not {_kind(node)}")
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str | int | float | bool) or (
                isinstance(node, ast.Constant) and node.value is None):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
                and isinstance(node.operand.value, int | float) and not isinstance(node.operand.value, bool):
            return -node.operand.value
        if isinstance(node, ast.JoinedStr):
            if not fstring_ok:
                self.error(node, "f-strings are allowed only as the question of ask_kb()")
                return None
            return self.fstring(node)
        self.error(node, f"{_kind(node)} is not allowed as an argument; use a constant, a variable or a primitive")
        return None

    def fstring(self, node: ast.JoinedStr) -> FStr | None:
        parts: list[str | Ref] = []
        for v in node.values:
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                parts.append(v.value)
            elif isinstance(v, ast.FormattedValue) and isinstance(v.value, ast.Name) and v.conversion == -1 \
                    and v.format_spec is None:
                ref = self.expr(v.value)
                if ref is None:
                    return None
                parts.append(ref)
            else:
                self.error(node, "inside an f-string write only {variable} (no expressions, conversions or formats)")
                return None
        return FStr(parts)

    def call(self, node: ast.Call) -> PCall | None:
        func = node.func
        if not isinstance(func, ast.Name):
            self.error(node, f"calling {_kind(func)} is not allowed; call a primitive by its name")
            return None
        if func.id in _FORBIDDEN_CALLS or func.id.startswith("__"):
            self.error(node, f"{func.id}() is forbidden: the program is read, never executed")
            return None
        if func.id not in PRIMITIVES:
            self.error(node, f"{func.id}() is not a primitive; use one of {', '.join(PRIMITIVES)}")
            return None
        params, required = PRIMITIVES[func.id]
        if len(node.args) > len(params):
            self.error(node, f"{func.id}() takes at most {len(params)} arguments ({', '.join(params)})")
            return None
        args: dict[str, ArgValue] = {}
        ok = True
        for name, a in zip(params, node.args, strict=False):
            if isinstance(a, ast.Starred):
                self.error(a, "*args are not allowed")
                return None
            args[name] = self.expr(a, fstring_ok=func.id == "ask_kb")
            ok = ok and (args[name] is not None or isinstance(a, ast.Constant))
        for kw in node.keywords:
            if kw.arg is None or kw.arg not in params:
                self.error(node, f"{func.id}() has no parameter {kw.arg or '**'!r}; parameters: {', '.join(params)}")
                return None
            if kw.arg in args:
                self.error(node, f"{func.id}() got {kw.arg!r} twice")
                return None
            args[kw.arg] = self.expr(kw.value, fstring_ok=func.id == "ask_kb")
            ok = ok and (args[kw.arg] is not None or isinstance(kw.value, ast.Constant))
        missing = [p for p in params[:required] if p not in args]
        if missing:
            self.error(node, f"{func.id}() needs {', '.join(missing)}")
            return None
        return PCall(func.id, args, node.lineno) if ok else None


def read_program(text: str, caps: RequestCaps | None = None) -> Program:
    """Parse and check a program (no lowering). Never raises, never executes anything. A program over
    `caps` (statements, ask_kb sub-questions) is refused before anything is lowered or translated."""
    caps = caps or RequestCaps()
    prog = Program()
    if not isinstance(text, str):
        prog.errors.append(ErrorInfo("parse", f"expected a program (text), got {type(text).__name__}"))
        return prog
    body = "\n".join("" if ln.strip().startswith("```") else ln for ln in text.splitlines())
    if len(body) > MAX_LENGTH:
        prog.errors.append(ErrorInfo("parse", f"the program is longer than {MAX_LENGTH} characters"))
        return prog
    try:
        with warnings.catch_warnings():  # e.g. SyntaxWarning for "\d" in a label: not the user's concern here
            warnings.simplefilter("ignore")
            tree = ast.parse(body, mode="exec")
    except SyntaxError as e:  # some have no line (null bytes in the source): then none is named
        where = f"line {e.lineno}: " if e.lineno else ""
        prog.errors.append(ErrorInfo("parse", f"{where}Python syntax error: {e.msg}", line=e.lineno,
                                     column=e.offset, ac=f"line{e.lineno}" if e.lineno else None))
        return prog
    except (RecursionError, MemoryError):  # Python's parser gives up on deep nesting with an empty MemoryError
        prog.errors.append(ErrorInfo("parse", "the program is nested too deeply for Python's parser to read; "
                                              "write one primitive call per line"))
        return prog
    except ValueError as e:
        prog.errors.append(ErrorInfo("parse", f"the program cannot be read: {echo(str(e))}"))
        return prog
    if len(tree.body) > caps.max_program_lines:
        prog.errors.append(ErrorInfo(Stage.VALIDATE, caps.refusal("program lines (statements)", len(tree.body),
                                                                   caps.max_program_lines, "max_program_lines")))
        return prog
    asks = sum(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "ask_kb"
               for n in ast.walk(tree))
    if asks > caps.max_subquestions:
        prog.errors.append(ErrorInfo(Stage.VALIDATE, caps.refusal("sub-questions (ask_kb calls)", asks,
                                                                   caps.max_subquestions, "max_subquestions")))
        return prog
    reader = _Reader()
    for node in tree.body:
        try:
            stmt = reader.statement(node)
        except RecursionError:
            reader.error(node, "nested too deeply")
            continue
        if stmt is not None:
            prog.statements.append(stmt)
    assigned = any(isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == FINAL for t in n.targets)
                   for n in tree.body)
    if not assigned:
        reader.errors.append(ErrorInfo("validate", f"`{FINAL}` is never assigned; end with `{FINAL} = <variable>`"))
    prog.errors = reader.errors
    return prog
