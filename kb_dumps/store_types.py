"""What every store shares, in one place: the `Store` protocol, results as plain data (`QueryResult`, `Term`), the
protocol's `Dataset`, and the default time budget and row cap.

`LocalStore` (kb_dumps/store.py, pyoxigraph behind a query worker) and `EndpointStore` (kb_dumps/endpoint.py, a
remote SPARQL endpoint) both import these types and never each other, and the layers above (grounding, the
assembler, eval, kbqa) type their stores with them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Protocol

from kb_dumps.json_types import JsonObject

if TYPE_CHECKING:
    import pyoxigraph as ox

DEFAULT_TIMEOUT_S = 10.0
DEFAULT_ROW_CAP = 10_000

Term = dict[str, str]  # {"type": "uri"|"literal"|"bnode"|"triple", "value": …, "datatype"?: …, "xml:lang"?: …}
XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"


@dataclass
class QueryResult:
    """A SELECT / ASK / CONSTRUCT result as plain data."""

    kind: str  # select | ask | graph
    vars: list[str] = field(default_factory=list)
    rows: list[list[Term | None]] = field(default_factory=list)
    boolean: bool | None = None
    truncated: bool = False  # the row cap cut the result
    elapsed_s: float = 0.0

    def to_dict(self) -> JsonObject:
        return asdict(self)

    @property
    def empty(self) -> bool:
        return (not self.boolean) if self.kind == "ask" else not self.rows

    def column(self, var: str) -> list[Term | None]:
        i = self.vars.index(var)
        return [r[i] for r in self.rows]


@dataclass(frozen=True)
class Dataset:
    """The dataset of one query: the SPARQL Protocol's default-graph-uri / named-graph-uri, or FROM / FROM NAMED
    in the query itself. Without either, the default graph is the union of all graphs of the store."""

    default_graphs: tuple[str, ...] = ()
    named_graphs: tuple[str, ...] = ()
    base_iri: str | None = None  # relative IRIs in the query resolve against it (the endpoint's URL)

    def __bool__(self) -> bool:  # whether it names graphs (a base IRI alone leaves the union default graph)
        return bool(self.default_graphs or self.named_graphs)


class Store(Protocol):
    """What the assembler, grounding, eval and `kbqa sparql` need from a store (LocalStore, EndpointStore)."""

    timeout_s: float
    row_cap: int

    def query(self, query: str, timeout_s: float | None = None, row_cap: int | None = None) -> QueryResult: ...

    def ask(self, query: str, timeout_s: float | None = None, row_cap: int | None = None) -> bool: ...

    def close(self) -> None: ...


def term_to_dict(term: ox.NamedNode | ox.BlankNode | ox.Literal | ox.Triple | None) -> Term | None:
    """A pyoxigraph term as a `Term` (None stays None)."""
    import pyoxigraph as ox

    if term is None:
        return None
    if isinstance(term, ox.NamedNode):
        return {"type": "uri", "value": term.value}
    if isinstance(term, ox.BlankNode):
        return {"type": "bnode", "value": term.value}
    if isinstance(term, ox.Literal):
        d = {"type": "literal", "value": term.value}
        if term.language:
            d["xml:lang"] = term.language
        elif term.datatype and term.datatype.value != XSD_STRING:
            d["datatype"] = term.datatype.value
        return d
    return {"type": "triple", "value": str(term)}
