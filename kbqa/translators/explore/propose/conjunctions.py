"""How the or-word and the and-word join the constraints a search reads (propose/search.py, propose/shapes.py).

- `merge_or`: two values of one path joined by the or-word are one `in` constraint ("in 2015 or 2017"), focus items
  joined by the and-word are listed, and two values of one related item's attribute joined by the and-word are two
  related items (`Cond.apart`);
- `either`: two comparisons of one attribute joined by the or-word are one `either` constraint;
- `or_joined`: two constraints on different attributes joined by the or-word are one `any` constraint.

The words themselves are the language profile's (`lang.or_word`, `lang.and_word`).
"""

from __future__ import annotations

import dataclasses
import re

from kbqa.translators.explore.link.anchors import Anchors
from kbqa.translators.explore.query import Cond, Path
from kbqa.translators.language import ENGLISH, LanguageProfile


def merge_or(conds: list[Cond], spans: list[tuple[int, int]], question: str, lists: bool = True,
              lang: LanguageProfile = ENGLISH) -> tuple[list[Cond], list[tuple[int, int]]]:
    """Two values of the same path joined by "or" ("in 2015 or 2017") become one `IN` constraint; with `lists`,
    so do focus items joined by "and" ("the average age of X and Y"; a yes/no question means both, not either)."""
    out: list[Cond] = []
    out_spans: list[tuple[int, int]] = []
    for c, sp in sorted(zip(conds, spans, strict=True), key=lambda cs: cs[1][0]):
        prev = out[-1] if out else None
        gap = f" {question[out_spans[-1][1]:sp[0]].lower()} " if out_spans else ""
        # "X or Y" on one path is either value; "X and Y" of the focus items themselves lists them
        if (prev is not None and prev.op in ("=", "in") and c.op == "=" and prev.path == c.path and c.value
                and (f" {lang.or_word} " in gap or (lists and c.path == () and (f" {lang.and_word} " in gap
                                                                              or gap.strip() == ",")))):
            vals = prev.values or ([prev.value] if prev.value else [])
            out[-1] = Cond(prev.path, "in", prev.value, text=f"{prev.text} or {c.text}", score=prev.score,
                           values=vals + [c.value], span=prev.span)
            out_spans.append(sp)
            continue
        # "both X and Y" of a related item: one related item is X, another Y (one item cannot be both)
        if (prev is not None and prev.op == "=" and c.op == "=" and prev.path == c.path and c.path and c.value
                and f" {lang.and_word} " in gap):
            c = dataclasses.replace(c, apart=True)
        out.append(c)
        out_spans.append(sp)
    return out, out_spans


def either(a: Anchors, conds: list[Cond]) -> list[Cond]:
    """Two comparisons of one attribute with the or-word between them ("before 2000 or after 2010"): one
    condition that holds when either does, not two that no item meets together."""
    q, out = a.question.lower(), []
    for c in conds:
        prev = out[-1] if out else None
        if prev is not None and prev.op in _COMPARE and c.op in _COMPARE and prev.path == c.path and \
                prev.value is not None and c.value is not None and prev.span and c.span and \
                _says_or(a, q[prev.span[1]:c.span[0]]):
            out[-1] = Cond(prev.path, "either", None, text=f"{prev.text} {a.lang.or_word} {c.text}",
                           span=(prev.span[0], c.span[1]), either=[(prev.op, prev.value), (c.op, c.value)])
        else:
            out.append(c)
    return out


_COMPARE = ("<", ">", "<=", ">=")
# constraints an either-or of two attributes may join: a value, a list of values, a comparison, a range
_JOINABLE = ("=", "in", "either", "contains", "!=", *_COMPARE)
MAX_OR_GAP = 8  # words between two constraints joined by the or-word ("whose maker is Acme or whose memory …")


def or_joined(a: Anchors, conds: list[Cond],
              span_paths: dict[tuple[int, int], set[Path]] | None = None) -> list[Cond]:
    """Two constraints on different attributes with the or-word between them ("phones made by Acme or with more
    than 32 GB"): one constraint that holds when either does (op "any"), not two that must both hold. One value
    or two comparisons of the same attribute are `merge_or`'s and `either`'s, and so are two values whose spans
    `span_paths` reads on a common path (the reading on that attribute is among the condition sets); a negated,
    apart, name-word or compared-with-another-item constraint is left as it is."""
    def joinable(c: Cond) -> bool:
        return (c.op in _JOINABLE and c.span is not None and not (c.negated or c.apart or c.name_filter or c.any_of)
                and c.other is None and c.versus_average is None and bool(c.value or c.values or c.either))

    q = a.question.lower()
    ordered = sorted(conds, key=lambda c: c.span[0] if c.span else -1)
    out: list[Cond] = []
    for c in ordered:
        prev = out[-1] if out else None
        if prev is not None and joinable(prev) and joinable(c) and prev.path != c.path:
            assert prev.span is not None and c.span is not None
            if span_paths and span_paths.get(prev.span, set()) & span_paths.get(c.span, set()):
                out.append(c)
                continue
            gap = q[prev.span[1]:c.span[0]]
            if len(gap.split()) <= MAX_OR_GAP and _says_or(a, gap):
                out[-1] = Cond((), "any", None, text=f"{prev.text} {a.lang.or_word} {c.text}",
                               score=min(prev.score, c.score), span=(prev.span[0], c.span[1]), any_of=[prev, c])
                continue
        out.append(c)
    return out if len(out) < len(conds) else conds


def _says_or(a: Anchors, text: str) -> bool:
    return re.search(rf"\b{re.escape(a.lang.or_word)}\b", text) is not None
