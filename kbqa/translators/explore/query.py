"""The query model of `explore`: a candidate query graph around a focus variable (`?var1`) — the constraints
reached from it by predicate paths, the projected attributes and the query's shape (count, aggregates, group-by,
order, limit, ASK). Proposed by propose/, scored by features/ and rank/, written by lower/."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from assembler.plan import Query
    from grounding.schema import SchemaMemory
    from kb_dumps.store_types import QueryResult
    from kbqa.frontends.desq import GroundingLine


@dataclass(frozen=True)
class Step:
    """One edge: `forward` means `?from <pred> ?to`, else `?to <pred> ?from`."""

    pred: str
    forward: bool = True


Path = tuple[Step, ...]


@dataclass
class Term:
    """A constant: an IRI, a literal (lexical form + datatype) or a number written as-is."""

    kind: str  # iri | literal | number
    value: str
    datatype: str | None = None
    label: str = ""


@dataclass
class Cond:
    """A constraint on the node at the end of `path` (from the focus): `op` compares it with `value`;
    `op` "exists" only requires the path. `negated`: the whole constraint sits in FILTER NOT EXISTS."""

    path: Path
    op: str
    value: Term | None = None
    negated: bool = False
    text: str = ""  # the words of the question it came from
    score: float = 1.0
    values: list[Term] = field(default_factory=list)  # op "in": any of these ("in 2014 or 2015")
    either: list[tuple[str, Term]] = field(default_factory=list)  # op "either": any of these comparisons hold
    name_filter: bool = False  # a word of the question matched inside the focus items' names, not a link
    other: tuple[Term, Path] | None = None  # compare with what this path reaches from another item ("than Y")
    versus_average: str | None = None  # compare with the average over this class of the same path
    span: tuple[int, int] | None = None  # where in the question it is said
    # its path walked anew from the focus, sharing no node with the other constraints: a second related item
    # ("customers with both a New and a Pending order": one order New, another Pending)
    apart: bool = False
    # op "any": constraints on different attributes of which one must hold ("phones whose maker is Acme or whose
    # memory is over 32"); each is walked from the focus like a constraint of its own
    any_of: list[Cond] = field(default_factory=list)
    # asked of another item that has the same value as the focus at the first `shared` steps of `path` (which then
    # walks back to that item): "the hometowns of both people over 30 and people under 20" (propose/shared.py)
    shared: int = 0


@dataclass
class Lowered:
    """A graph as a Plan (made by lower/text.py): the query (each WHERE item and the head tagged with its atomic constraint), the
    constraints' sentences, the grounding lines and the URIs the search confirmed for each placeholder."""

    plan: Query
    sentences: list[str]  # AC1 (the query form) first
    grounding: list[GroundingLine]
    mapping: dict[str, str]


@dataclass
class Graph:
    """A candidate query graph around the focus variable (`?var1`)."""

    family: str
    focus_class: str | None = None
    conds: list[Cond] = field(default_factory=list)
    answer: list[Path] = field(default_factory=lambda: [()])  # () is the focus itself
    form: str = "select"  # select | ask
    # (COUNT|COUNT_DISTINCT|AVG|MIN|MAX|SUM, path); path None = the focus
    aggs: list[tuple[str, Path | None]] = field(default_factory=list)
    group: bool = False  # GROUP BY the answer columns (an aggregate per group)
    order: tuple[Path | None, bool] | None = None  # (path, or None for the first aggregate; descending)
    limit: int | None = None
    distinct: bool = False
    having: tuple[str, float, Path] | None = None  # GROUP BY the answer, HAVING COUNT(items at path) op number
    # two counts or averages (each part a Graph with one aggregate) combined: "percent" (first / second * 100)
    # or a comparison ">", "<" asked as yes/no ("are there more X than Y")
    parts: list[Graph] = field(default_factory=list)
    combine: str | None = None
    pred_set: str | None = None  # a property group: the super-property whose sub-properties are asked about
    features: dict[str, float] = field(default_factory=dict)
    score: float = 0.0
    rows: int | None = None  # answers found by the execution check
    result: QueryResult | None = field(default=None, repr=False, compare=False)  # that check's QueryResult (training labels it)
    lowered: tuple[SchemaMemory, Lowered] | None = field(default=None, repr=False, compare=False)  # its Plan, once lowered (lower/text.py)

    def flat_conds(self) -> list[Cond]:
        """The constraints with each "any" one replaced by its alternatives: what the features read of paths,
        operators and values (an either-or of two attributes uses both as a conjunction would)."""
        return [d for c in self.conds for d in (c.any_of or [c])]

    def key(self) -> str:
        def cond_key(c: Cond) -> list:
            return [c.path, c.op, c.value and c.value.value, [v.value for v in c.values], c.negated,
                    [(op, t.value) for op, t in c.either], c.apart, [cond_key(d) for d in c.any_of], c.shared]

        return json.dumps([self.focus_class, [cond_key(c) for c in self.conds],
                           self.answer, self.form, self.aggs, self.group, self.order, self.limit, self.having,
                           [p.key() for p in self.parts], self.combine, self.pred_set],
                          default=lambda o: o.__dict__, sort_keys=True)

    def joins(self) -> int:
        """Hops beyond the first of every constraint's path (feature `joins`)."""
        return sum(max(len(c.path) - 1, 0) for c in self.flat_conds())

    def size(self) -> int:
        if self.parts:
            return sum(p.size() for p in self.parts)
        return len(self.flat_conds()) + sum(len(p) for p in self.answer) + len(self.aggs) + (self.order is not None)
