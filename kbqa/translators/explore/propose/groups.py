"""Property groups in `explore`: a word that names a super-property ("fitness", "fitness attributes")
stands for the set of its `rdfs:subPropertyOf` sub-properties, and the question asks about the values of the
whole set — their maximum, the attribute that is highest on average for some items, the sum or mean of two
items compared, or whether one item beats the other on most attributes. Linking (`link_groups`), the
candidate families (`group_graphs`) and their writer (`write_group`, SPARQL or DeSQ) live here; any KG with
an RDFS property hierarchy gets them, read from the schema memory's `groups`."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from grounding.schema import SUB_PROPERTY_OF, SchemaMemory
from grounding.text import normalize
from kbqa.translators.explore_graphs import Body, Cond, Graph, Step, Term, _conds, _Writer
from kbqa.translators.explore_link import Link, overlaps
from kbqa.translators.language import ENGLISH, LanguageProfile

if TYPE_CHECKING:
    from kbqa.translators.explore_search import Anchors, Search

# A name token this long that begins a question word is an abbreviation of it ("fit" -> "fitness").
MIN_ABBREVIATION = 3
# "superior on most attributes": the share of attributes on which the first item is higher must pass this
MAJORITY = 0.5


def link_groups(question: str, schema: SchemaMemory, min_score: float = 0.6, lang: LanguageProfile = ENGLISH
                ) -> list[Link]:
    """Super-properties the question names: every distinctive token of the group's name (not one of the
    profile's `group_generic_words`) matches a word of the question exactly, as a singular, or as an
    abbreviation of it."""
    words = [(m.start(), m.end(), m.group(0).lower()) for m in re.finditer(r"[A-Za-z]+", question)]
    out: list[Link] = []
    for iri, info in (schema.groups or {}).items():
        tokens = [t for t in normalize(info.get("label", "")).split() if t not in lang.group_generic_words]
        if not tokens:
            continue
        spans, score = [], 1.0
        for t in tokens:
            hit = next(((s, e, 1.0) for s, e, w in words if w == t or lang.singular(w) == lang.singular(t)), None)
            if hit is None and len(t) >= MIN_ABBREVIATION:
                hit = next(((s, e, 0.8) for s, e, w in words if len(w) > len(t) and w.startswith(t)), None)
            if hit is None:
                break
            spans.append(hit[:2])
            score = min(score, hit[2])
        else:
            span = (min(s for s, _ in spans), max(e for _, e in spans))
            # "fitness attributes": the generic noun after the name belongs to the link
            m = lang.group_noun_re.match(question[span[1]:])
            if m:
                span = (span[0], span[1] + m.end())
            if score >= min_score:
                out.append(Link("group", iri, score, span, question[span[0]:span[1]], label=info.get("label", "")))
    return sorted(out, key=lambda lk: -lk.score)


def group_graphs(s: Search, a: Anchors) -> Iterator[Graph]:
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
        names = s._name_words(a, focus, [glink.span] + spans)
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


def _focus_class(s: Search, group: str) -> str | None:
    """The class whose items carry the group's attributes most often."""
    from kbqa.translators.explore_search import META_NAMESPACES

    counts: dict[str, int] = {}
    for sub in (s.schema.groups or {}).get(group, {}).get("subs", []):
        info = s.schema.predicates.get(sub)
        for c, n in (info.domains if info else {}).items():
            if not c.startswith(META_NAMESPACES):
                counts[c] = counts.get(c, 0) + n
    return max(counts, key=lambda c: counts[c]) if counts else None


def _item_conds(s: Search, a: Anchors, ents: list[Link]) -> tuple[list[Cond], list[tuple[int, int]]]:
    """"animals eating herring and krill": each linked item joined to the focus by the predicate that most
    often points at it."""
    conds, spans = [], []
    for e in ents[:2]:
        rows = s._rows(f"SELECT ?p (COUNT(*) AS ?n) WHERE {{ ?x ?p <{e.iri}> }} GROUP BY ?p ORDER BY DESC(?n) LIMIT 1")
        if rows and rows[0] and rows[0][0]:
            conds.append(Cond((Step(rows[0][0]["value"]),), "=", Term("iri", e.iri, label=e.label or e.text),
                              text=e.text, score=e.score, span=e.span))
            spans.append(e.span)
    return conds, spans


def _cover(a: Anchors, spans: list[tuple[int, int]], cue: bool = False) -> float:
    """Coverage of the question's content words; the aggregate, superlative and comparison words count as read."""
    from kbqa.translators.explore_search import _coverage

    pattern = a.lang.compared_cue_re if cue else a.lang.value_cue_re
    extra = [m.span() for m in pattern.finditer(a.question.lower())]
    return _coverage(a, spans + extra)


# ---- writing -----------------------------------------------------------------------------------------


def write_group(w: _Writer, g: Graph) -> tuple[Body, str, list[str], str]:
    """Patterns, head, modifiers and the first sentence of a property-group graph."""
    schema = w.schema
    if g.parts:
        return _write_compared(w, g)
    focus_label = schema.class_label(g.focus_class) if g.focus_class else "item"
    body = _conds(w, g, focus_label)
    pvar, value = w.new_var(), w.new_var()
    body.extend(_members(w, g.pred_set or "", w.vars[()], pvar, value))
    fn = g.aggs[0][0]
    group_label = (schema.groups or {}).get(g.pred_set or "", {}).get("label", "group")
    if g.group and g.order is not None:
        head = f"SELECT {pvar} ({fn}({value}) AS ?agg1)"
        mods = [f"GROUP BY {pvar}", f"ORDER BY {'DESC' if g.order[1] else 'ASC'}(?agg1)", f"LIMIT {g.limit or 1}"]
        first = (f"we need the {group_label} attribute with the {'highest' if g.order[1] else 'lowest'} "
                 f"{_fn_word(fn)} value")
    elif g.group:
        head, mods = f"SELECT ({fn}({value}) AS ?agg1)", [f"GROUP BY {w.vars[()]}"]
        first = f"we need the {_fn_word(fn)} of the {group_label} values for each {focus_label}"
    else:
        head, mods = f"SELECT ({fn}({value}) AS ?agg1)", []
        first = f"we need the {_fn_word(fn)} of the {group_label} values"
    return body, head, mods, first


def _members(w: _Writer, group: str, item: str, pvar: str, value: str) -> Body:
    """`item pvar value` where pvar is a sub-property of the group and the value a number."""
    sub = w.term("property", SUB_PROPERTY_OF, "sub property of")
    grp = _group_iri(group)
    return [("the attribute is one of the group", [f"{pvar} {sub} {grp} ."]),
            ("the item has a numeric value of the attribute", [f"{item} {pvar} {value} .",
                                                                f"FILTER(isNumeric({value}))"])]


def _write_compared(w: _Writer, g: Graph) -> tuple[Body, str, list[str], str]:
    a, b = (p.conds[0].value for p in g.parts)
    ta, tb = w.value(a), w.value(b)  # type: ignore[arg-type]
    sub = w.term("property", SUB_PROPERTY_OF, "sub property of")
    grp = _group_iri(g.pred_set or "")
    names = [w.new_var(), w.new_var()]
    if g.combine and g.combine.startswith("share"):
        op = g.combine[len("share"):]
        p, x, y, q = w.new_var(), w.new_var(), w.new_var(), w.new_var()
        body: Body = [
            (f"the number of attributes of the group on which {a.label} is {_more(op)} than {b.label}",
             [f"{{ SELECT (COUNT({p}) AS {names[0]}) WHERE {{ {p} {sub} {grp} . {ta} {p} {x} . {tb} {p} {y} . "
              f"FILTER({x} {op} {y}) }} }}"]),
            ("the number of attributes of the group", [f"{{ SELECT (COUNT({q}) AS {names[1]}) WHERE {{ {q} {sub} {grp} . }} }}"]),
            ("the first is more than half of the second", [f"FILTER(({names[0]} / {names[1]}) > {MAJORITY})"])]
        return body, "ASK", [], f"we need to know whether {a.label} is {_more(op)} on most attributes of the group"
    fn = g.parts[0].aggs[0][0]
    body = []
    for term, t, name in ((ta, a, names[0]), (tb, b, names[1])):
        p, v = w.new_var(), w.new_var()
        body.append((f"the {_fn_word(fn)} of the group's values of {t.label}",
                     [f"{{ SELECT ({fn}({v}) AS {name}) WHERE {{ {p} {sub} {grp} . {term} {p} {v} . "
                      f"FILTER(isNumeric({v})) }} }}"]))
    op = g.combine or ">"
    body.append((f"the first is {_more(op)} than the second", [f"FILTER({names[0]} {op} {names[1]})"]))
    return body, "ASK", [], "we need to know whether the first number is " + ("greater" if op == ">" else "smaller")


def _group_iri(group: str) -> str:
    # written as the IRI the search confirmed, not a placeholder: DeSQ allows property placeholders only as
    # predicates, and here the super-property is the object of `rdfs:subPropertyOf`
    return f"<{group}>"


def _more(op: str) -> str:
    return "higher" if op == ">" else "lower"


def _fn_word(fn: str) -> str:
    return {"AVG": "average", "SUM": "total", "MAX": "maximum", "MIN": "minimum", "COUNT": "number"}.get(fn, fn)

