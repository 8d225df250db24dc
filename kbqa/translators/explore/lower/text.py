"""Lowering a query graph to text: DeSQ (atomic constraints + fragments + a grounding block with the URIs the
search confirmed: what the pipeline compiles) or SPARQL (what the search's execution check runs), both from the
patterns of lower/patterns.py, so what was checked is what the pipeline compiles; and the one-line
verbalisation the ranker and the chooser compare with the question."""

from __future__ import annotations

from grounding.schema import SchemaMemory
from kbqa.translators.explore.lower.groups import write_group
from kbqa.translators.explore.lower.patterns import (
    Writer,
    combined_patterns,
    graph_patterns,
    say_combined,
    say_form,
)
from kbqa.translators.explore.query import Graph


def write(g: Graph, schema: SchemaMemory, *, desq: bool) -> str:
    """The graph as DeSQ text (`desq=True`) or as SPARQL."""
    w = Writer(g, schema, desq)
    if g.pred_set:  # a property group (propose/groups.py, lower/groups.py)
        body, head, mods, first = write_group(w, g)
    elif g.parts:
        body, head, mods = combined_patterns(w, g)
        first = say_combined(w, g)
    else:
        body, head, mods = graph_patterns(w, g)
        first = say_form(w, g, schema.class_label(g.focus_class) if g.focus_class else "answer")
    if not desq:
        where = "\n  ".join(t for _, ts in body for t in ts)
        return f"{head} WHERE {{\n  {where}\n}}" + ("\n" + "\n".join(mods) if mods else "")
    lines = ["ATOMIC CONSTRAINTS", f"AC1: {first}"]
    for i, (sentence, _) in enumerate(body, start=2):
        lines.append(f"AC{i}: {sentence}")
    lines.append("FRAGMENTS")
    lines.append("AC1 => " + head + ("\n" + "\n".join(mods) if mods else ""))
    for i, (_, triples) in enumerate(body, start=2):
        lines.append(f"AC{i} => " + "\n".join(triples))
    lines.append("GROUNDING")
    lines.extend(w.grounding)
    return "\n".join(lines) + "\n"


def verbalise(g: Graph, schema: SchemaMemory) -> str:
    """The atomic-constraint sentences of a graph, one line: what the ranker compares with the question."""
    text = write(g, schema, desq=True)
    acs = text.split("FRAGMENTS")[0].splitlines()[1:]
    return "; ".join(line.split(": ", 1)[1] for line in acs if ": " in line)
