"""Lowering a query graph: to the Plan (`assembler/plan.py`, built by lower/patterns.py), then written as DeSQ
(atomic constraints + fragments + a grounding block with the URIs the search confirmed: what the pipeline
compiles, by the DeSQ writer of `kbqa/frontends/desq_writer.py`) or as SPARQL for the search's execution check
(by the assembler's writer, each placeholder resolved to the URI the search confirmed). One Plan, two writers
that are the engine's own: what was checked is what the pipeline compiles. `verbalise` gives the one-line
reading the ranker and the chooser compare with the question."""

from __future__ import annotations

from assembler.writer import write_sparql
from grounding.schema import SchemaMemory
from kb_dumps.profiles import KBProfile
from kb_dumps.stage_errors import KBQAError
from kbqa.frontends.desq import Constraint, GroundingLine, ParseResult
from kbqa.frontends.desq_writer import to_desq_text
from kbqa.translators.explore.lower.groups import write_group
from kbqa.translators.explore.lower.patterns import (
    Writer,
    combined_patterns,
    graph_patterns,
    say_combined,
    say_form,
)
from kbqa.translators.explore.query import Graph, Lowered

_IRIS = KBProfile()  # the check writes full IRIs (and the standard prefixes); the URIs are the search's own


def lower(g: Graph, schema: SchemaMemory) -> Lowered:
    """The graph as a Plan (built once: the features, the check and the translation all read it; a graph is not
    changed once proposed)."""
    if g.lowered is not None and g.lowered[0] is schema:
        return g.lowered[1]
    w = Writer(g, schema)
    if g.pred_set:  # a property group (propose/groups.py, lower/groups.py)
        body, q, first = write_group(w, g)
    elif g.parts:
        body, q = combined_patterns(w, g)
        first = say_combined(w, g)
    else:
        body, q = graph_patterns(w, g)
        first = say_form(w, g, schema.class_label(g.focus_class) if g.focus_class else "answer")
    q.ac = "AC1"
    for i, (_, items) in enumerate(body, start=2):
        for item in items:
            item.ac = f"AC{i}"
            q.where.items.append(item)
    grounding = [GroundingLine(p.name, p.kind, p.label, p.description, p.guessed_uri) for p in w.slots.values()]
    low = Lowered(q, [first] + [s for s, _ in body], grounding, w.mapping())
    g.lowered = (schema, low)
    return low


def write(g: Graph, schema: SchemaMemory, *, desq: bool) -> str:
    """The graph as DeSQ text (`desq=True`) or as SPARQL with the URIs the search confirmed."""
    low = lower(g, schema)
    if desq:
        constraints = [Constraint(f"AC{i}", s) for i, s in enumerate(low.sentences, start=1)]
        return to_desq_text(ParseResult(low.plan, constraints=constraints, grounding=low.grounding))
    res = write_sparql(low.plan, _IRIS, low.mapping, rename_vars=False)
    if res.sparql is None:  # an IRI no SPARQL query can hold: the check drops it, as a store refusing it would
        raise KBQAError(f"explore cannot write this candidate: {res.errors[0].message}", stage="assemble")
    return res.sparql


def verbalise(g: Graph, schema: SchemaMemory) -> str:
    """The atomic-constraint sentences of a graph, one line: what the ranker compares with the question."""
    return "; ".join(lower(g, schema).sentences)
