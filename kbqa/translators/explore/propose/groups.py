"""Property groups in `explore`: a word that names a super-property ("fitness", "fitness attributes")
stands for the set of its `rdfs:subPropertyOf` sub-properties (linked by link/groups.py), and the question asks
about the values of the whole set — their maximum, the attribute that is highest on average for some items, the
sum or mean of two items compared, or whether one item beats the other on most attributes. The candidate
families live here, their writer in lower/groups.py; any KG with an RDFS property hierarchy gets them, read
from the schema memory's `groups`."""

from __future__ import annotations

import re
from collections.abc import Iterator

from kbqa.translators.explore import probes
from kbqa.translators.explore.link.anchors import Anchors
from kbqa.translators.explore.link.groups import link_groups
from kbqa.translators.explore.link.words import Link, overlaps
from kbqa.translators.explore.propose.base import META_NAMESPACES, Probe, coverage
from kbqa.translators.explore.query import Cond, Graph, Step, Term


def group_graphs(s: Probe, a: Anchors) -> Iterator[Graph]:
    """The property-group families for the best linked group."""
    # words that name one property well are not an abbreviated group name
    groups = [g for g in link_groups(a.question, s.schema, lang=a.lang)
              if not any(lk.score >= 0.8 and overlaps(lk.span, g.span) for lk in a.predicates)]
    if not groups:
        return
    glink = groups[0]
    q = a.question.lower()
    # the best link of each span ("herring food": the food the class word picked, not the supplier)
    ents = sorted((e for e in a.entities if not overlaps(e.span, glink.span)), key=lambda e: -e.score)
    ents = [e for i, e in enumerate(ents) if not any(overlaps(e.span, f.span) for f in ents[:i])]
    aggs = [fn for fn in a.cues.aggregates if fn in ("AVG", "SUM", "MAX", "MIN")]
    lang = a.lang
    if lang.sum_re.search(q):
        aggs = ["SUM"] + [fn for fn in aggs if fn != "SUM"]
    beats = lang.beats_re.search(q)  # "superior to", "a greater value of ... than": a few words between
    base = {"rel_lex": glink.score, "cue_ok": 2.0}
    if beats and len(ents) >= 2:
        yield from _compared(a, glink, sorted(ents[:2], key=lambda e: e.span[0]), beats, aggs, base)
        return
    focus = _focus_class(s, glink.iri)
    # "maximum value" is an aggregate, not an order
    sup = a.cues.superlative if a.cues.superlative_word not in lang.aggregate_words else None
    desc = any(re.search(rf"\b{w}\b", q) for w in lang.group_desc_words) or sup == "desc"
    asc = any(re.search(rf"\b{w}\b", q) for w in lang.group_asc_words) or sup == "asc"
    conds, spans = _item_conds(s, a, ents)
    plural = bool(conds and lang.plural_aggregate_re.search(q))
    if focus and (desc or asc):
        names = s.name_words(a, focus, [glink.span] + spans)
        fconds = conds + [c for c, _ in names]
        fspans = spans + [sp for _, sp in names]
        g = Graph("group", focus_class=focus if names or not conds else None, conds=fconds, pred_set=glink.iri,
                  aggs=[("AVG", None)], group=True, order=(None, not asc), limit=1)
        g.features = {**base, "cond_score": 1.0 if names else 0.5, "n_conds": len(fconds),
                      "name_filter": float(len(names)), "coverage": _cover(a, [glink.span] + fspans, True)}
        yield g
    for fn in aggs[:2] if not (focus and (desc or asc)) else []:  # one number leaves "the dominant" unread
        g = Graph("group", conds=list(conds), pred_set=glink.iri, aggs=[(fn, None)])
        g.features = {**base, "cond_score": 1.0, "n_conds": len(conds), "coverage": _cover(a, [glink.span] + spans)}
        if plural:  # one number leaves "the sums" unread
            g.features["cue_miss"] = 1.0
        yield g
        if plural:  # one per item
            g = Graph("group", conds=list(conds), pred_set=glink.iri, aggs=[(fn, None)], group=True)
            g.features = {**base, "cond_score": 1.0, "n_conds": len(conds) + 1,
                          "coverage": _cover(a, [glink.span] + spans)}
            yield g


def _compared(a: Anchors, glink: Link, ents: list[Link], beats: re.Match, aggs: list[str],
              base: dict[str, float]) -> Iterator[Graph]:
    """"is A superior to B in terms of <group>": by mean or sum when the question says so, else by the share of
    the group's attributes on which A is higher."""
    op = "<" if beats.group(1) in a.lang.beats_lesser else ">"
    fn = next((f for f in aggs if f in ("AVG", "SUM")), None)
    parts = []
    for e in ents:
        item = Cond((), "=", Term("iri", e.iri, label=e.label or e.text), text=e.text, score=e.score)
        parts.append(Graph("group", conds=[item], pred_set=glink.iri, aggs=[(fn or "COUNT", None)]))
    g = Graph("group", form="ask", pred_set=glink.iri, parts=parts, combine=op if fn else f"share{op}")
    g.features = {**base, "cond_score": sum(e.score for e in ents) / 2, "n_conds": 2.0,
                  "coverage": _cover(a, [glink.span] + [e.span for e in ents] + [beats.span()], True)}
    yield g


def _focus_class(s: Probe, group: str) -> str | None:
    """The class whose items carry the group's attributes most often."""
    counts: dict[str, int] = {}
    for sub in (s.schema.groups or {}).get(group, {}).get("subs", []):
        info = s.schema.predicates.get(sub)
        for c, n in (info.domains if info else {}).items():
            if not c.startswith(META_NAMESPACES):
                counts[c] = counts.get(c, 0) + n
    return max(counts, key=lambda c: counts[c]) if counts else None


def _item_conds(s: Probe, a: Anchors, ents: list[Link]) -> tuple[list[Cond], list[tuple[int, int]]]:
    """"animals eating herring and krill": each linked item joined to the focus by the predicate that most
    often points at it."""
    conds, spans = [], []
    for e in ents[:2]:
        rows = s.rows(probes.linking_predicates(e.iri, 1))
        if rows and rows[0] and rows[0][0]:
            conds.append(Cond((Step(rows[0][0]["value"]),), "=", Term("iri", e.iri, label=e.label or e.text),
                              text=e.text, score=e.score, span=e.span))
            spans.append(e.span)
    return conds, spans


def _cover(a: Anchors, spans: list[tuple[int, int]], cue: bool = False) -> float:
    """Coverage of the question's content words; the aggregate, superlative and comparison words count as read."""
    pattern = a.lang.compared_cue_re if cue else a.lang.value_cue_re
    extra = [m.span() for m in pattern.finditer(a.question.lower())]
    return coverage(a, spans + extra)
