"""Role words: the question's words next to what each part of a candidate uses.

The same attribute can be asked for, ordered by, aggregated, grouped by or compared ("the park of the roller
coaster with the highest speed": *speed* orders, *park* is shown). Which role a question gives it is said by
the words right next to its name, and which words those are is a matter of the language and of the train KGs,
not of a word list here: each candidate gets `rw:<role>:<word>` for the words just before the name of each
attribute it uses in that role, and `ra:<role>:<word>` for the words just after a number it compares with:

  role          the attribute (or number) it marks
  show          an answer column beside the focus (not grouped)
  group         a GROUP BY column
  order_desc    the ORDER BY … LIMIT key, largest first (order_asc: smallest first)
  agg_<fn>      an aggregate's argument (agg_avg, agg_max, …)
  cmp_<op>      a comparison's number (cmp_gt, cmp_le, cmp_either, …): words before and after
  having_<op>   a HAVING count's number: words before and after
  neg           a NOT EXISTS of a related class: the words before the class's name

A word enters the fitted trees only when enough train questions have it in that role (`kbqa.training.ranker_fit`
thresholds these as it does the question's words). Beside them, counts of what the candidate uses without a
word naming it: `r_order_named` / `r_order_unnamed` (its order key), `r_agg_unnamed` (aggregated attributes no
word names), and `r_named_unused` (attribute names of the question, each a span, that the candidate uses nowhere).
"""

from __future__ import annotations

from kbqa.translators.explore.features.projection import span_groups
from kbqa.translators.explore.features.structure import question_words
from kbqa.translators.explore.link.anchors import Anchors
from kbqa.translators.explore.query import Graph, Path

BEFORE, AFTER = "rw:", "ra:"
ROLE_PREFIXES = (BEFORE, AFTER)
WINDOW = 2  # words either side
_OPS = {"<": "lt", ">": "gt", "<=": "le", ">=": "ge", "=": "eq", "!=": "ne", "either": "either", "in": "in"}
Span = tuple[int, int]


def words_before(question: str, start: int, n: int = WINDOW) -> list[str]:
    return question_words(question[:start])[-n:]


def words_after(question: str, end: int, n: int = WINDOW) -> list[str]:
    return question_words(question[end:])[:n]


class _RoleReader:
    """One question's spans: where each predicate and each number is named."""

    def __init__(self, a: Anchors):
        self.a = a
        self.pred_spans: dict[str, list[Span]] = {}
        for lk in a.predicates:
            self.pred_spans.setdefault(lk.iri, []).append(lk.span)
        self.number_spans: dict[float, list[Span]] = {}
        for value, start, end in a.cues.numbers:
            self.number_spans.setdefault(value, []).append((start, end))
        self.named_groups = list(span_groups([(lk.span, lk.iri) for lk in a.predicates]).values())

    def path_spans(self, path: Path | None) -> list[Span]:
        return self.pred_spans.get(path[-1].pred, []) if path else []

    def features(self, g: Graph) -> dict[str, float]:
        f: dict[str, float] = {}
        q = self.a.question

        def before(role: str, spans: list[Span]) -> None:
            for span in spans:
                for w in words_before(q, span[0]):
                    f[f"{BEFORE}{role}:{w}"] = 1.0

        def around(role: str, spans: list[Span]) -> None:
            before(role, spans)
            for span in spans:
                for w in words_after(q, span[1]):
                    f[f"{AFTER}{role}:{w}"] = 1.0

        for path in g.answer:
            if path:
                before("group" if g.group else "show", self.path_spans(path))
        if g.order is not None and g.order[0]:
            spans = self.path_spans(g.order[0])
            before("order_desc" if g.order[1] else "order_asc", spans)
            f["r_order_named" if spans else "r_order_unnamed"] = 1.0
        for fn, path in g.aggs:
            if path:
                spans = self.path_spans(path)
                before(f"agg_{fn.lower()}", spans)
                if not spans:
                    f["r_agg_unnamed"] = f.get("r_agg_unnamed", 0.0) + 1.0
        for c in g.flat_conds():
            if c.negated:
                if c.span:
                    before("neg", [c.span])
                continue
            op = _OPS.get(c.op)
            if op is None:
                continue
            terms = [t for _, t in c.either] if c.either else c.values or ([c.value] if c.value else [])
            for t in terms:
                if t.kind == "number" or _is_number(t.value):
                    around(f"cmp_{op}", self.number_spans.get(float(t.value), []))
        if g.having is not None:
            around(f"having_{_OPS.get(g.having[0], 'op')}", self.number_spans.get(float(g.having[1]), []))
        used = _used_preds(g)
        f["r_named_unused"] = float(sum(1 for preds in self.named_groups if not preds & used))
        return f


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _used_preds(g: Graph) -> set[str]:
    out: set[str] = set()
    paths = [*g.answer, *(p for _, p in g.aggs), *(c.path for c in g.flat_conds())]
    if g.order is not None:
        paths.append(g.order[0])
    for path in paths:
        for step in path or ():
            out.add(step.pred)
    for part in g.parts:
        out |= _used_preds(part)
    return out


def add_role_features(a: Anchors, graphs: list[Graph]) -> None:
    """Set the features above on every candidate (in place)."""
    reader = _RoleReader(a)
    for g in graphs:
        g.features.update(reader.features(g))
