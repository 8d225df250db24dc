"""One page of `kbqa ingest --endpoint` written into the label memory: what each phase's rows mean there.

texts       labels, aliases and descriptions, read by the same collector as a dump's triples
predicates  properties with their use counts (their popularity); staged for the ids phase
classes     class ids; typed: ids typed as a property or a class
ids         staged (kb_dumps/endpoint_ids.py), moved into the memory in id order when the phase is done
popularity  statement counts per id
"""

from __future__ import annotations

import pyoxigraph as ox

from kb_dumps.collector import LabelCollector
from kb_dumps.endpoint_ids import record_ids, record_predicates
from kb_dumps.label_memory import LabelMemory
from kb_dumps.profiles import KBProfile

Row = list[dict | None]  # a SPARQL JSON result row: one term (or None, unbound) per variable


def write_page(phase: str, rows: list[Row], memory: LabelMemory, generation: int, profile: KBProfile,
               languages: tuple[str, ...], *, stage_predicates: bool) -> None:
    """Write one page of `phase` (no commit: the caller commits it with the progress)."""
    if phase == "texts":
        collector = LabelCollector(profile, memory, generation, languages)
        for r in rows:
            quad = text_quad(r)
            if quad is not None:
                collector.observe(quad)
        collector.flush()
        return
    if phase == "popularity":
        counts = {r[0]["value"]: int(float(r[1]["value"])) for r in rows if r[0] and r[1]}
        memory.add_popularity({k: v for k, v in counts.items() if v}, generation)
        return
    if phase == "ids":  # staged; into the memory in id order when the phase is done
        record_ids(memory.conn, [r[0]["value"] for r in rows if r and r[0]])
        return
    kinds: dict[str, str | None] = {}
    counts: dict[str, int] = {}
    uses: dict[str, int] = {}  # predicates as the endpoint names them: the ids phase queries them
    for r in rows:
        key = r[0]["value"] if r[0] else ""
        if phase == "predicates":
            uses[key] = uses.get(key, 0) + (int(float(r[1]["value"])) if r[1] else 0)
            pid = profile.property_entity(key)
            kinds[pid] = "property"
            counts[pid] = counts.get(pid, 0) + (int(float(r[1]["value"])) if r[1] else 0)
        elif phase == "classes":
            kinds[key] = "class"
        elif phase == "typed":
            t = r[1]["value"] if r[1] else ""
            kinds[key] = "property" if t in profile.property_types else "class"
    memory.merge_texts({k: {"label": None, "aliases": [], "description": None, "kind": kind}
                        for k, kind in kinds.items()}, generation)
    if counts:
        memory.add_popularity({k: v for k, v in counts.items() if v}, generation)
    if uses and stage_predicates:
        record_predicates(memory.conn, uses)


def text_quad(row: Row) -> ox.Quad | None:
    """A (subject, text predicate, literal) result row as the quad a dump reader would give the collector."""
    s, p, o = row[0], row[1], row[2]
    if not (s and p and o) or s.get("type") != "uri" or o.get("type") != "literal":
        return None
    try:
        if o.get("xml:lang"):
            lit = ox.Literal(o["value"], language=o["xml:lang"])
        elif o.get("datatype"):
            lit = ox.Literal(o["value"], datatype=ox.NamedNode(o["datatype"]))
        else:
            lit = ox.Literal(o["value"])
        return ox.Quad(ox.NamedNode(s["value"]), ox.NamedNode(p["value"]), lit)
    except ValueError:  # an IRI or language tag pyoxigraph refuses: the dump reader would refuse it too
        return None
