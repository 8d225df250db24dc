"""The Plan (IR): the small algebra tree every front-end lowers into and the assembler writes as SPARQL.

Plain data only: dataclasses with `to_dict()` / `from_dict()` (a `"node"` tag names the type) so a
Plan travels as JSON between the translator, the repair loop, reports and tests. Every node keeps
`ac`, the id of the atomic constraint (or QCompiler leaf, or PyRAG line) it came from, so an error
or an empty join can point back to what the model wrote.
"""

from __future__ import annotations

import copy as _copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias, TypeVar

if TYPE_CHECKING:
    from kb_dumps.json_types import JsonObject, JsonValue

N = TypeVar("N", bound="Node")

FORMS = ("select", "ask", "count")
KINDS = ("entity", "property", "class")
# Statement roles a property placeholder may carry (Wikidata qualifiers); "" is the direct property.
ROLES = ("", "p", "ps", "pq")
PATH_MODS = ("*", "+", "?")
# Operators an expression may use; anything else is refused by the writer, never written verbatim.
BINARY_OPS = ("||", "&&", "=", "!=", "<", ">", "<=", ">=", "+", "-", "*", "/")
UNARY_OPS = ("!", "-", "+")
AGGREGATES = ("COUNT", "SUM", "MIN", "MAX", "AVG", "SAMPLE", "GROUP_CONCAT")

_REGISTRY: dict[str, type[Node]] = {}
# What a node's field holds: a child node, a name / literal text / flag / number, or a list of these (rows of
# Values are lists of lists).
FieldValue: TypeAlias = "Node | str | int | bool | None | list[FieldValue]"


@dataclass
class Node:
    """Base of every Plan node: `ac` is the id of the constraint / leaf / line it came from."""

    tag: ClassVar[str] = "node"
    ac: str | None = field(default=None, kw_only=True)

    def __init_subclass__(cls, **kw: Any) -> None:  # class keywords, passed on as they are
        super().__init_subclass__(**kw)
        cls.tag = cls.__name__.lower()
        _REGISTRY[cls.tag] = cls

    def to_dict(self) -> JsonObject:
        out: JsonObject = {"node": self.tag}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "ac" and value is None:
                continue
            out[f.name] = _encode(value)
        return out

    # ---- tree operations (as sqlglot's expressions have them) ---------------------------------------
    def copy(self: N) -> N:
        """A deep copy: the tree is plain data, so nothing is shared with the original."""
        return _copy.deepcopy(self)

    def find_all(self, *types: type[N]) -> Iterator[N]:
        """Every node under this one (itself included) that is one of `types`, depth-first in field order."""
        for node in walk(self):
            if isinstance(node, types):
                yield node  # type: ignore[misc]

    def transform(self, fn: Callable[[Node], Node]) -> Node:
        """A new tree: children are transformed first (bottom-up), then `fn` is given each rebuilt node and
        returns it, or what replaces it. The original tree is left as it was."""
        changes = {f.name: _transform(getattr(self, f.name), fn) for f in fields(self)}
        return fn(replace(self, **changes))

    @staticmethod
    def from_dict(data: JsonObject) -> Node:
        """Rebuild any node from its `to_dict()` form. Raises ValueError on an unknown tag or field."""
        node = _decode(data)
        if not isinstance(node, Node):
            raise ValueError("not a Plan node: expected a dict with a 'node' tag")
        return node


def _transform(value: FieldValue, fn: Callable[[Node], Node]) -> FieldValue:
    if isinstance(value, Node):
        return value.transform(fn)
    if isinstance(value, list):
        return [_transform(v, fn) for v in value]
    return _copy.deepcopy(value)  # rows of Values, datatypes: plain data, copied so the new tree owns them


def _encode(value: FieldValue) -> JsonValue:
    if isinstance(value, Node):
        return value.to_dict()
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    return value


def _decode(value: JsonValue) -> FieldValue:
    if isinstance(value, dict):
        tag = value.get("node")
        cls = _REGISTRY.get(tag) if isinstance(tag, str) else None
        if cls is None:
            raise ValueError(f"unknown Plan node tag {tag!r}")
        names = {f.name for f in fields(cls)}
        unknown = set(value) - names - {"node"}
        if unknown:
            raise ValueError(f"unknown fields {sorted(unknown)} for Plan node {tag!r}")
        return cls(**{k: _decode(v) for k, v in value.items() if k != "node"})
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


# ---- terms ---------------------------------------------------------------------------------


@dataclass
class Var(Node):
    """A variable, without the `?`."""

    name: str


@dataclass
class Placeholder(Node):
    """A URI still to be grounded: `[name]` in DeSQ. `role` is a statement role for properties."""

    name: str
    kind: str = "entity"
    role: str = ""
    label: str = ""
    description: str = ""
    guessed_uri: str | None = None


@dataclass
class IRI(Node):
    """A full IRI (never a prefixed name: prefixes are the writer's business)."""

    value: str


@dataclass
class Literal(Node):
    """An RDF literal; `datatype` a full IRI or None (plain string), `lang` a language tag or None."""

    value: str
    datatype: str | None = None
    lang: str | None = None


# ---- property paths ------------------------------------------------------------------------


@dataclass
class PathSeq(Node):
    """`a / b / …`"""

    items: list[Node]


@dataclass
class PathAlt(Node):
    """`a | b | …`"""

    items: list[Node]


@dataclass
class PathInv(Node):
    """`^a`"""

    item: Node


@dataclass
class PathMod(Node):
    """`a*`, `a+`, `a?`"""

    item: Node
    mod: str


PATH_TYPES = (PathSeq, PathAlt, PathInv, PathMod)

# ---- expressions (FILTER, BIND, ORDER BY, projections) -------------------------------------


@dataclass
class BinaryOp(Node):
    """Comparison, arithmetic or boolean operator (`op` in BINARY_OPS)."""

    op: str
    left: Node
    right: Node


@dataclass
class UnaryOp(Node):
    op: str
    arg: Node


@dataclass
class Call(Node):
    """A built-in function call (`LANG`, `YEAR`, `REGEX`, …); names are checked by the writer."""

    name: str
    args: list[Node] = field(default_factory=list)


@dataclass
class In(Node):
    """`expr IN (a, b)` / `expr NOT IN (…)`."""

    expr: Node
    items: list[Node]
    negated: bool = False


@dataclass
class Exists(Node):
    """`EXISTS { … }` / `NOT EXISTS { … }`."""

    group: Group
    negated: bool = False


@dataclass
class Aggregate(Node):
    """`COUNT(DISTINCT ?x)`; `arg` None means `*`."""

    name: str
    arg: Node | None = None
    distinct: bool = False
    separator: str | None = None


@dataclass
class Projection(Node):
    """`(expr AS ?var)` in a SELECT clause."""

    expr: Node
    var: Var


@dataclass
class OrderKey(Node):
    expr: Node
    descending: bool = False


# ---- graph patterns ------------------------------------------------------------------------


@dataclass
class Triple(Node):
    """`s p o`; `p` may be a Var, IRI, Placeholder or a property path."""

    s: Node
    p: Node
    o: Node


@dataclass
class Filter(Node):
    expr: Node


@dataclass
class Bind(Node):
    expr: Node
    var: Var


@dataclass
class Values(Node):
    """`VALUES (?a ?b) { (x y) (UNDEF z) }`; a row entry None is UNDEF."""

    vars: list[Var]
    rows: list[list[Node | None]] = field(default_factory=list)


@dataclass
class Group(Node):
    """An ordered group graph pattern: Triple / Filter / Optional / Minus / Union / Values /
    SubQuery / Bind / nested Group."""

    items: list[Node] = field(default_factory=list)


@dataclass
class Optional(Node):
    group: Group


@dataclass
class Minus(Node):
    group: Group


@dataclass
class Union(Node):
    groups: list[Group]


@dataclass
class SubQuery(Node):
    query: Query


@dataclass
class Query(Node):
    """A query: `form` select | ask | count (a SELECT whose projection is one COUNT)."""

    form: str = "select"
    projection: list[Node] = field(default_factory=list)  # Var or Projection; empty = `*`
    distinct: bool = False
    where: Group = field(default_factory=Group)
    group_by: list[Node] = field(default_factory=list)
    having: list[Node] = field(default_factory=list)
    order_by: list[OrderKey] = field(default_factory=list)
    limit: int | None = None
    offset: int | None = None

    @staticmethod
    def from_json_dict(data: dict) -> Query:
        node = Node.from_dict(data)
        if not isinstance(node, Query):
            raise ValueError(f"expected a Query node, got {type(node).__name__}")
        return node


# ---- helpers -------------------------------------------------------------------------------


def walk(node: FieldValue) -> Iterator[Node]:
    """Every node under `node` (itself included), depth-first in field order."""
    stack: list[FieldValue] = [node]
    while stack:
        cur = stack.pop()
        if isinstance(cur, Node):
            yield cur
            children = [getattr(cur, f.name) for f in fields(cur)]
            stack.extend(reversed(children))
        elif isinstance(cur, list):
            stack.extend(reversed(cur))


def placeholders(node: Node) -> list[Placeholder]:
    """Every placeholder occurrence, in order of appearance."""
    return [n for n in walk(node) if isinstance(n, Placeholder)]


def pattern_vars(group: Group) -> set[str]:
    """Names of the variables a group pattern can bind (sub-queries: their projection only)."""
    out: set[str] = set()
    stack: list[Node] = list(group.items)
    while stack:
        cur = stack.pop()
        if isinstance(cur, SubQuery):
            q = cur.query
            if not q.projection:
                out |= pattern_vars(q.where)
            for p in q.projection:
                out.add(p.name if isinstance(p, Var) else p.var.name)
        elif isinstance(cur, Triple):
            out |= {n.name for n in walk([cur.s, cur.p, cur.o]) if isinstance(n, Var)}
        elif isinstance(cur, Bind):
            out.add(cur.var.name)
        elif isinstance(cur, Values):
            out |= {v.name for v in cur.vars}
        elif isinstance(cur, Group | Optional):
            stack.extend(cur.items if isinstance(cur, Group) else cur.group.items)
        elif isinstance(cur, Union):
            stack.extend(cur.groups)
        # Filter and Minus bind nothing.
    return out


# ---- rewrites built on `transform`: each returns a new tree ------------------------------------------


def rename(node: N, name: Callable[[str], str], *, placeholders: bool = False) -> N:
    """Variables (and with `placeholders`, placeholder names) renamed by `name`."""

    def one(n: Node) -> Node:
        if isinstance(n, Var) or (placeholders and isinstance(n, Placeholder)):
            n.name = name(n.name)
        return n

    return node.transform(one)  # type: ignore[return-value]


def tag_ac(node: N, ac: Callable[[str | None], str | None]) -> N:
    """Every node's `ac` replaced by `ac(old)`: point a tree back at the leaf / line / AC it came from."""

    def one(n: Node) -> Node:
        n.ac = ac(n.ac)
        return n

    return node.transform(one)  # type: ignore[return-value]


def substitute(node: N, swap: Callable[[Node], Node | None]) -> N:
    """Nodes for which `swap` returns a node replaced by (a copy of) it; the others kept."""

    def one(n: Node) -> Node:
        new = swap(n)
        return n if new is None else new.copy()

    return node.transform(one)  # type: ignore[return-value]
