"""Two-part query graphs of the `explore` search: a percentage ("what percentage of X are Y": the items meeting
every constraint counted against those meeting the constraints said before the verb) and a yes/no comparison of
two counts or two averages ("are there more X than Y", "does A have more B than C", "is the average A of X
greater than of Y"). Each part is an ordinary graph with one aggregate; lower/ writes the pair as two
sub-SELECTs combined by `(n1 / n2) * 100` or by `FILTER(n1 > n2)` under ASK."""

from __future__ import annotations

from collections.abc import Iterator

from kbqa.translators.explore.link.words import Cues, Link
from kbqa.translators.explore.query import Cond, Graph, Step, Term
from kbqa.translators.language import ENGLISH, LanguageProfile


def count_comparatives(question: str, cues: Cues, lang: LanguageProfile = ENGLISH) -> list[tuple[str, str, int]]:
    """"more X than", "fewer X than", "greater than": (op, word, offset), words between the two allowed."""
    out = list(cues.comparatives)
    for m in lang.count_comparative_re.finditer(question.lower()):
        if not any(abs(m.start() - p) < 3 for _, _, p in out):
            out.append(("<" if m.group(1) in lang.lesser_count_comparatives else ">", m.group(1), m.start()))
    return out


def percent_cue(question: str, lang: LanguageProfile = ENGLISH) -> int | None:
    """Where the base set of "what percentage of …" starts, or None."""
    m = lang.percent_re.search(question.lower())
    return m.end() if m else None


def percent_graphs(question: str, g: Graph, lang: LanguageProfile = ENGLISH) -> Iterator[Graph]:
    """From a plain reading (the focus items meeting every constraint): their share of the items meeting only
    the constraints said before the verb that follows "percentage of" (where the base set ends: "of <base>
    do/are/have … <subset>")."""
    start = percent_cue(question, lang)
    if start is None or g.aggs or g.group or g.order or g.having or g.form != "select" or g.parts:
        return
    m = lang.clause_verb_re.search(question.lower(), start + 4)
    split = m.start() if m else start  # no verb: the base set is the focus class alone
    base = [c for c in g.conds if c.span is not None and c.span[0] < split]
    if len(base) == len(g.conds):
        return
    num = Graph("class", focus_class=g.focus_class, conds=list(g.conds), aggs=[("COUNT", None)])
    den = Graph("class", focus_class=g.focus_class, conds=base, aggs=[("COUNT", None)])
    out = Graph("percent", focus_class=g.focus_class, parts=[num, den], combine="percent")
    out.features = {**g.features, "cue_ok": 2.0, "cue_miss": 0.0}
    yield out


def count_compare_graphs(question: str, cues: Cues, g: Graph, lang: LanguageProfile = ENGLISH) -> Iterator[Graph]:
    """From a plain reading whose constraints fall on both sides of "more … than": the count (or, with an
    average cue, the average of a numeric attribute) of the items meeting those before, against those after.
    A constraint before "than" on a path no constraint after it uses is shared by both sides ("penguins")."""
    if not cues.ask or g.aggs or g.group or g.order or g.having or g.form != "select" or g.parts:
        return
    for op, word, pos in count_comparatives(question, cues, lang):
        if word not in lang.count_comparatives and not cues.aggregates:
            continue
        than = question.lower().find(f" {lang.than_word}", pos)
        if than < 0:
            continue
        after = [c for c in g.conds if c.span is not None and c.span[0] > than]
        before = [c for c in g.conds if c not in after]
        after_paths = {c.path[:1] for c in after}  # the same first step: the same kind of constraint
        own = [c for c in before if c.path[:1] in after_paths]
        shared = [c for c in before if c.path[:1] not in after_paths]
        if not after or not own:
            continue
        aggs: list[list[tuple[str, object]]] = [[("COUNT", None)]]
        if "AVG" in cues.aggregates:  # "a greater average X than": the first numeric attribute shown
            aggs = [[("AVG", p)] for p in g.answer[1:2] if p] or aggs
        for agg in aggs:
            parts = [Graph("class", focus_class=g.focus_class, conds=shared + side, aggs=list(agg))  # type: ignore[arg-type]
                     for side in (own, after)]
            out = Graph("count_compare", focus_class=g.focus_class, parts=parts, combine=op, form="ask")
            out.features = {**g.features, "cue_ok": 2.0, "cue_miss": 0.0}
            yield out


def entity_count_graphs(op: str, word: str, e1: Link, e2: Link, pred: str, score: dict[str, float],
                        lang: LanguageProfile = ENGLISH) -> Iterator[Graph]:
    """"does A have more B than C": how many values of one predicate each of two items has, compared."""
    if word not in lang.count_comparatives or op not in ("<", ">"):
        return
    parts = [Graph("class", conds=[Cond((Step(pred, False),), "=", Term("iri", e.iri, label=e.label or e.text),
                                        text=e.text, score=e.score, span=e.span)], aggs=[("COUNT", None)])
             for e in (e1, e2)]
    out = Graph("count_compare", parts=parts, combine=op, form="ask")
    out.features = {"cond_score": (e1.score + e2.score) / 2, "n_conds": 2, "cue_ok": 2.0, **score}
    yield out
