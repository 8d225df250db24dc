"""The typed outputs of the MCP tools that have no HTTP counterpart (`describe_kb`, `run_sparql`, tool errors).

`ask`, `generate_sparql` and `explain` answer with `kbqa.server.schemas.Result` and `ground` with
`GroundingResponse`: the same published shapes as `/v1/*`, so that an agent and an HTTP client read one format.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from kbqa.server.schemas import ErrorDetail


class ToolErrorBody(BaseModel):
    """The structured content of a failed tool call (`isError: true`): the stage that failed and why, and for a
    question or text that reached the engine, the failed Result (its steps say where it went wrong)."""

    error: ErrorDetail
    result: dict[str, Any] | None = Field(default=None, description="the Result, when the engine ran")


class Term(BaseModel):
    """One RDF term, in the SPARQL 1.1 JSON results form."""

    type: str = Field(description="uri | literal | bnode")
    value: str
    datatype: str | None = None
    lang: str | None = Field(default=None, alias="xml:lang")

    model_config = {"populate_by_name": True, "serialize_by_alias": True}


class SparqlResult(BaseModel):
    """A read-only query's result: rows of terms for SELECT, `boolean` for ASK, (s, p, o) rows for CONSTRUCT and
    DESCRIBE (`kind: graph`). `truncated` is true when the row cap cut the rows."""

    kind: str = Field(description="select | ask | graph")
    vars: list[str]
    rows: list[list[Term | None]]
    boolean: bool | None = None
    truncated: bool = Field(default=False, description="the row cap cut the result")
    row_cap: int = Field(description="the most rows a query returns on this server")
    seconds: float


class SchemaItem(BaseModel):
    """A class or a predicate of the KB: its IRI, the IRI in the KB's prefixes, its label, how often it is used."""

    iri: str
    short: str = Field(description="the IRI written with the KB profile's prefixes (wd:Q5, wdt:P19, …)")
    label: str
    count: int = Field(description="instances of the class, or triples with the predicate")


class KBDescription(BaseModel):
    """What an agent needs to phrase questions over this KB: its profile, size, and most used vocabulary."""

    profile: str = Field(description="the KB profile: wikidata | freebase | generic | …")
    store: str | None = Field(description="the store directory, or null when queries go to an endpoint alone")
    endpoint: str | None = Field(default=None, description="the SPARQL endpoint queries go to, when not local")
    triples: int | None = Field(description="triples in the store (from its manifest; null for an endpoint)")
    labels: int | None = Field(description="rows of the label memory (entities, properties, classes with a label)")
    prefixes: dict[str, str] = Field(description="prefixes the queries may use without declaring them")
    classes: list[SchemaItem] = Field(description="the most used classes, most instances first")
    predicates: list[SchemaItem] = Field(description="the most used predicates, most triples first")
    total_classes: int
    total_predicates: int
    translator: str | None = Field(default=None, description="the translator answering `ask` (cases, replay, …)")
