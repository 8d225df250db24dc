"""Candidate query graphs for the `explore` translator, proposed by the knowledge graph itself.

From the linked anchors (classes, predicates, quoted values, entities, numbers) and the question's cue words,
build query graphs family by family — one hop from an entity in either direction, class + value constraints
reached through join paths of the schema, comparisons, counts and aggregates, group-by superlatives, ordering,
negation, ASK — give each its features, and keep those whose query returns answers (ASK and COUNT always
stand). The schema memory prunes predicates that cannot connect; the store answers what is left.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import time
from collections.abc import Iterator

from kbqa.translators.explore import probes
from kbqa.translators.explore.context import ExploreContext
from kbqa.translators.explore.link.anchors import Anchors
from kbqa.translators.explore.link.words import Link, cue_spans, overlaps
from kbqa.translators.explore.propose.base import META_NAMESPACES, Probe, Shape, coverage
from kbqa.translators.explore.propose.conjunctions import merge_or, or_joined
from kbqa.translators.explore.propose.display import DisplayColumns
from kbqa.translators.explore.propose.groups import group_graphs
from kbqa.translators.explore.propose.identifiers import own_id_links
from kbqa.translators.explore.propose.pairs import (
    count_comparatives,
    count_compare_graphs,
    entity_count_graphs,
    percent_cue,
    percent_graphs,
)
from kbqa.translators.explore.propose.paths import SchemaPaths
from kbqa.translators.explore.propose.shapes import shapes
from kbqa.translators.explore.propose.shared import shared_value_graphs
from kbqa.translators.explore.propose.substrings import SUBSTRING_OPS, substring_readings
from kbqa.translators.explore.propose.ungated import ungated_shapes
from kbqa.translators.explore.query import Cond, Graph, Path, Step, Term

MAX_FOCUS = 3
TYPE_PENALTY = 0.5  # the type predicate as an attribute yields to another predicate the same words name
WEAK_LINK = 0.3  # an entity link weaker than this may also be read as no constraint
MIN_ITEM_LINK = 0.2  # an entity link weaker than this never names a focus item by itself (partial-name matches)
MAX_COND_SETS = 12  # combinations of the spans' readings tried, best first


class Search(Probe):
    """Builds candidate graphs for one question within a time budget and a candidate cap (the probes and the
    deadline are the Probe's)."""

    # ---- the families ------------------------------------------------------------------------------
    def candidates(self, a: Anchors) -> Iterator[Graph]:
        self.deadline = time.perf_counter() + self.budget_s
        taken = cue_spans(a.question, a.lang)  # "the most common enclosure": *common* is the cue, not a name
        a.entities = [lk for lk in a.entities if not any(overlaps(lk.span, sp) for sp in taken)]
        a.values = [lk for lk in a.values if not any(overlaps(lk.span, sp) for sp in taken)]
        n = 0
        for gen in (group_graphs(self, a), self._compare_graphs(a), self._paired(a, self._class_graphs(a)),
                    self._entity_graphs(a)):
            for g in gen:
                yield g
                n += 1
                if n >= self.cap or time.perf_counter() > self.deadline:
                    self.truncated = True
                    return

    def _paired(self, a: Anchors, graphs: Iterator[Graph]) -> Iterator[Graph]:
        """Each class graph, and after a plain reading its percentage and count-comparison readings."""
        pct = percent_cue(a.question, a.lang) is not None
        for g in graphs:
            if pct:  # a reading that is no percentage leaves the cue unread
                g.features["cue_miss"] = g.features.get("cue_miss", 0.0) + 1.0
            yield g
            yield from percent_graphs(a.question, g, a.lang)
            yield from count_compare_graphs(a.question, a.cues, g, a.lang)

    def _focus_classes(self, a: Anchors) -> list[tuple[str, float, Link | None]]:
        out: dict[str, tuple[float, Link | None]] = {}
        for lk in a.classes:
            if lk.score > out.get(lk.iri, (0.0, None))[0]:
                out[lk.iri] = (lk.score, lk)
        for lk in a.predicates + a.values:
            info = self.schema.predicates.get(lk.iri)
            for d in (info.domains if info else {}):
                s = 0.5 * lk.score
                if d in self.schema.classes and s > out.get(d, (0.0, None))[0]:
                    out[d] = (s, None)
        for lk in a.entities[:3]:  # "animals kept by Anna": the classes of what points at the entity
            for row in self.rows(probes.classes_pointing_at(lk.iri, self.schema.type_predicate, 4)):
                c = row[0]["value"] if row[0] else None
                if c and c in self.schema.classes and 0.5 > out.get(c, (0.0, None))[0]:
                    out[c] = (0.5, None)
        out = {c: v for c, v in out.items() if not c.startswith(META_NAMESPACES)}
        ranked = sorted(out.items(), key=lambda kv: -kv[1][0])
        return [(c, s, lk) for c, (s, lk) in ranked[:MAX_FOCUS]]

    def _class_graphs(self, a: Anchors) -> Iterator[Graph]:
        for focus, fscore, flink in self._focus_classes(a):
            used = [flink.span] if flink else []
            per_span = self._span_readings(a, focus, used)
            span_paths = _span_paths(per_span)
            for conds, cspans, cscore in self._cond_sets(a, per_span):
                spans = used + cspans
                attrs = self._attributes(a, focus, spans)
                for shape in self._shapes(a, focus, attrs, spans):
                    # "eat herring and krill food": "eats some food" beside "eats the food herring" only
                    # repeats each item once per food it eats (and inflates a COUNT)
                    if any(c.op == "exists" and not c.negated and any(
                            d.op == "=" and not d.negated and d.path == c.path for d in conds) for c in shape.conds):
                        continue
                    # a number read as a value is not compared as well
                    if "uncued_cmp" in shape.features and any(c.span and d.span and overlaps(c.span, d.span)
                                                                 for c in shape.conds for d in conds):
                        continue
                    g = Graph("class", focus_class=focus, conds=or_joined(a, conds + shape.conds, span_paths),
                              answer=shape.answer, form=shape.form, aggs=shape.aggs, group=shape.group,
                              order=shape.order, limit=shape.limit, distinct=shape.distinct, having=shape.having)
                    flat = g.flat_conds()
                    g.features = {"focus": fscore, "cond_score": cscore, "n_conds": len(flat),
                                  "name_filter": float(sum(c.name_filter for c in flat)),
                                  "substring": float(sum(c.op in SUBSTRING_OPS and not c.name_filter for c in flat)),
                                  "joins": g.joins(),
                                  "coverage": coverage(a, spans + shape.spans), **shape.features}
                    yield g
                    shown = self._with_display(g)
                    if shown is not None:
                        yield shown
                    yield from shared_value_graphs(g, self.schema)

    def _with_display(self, g: Graph) -> Graph | None:
        """The same candidate also showing its items' display column (propose/display.py), when it shows items."""
        if self.display is None or g.form != "select" or () not in g.answer or (g.aggs and not g.group) \
                or not g.focus_class:
            return None
        col = self.display.of(g.focus_class)
        if col is None or (Step(col),) in g.answer:
            return None
        shown = copy.copy(g)
        shown.answer = list(g.answer) + [(Step(col),)]
        shown.features = {**g.features, "display": 1.0}
        return shown

    def _cond_sets(self, a: Anchors, per_span: list[list[tuple[Cond | None, tuple[int, int]]]]
                   ) -> Iterator[tuple[list[Cond], list[tuple[int, int]], float]]:
        """Alternative sets of value/entity constraints: per span, its reachable readings (`_span_readings`);
        combined."""
        if not per_span:
            yield [], [], 0.0
            return
        neg = a.cues.negation
        combos = list(itertools.islice(itertools.product(*per_span), MAX_COND_SETS))
        # every span that may be no constraint read as none ("between 8000 and 12000" where each number also
        # equals some value): second, before the candidate cap is reached
        bare = tuple(next((r for r in grp if r[0] is None), grp[0]) for grp in per_span)
        if bare in combos:
            combos.remove(bare)
        combos.insert(1, bare)
        for combo in combos:
            combo = tuple(r for r in combo if r[0] is not None)
            if not combo:
                yield [], [], 0.0
                continue
            conds, spans = merge_or([c for c, _ in combo], [s for _, s in combo], a.question, lists=not a.cues.ask,
                                     lang=a.lang)
            if sum(1 for c in conds if c.path == () and c.op == "=") > 1:
                continue  # the focus cannot be two items at once
            score = sum(c.score for c in conds) / len(conds)
            yield conds, spans, score
            if neg:  # "which … do not …": the constraint after the negation word is negated
                last = max(range(len(conds)), key=lambda i: spans[i][0])
                yield [dataclasses.replace(c, negated=(i == last)) for i, c in enumerate(conds)], spans, score
                if _differs_reading(conds[last]):  # "regions other than Denmark": the value differs
                    differ = [dataclasses.replace(c, op="!=") if i == last else c for i, c in enumerate(conds)]
                    yield differ, spans, score

    def _span_readings(self, a: Anchors, focus: str, used: list[tuple[int, int]]
                       ) -> list[list[tuple[Cond | None, tuple[int, int]]]]:
        """Per question span, its readings as a constraint (None: the span read as no constraint), best first;
        the value and entity links first, then the name words."""
        per_span: list[list[tuple[Cond | None, tuple[int, int]]]] = []
        taken: list[tuple[int, int]] = list(used)
        strong: list[tuple[int, int]] = list(used)  # spans read by a link sure enough to rule out a name word
        for lk in a.values + a.entities:
            if any(overlaps(lk.span, t) for t in taken) and not any(lk.span == t for t in taken):
                continue
            readings = self._link_readings(lk, focus, used)
            if readings:
                same = [grp for grp in per_span if grp[0][1] == lk.span]
                if same:
                    same[0].extend(readings)
                else:
                    per_span.append(readings)
                    taken.append(lk.span)
                if lk.score >= 0.5:
                    strong.append(lk.span)
        per_span = [sorted(g, key=lambda r: -(r[0].score if r[0] is not None else 0.3))[:4] for g in per_span][:4]
        for reading in self.name_words(a, focus, strong):
            # a weak entity link on the same words ("lions" / *Lionel*) stays an alternative to the name word
            same = [grp for grp in per_span if any(r[0] is not None and overlaps(r[1], reading[1]) for r in grp)]
            if same:
                same[0].append(reading)
            else:
                per_span.append([reading, (None, reading[1])])
        # "whose name contains 'Opera'": the quoted words may also link a value; both readings stay
        for reading in substring_readings(self, a, focus):
            same = [grp for grp in per_span if any(overlaps(r[1], reading[1]) for r in grp)]
            if same:
                same[0].append(reading)
            else:
                per_span.append([reading, (None, reading[1])])
        return per_span

    def _link_readings(self, lk: Link, focus: str, used: list[tuple[int, int]]
                       ) -> list[tuple[Cond | None, tuple[int, int]]]:
        """The constraints one value or entity link may stand for, reached from the focus class (at most two paths);
        None among them where the link may be no constraint at all."""
        readings: list[tuple[Cond | None, tuple[int, int]]] = []
        if lk.kind == "value":
            for path in self.paths.to_predicate(focus, lk.iri)[:2]:
                term = Term("literal", lk.value or lk.text, lk.datatype, label=lk.text)
                readings.append((Cond(path, lk.op, term, text=lk.text, score=lk.score / (1 + 0.2 * (len(path) - 1)),
                                      span=lk.span), lk.span))
        else:
            # the entity as a focus item itself only when its words are not the focus class's own name
            as_item = lk.score >= MIN_ITEM_LINK and not any(overlaps(lk.span, u) for u in used)
            for path in [p for p in self._entity_paths(focus, lk.iri) if p or as_item][:2]:
                term = Term("iri", lk.iri, label=lk.label or lk.text)
                readings.append((Cond(path, "=", term, text=lk.text, score=lk.score, span=lk.span), lk.span))
        if any(r[0].path == () for r in readings) or (readings and lk.kind == "entity" and lk.score < WEAK_LINK):
            # an item of the focus class named by a weak link may be no item; a weakly named related item
            # ("product id" / an item whose label is *product_id=3*) may be no constraint
            readings.append((None, lk.span))
        elif readings and lk.kind == "value" and ((lk.value or "").replace(".", "").isdigit() or lk.variant
                                                 or lk.span in used):
            # a bare number may be a count or an attribute's value instead; a word that starts like a code
            # ("made" / M) may mean no code at all; the focus class's own word ("drivers" / a code *driver*)
            # may name the class alone
            readings.append((None, lk.span))
        return readings

    def _entity_paths(self, focus: str, entity: str) -> list[Path]:
        # ?d 2: the entity is itself one of the focus items ("the maximum weight of Leo and Zara")
        q = probes.paths_to_class(entity, self.schema.type_predicate, focus, 20)
        rows = [r for r in self.rows(q) if r[0] and r[1]]
        return [() if r[1]["value"] == "2" else (Step(r[0]["value"], r[1]["value"] == "1"),)
                for r in sorted(rows, key=lambda r: r[1]["value"] != "2")]

    def _attributes(self, a: Anchors, focus: str, spans: list[tuple[int, int]]) -> list[tuple[Path, Link]]:
        """Predicate links reachable from the focus whose span is not already used, best first."""
        out: list[tuple[Path, Link]] = []
        own = set(self.schema.predicates_of(focus))
        for lk in a.predicates:
            # the class's own name column may share its words ("allergy type" / *allergytype*), or read the
            # class's words and its own ("the names of shops": *shop name* around the class word *shops*)
            if any(overlaps(lk.span, s) for s in spans) and not (lk.iri in own and (
                    lk.score >= 0.95 or self._reads_beyond(a, lk.span, spans))):
                continue
            info = self.schema.predicates.get(lk.iri)
            if info is None or not (info.literal or self._categorical(lk.iri)):
                continue
            if lk.iri == self.schema.type_predicate and any(0 <= lk.span[0] - c.span[1] <= 1 for c in a.classes):
                continue  # "enclosure type": the word after a class name says "that class"
            paths = self.paths.to_predicate(focus, lk.iri)
            if paths:
                out.append((paths[0], lk))
        out += [(p, lk) for p, lk in own_id_links(self.schema, a, focus)
                if not any(overlaps(lk.span, s) for s in spans)]
        # one attribute per span: the best-scoring predicate, then the shortest path; the type predicate last
        # ("the average price for each type of product": a column that holds a type, where one is linked)
        def rank(path: Path, lk: Link) -> float:
            return lk.score - 0.15 * len(path) - (TYPE_PENALTY if lk.iri == self.schema.type_predicate else 0.0)

        best: dict[tuple[int, int], tuple[Path, Link]] = {}
        for path, lk in out:
            cur = best.get(lk.span)
            if cur is None or rank(path, lk) > rank(*cur):
                best[lk.span] = (path, lk)
        return sorted(best.values(), key=lambda pl: pl[1].span[0])

    @staticmethod
    def _reads_beyond(a: Anchors, span: tuple[int, int], used: list[tuple[int, int]]) -> bool:
        """Whether a span holds every used span it overlaps whole, and a content word outside them."""
        inside = [s for s in used if overlaps(span, s)]
        if any(s[0] < span[0] or s[1] > span[1] for s in inside):
            return False
        return any(span[0] <= w[0] and w[1] <= span[1] and not any(overlaps(w, s) for s in inside)
                   for w in a.content_words())

    def _categorical(self, pred: str) -> bool:
        """An IRI-valued predicate whose objects are a few shared values (a colour, a language), not rows
        of another table: on average each object is used at least three times."""
        info = self.schema.predicates[pred]
        objects = sum(self.schema.classes.get(c, {}).get("count", 0) for c in info.ranges) or info.iris
        return info.iris >= 3 * max(objects, 1)

    def _shapes(self, a: Anchors, focus: str, attrs: list[tuple[Path, Link]], spans: list[tuple[int, int]]
                ) -> Iterator[Shape]:
        yield from shapes(self, a, focus, attrs, spans)  # what the cue words read
        yield from ungated_shapes(self, a, focus, attrs, spans)  # and every shape the schema allows

    def _compare_graphs(self, a: Anchors) -> Iterator[Graph]:
        """Two items compared on one predicate: "is X faster than Y" (ASK X.p > Y.p), "do X and Y have the
        same keeper" / "any common enclosure" (ASK X.p = Y.p)."""
        cues = a.cues
        counted = count_comparatives(a.question, cues, a.lang) if cues.ask else []
        if not (cues.comparatives or cues.same or counted):
            return
        ents: list[Link] = []
        for lk in a.entities:
            if not any(overlaps(lk.span, e.span) for e in ents):
                ents.append(lk)
        if len(ents) < 2:
            return
        e1, e2 = sorted(ents[:2], key=lambda lk: lk.span[0])
        shared = [r[0]["value"] for r in self.rows(probes.shared_predicates(e1.iri, e2.iri, 200)) if r[0] and r[0]["value"] in self.schema.predicates]
        linked = {lk.iri: lk.score for lk in a.predicates}
        for op, word in ([(o, w) for o, w, _ in cues.comparatives or counted] or [("=", "same")]):
            noun = a.lang.implied_attribute(word)
            for p in shared:
                info = self.schema.predicates[p]
                if op != "=" and not info.numeric:
                    named = linked.get(p, 0.0) or max((lk.score for lk in a.classes if lk.iri in info.ranges), default=0)
                    if named and cues.ask and p != self.schema.type_predicate:  # "does A speak more X than B": counts
                        spans = [e1.span, e2.span] + [lk.span for lk in a.predicates + a.classes
                                                      if lk.iri == p or lk.iri in info.ranges]
                        yield from entity_count_graphs(op, word, e1, e2, p, {"rel_lex": named,
                                                                         "coverage": coverage(a, spans)}, a.lang)
                    continue
                implied = bool(noun and noun in info.label.split())
                if p not in linked and not implied:
                    continue
                e1t = Term("iri", e1.iri, label=e1.label or e1.text)
                e2t = Term("iri", e2.iri, label=e2.label or e2.text)
                conds = [Cond((Step(p, False),), "=", e1t, text=e1.text, score=e1.score),
                         Cond((), op, None, text=f"{word} than {e2.text}", score=e2.score,
                              other=(e2t, (Step(p, True),)))]
                g = Graph("compare", conds=conds, form="ask")
                spans = [e1.span, e2.span] + [lk.span for lk in a.predicates if lk.iri == p]
                g.features = {"cond_score": (e1.score + e2.score) / 2, "n_conds": 2, "cue_ok": 2.0,
                              "rel_lex": linked.get(p, 0.6 if implied else 0.0), "coverage": coverage(a, spans)}
                yield g

    def _entity_graphs(self, a: Anchors) -> Iterator[Graph]:
        """One hop from an entity, in either direction, to the answer (optionally typed by a linked class)."""
        rel = {}
        for pl in a.predicates:
            rel[pl.iri] = max(rel.get(pl.iri, 0.0), pl.score)
        # the best four mentions, and every weak link of a respelt or shortened name (the KG decides those)
        for lk in a.entities[:4] + [e for e in a.entities[4:] if e.variant]:
            for row in self.rows(probes.edges(lk.iri, 200)):
                p, d = row[0]["value"], row[1]["value"] == "1"
                if p not in self.schema.predicates:
                    continue
                # the answer is at the other end: for `e p ?x` the step from ?x is backward
                cond = Cond((Step(p, not d),), "=", Term("iri", lk.iri, label=lk.label or lk.text), text=lk.text,
                            score=lk.score)
                g = Graph("hop", conds=[cond])  # no DISTINCT: answers are sets; a gold query rarely says it
                pspans = [pl.span for pl in a.predicates if pl.iri == p and not overlaps(pl.span, lk.span)]
                g.features = {"cond_score": lk.score, "n_conds": 1, "rel_lex": rel.get(p, 0.0) if pspans else 0.0,
                              "coverage": coverage(a, [lk.span] + pspans[:1])}
                if a.cues.aggregates:  # "the average weight of X and Y": one item's value leaves the cue unread
                    g.features["cue_miss"] = 1.0
                if a.cues.count:
                    g.aggs = [("COUNT", None)]
                if a.cues.ask:
                    g.form = "ask"
                yield g
            if time.perf_counter() > self.deadline:
                return


def _differs_reading(c: Cond) -> bool:
    """A negated value of the focus's own attribute may also read as that attribute's value differing (FILTER !=:
    the items that hold another value, not those with none), beside NOT EXISTS."""
    return (c.op == "=" and len(c.path) == 1 and c.path[0].forward and c.value is not None
            and c.value.kind in ("literal", "number") and not (c.apart or c.name_filter or c.any_of))


def _span_paths(per_span: list[list[tuple[Cond | None, tuple[int, int]]]]) -> dict[tuple[int, int], set[Path]]:
    """Per question span, the paths its readings take from the focus class (`or_joined`: two spans one attribute
    may hold are that attribute's list, never an either-or of two attributes)."""
    out: dict[tuple[int, int], set[Path]] = {}
    for grp in per_span:
        for cond, sp in grp:
            if cond is not None:
                out.setdefault(sp, set()).add(cond.path)
    return out


def propose(ctx: ExploreContext, paths: SchemaPaths, display: DisplayColumns | None, a: Anchors
            ) -> tuple[list[Graph], bool]:
    """The propose stage: every candidate graph the search builds around the anchors, each once, and whether the
    search stopped at its time budget or candidate cap."""
    search = Search(ctx.schema, paths, ctx.store, budget_s=ctx.settings.budget_s, cap=ctx.settings.cap,
                    display=display)
    seen: set[str] = set()
    pool: list[Graph] = []
    for g in search.candidates(a):
        k = g.key()
        if k in seen:
            continue
        seen.add(k)
        pool.append(g)
    return pool, search.truncated
