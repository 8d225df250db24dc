"""The features a fitted ranker reads from one `explore` candidate: what the search scored (coverage, similarity,
case votes, …), the candidate's own structure (its form, aggregates, grouping, ordering, constraints), and the
question's words.

Nothing here knows a language: the question's words enter as `qw:<word>` (and its first word as `q0:<word>`),
and which words matter — with which structures — is learned from the train KGs (the fitted file keeps the
vocabulary it uses; words it never saw are ignored). A cue word read by the linker is one more feature the
ranker weighs, never a gate.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from kbqa.translators.explore.query import Graph

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)
AGGREGATES = ("COUNT", "AVG", "MIN", "MAX", "SUM")
FAMILIES = ("class", "compare", "count_compare", "group", "hop", "percent")
COMPARISONS = ("<", ">", "<=", ">=")


def question_words(question: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(question)]


def question_features(question: str) -> dict[str, float]:
    """`qw:<w>` for each word, `q0:<w>` / `q1:<w>` for the first two, the word count and the comma count."""
    words = question_words(question)
    f = {f"qw:{w}": 1.0 for w in words}
    for i, w in enumerate(words[:2]):
        f[f"q{i}:{w}"] = 1.0
    f["q_len"] = float(len(words))
    f["q_commas"] = float(question.count(","))
    f["q_numbers"] = float(sum(w.replace(".", "").isdigit() for w in words))
    return f


def add_question_features(question: str, graphs: Iterable[Graph]) -> None:
    qf = question_features(question)
    for g in graphs:
        g.features.update(qf)


def structure_features(g: Graph) -> dict[str, float]:
    """One-hot and count features of the candidate's query structure (`s_*`, `fam:*`)."""
    if g.parts:
        f = {f"s_part_{k}": v for k, v in structure_features(g.parts[0]).items() if not k.startswith("fam:")}
    else:
        f = {}
    f[f"fam:{g.family}"] = 1.0
    f["s_ask"] = 1.0 if g.form == "ask" else 0.0
    for name, path in g.aggs:
        f[f"s_{name.lower()}"] = f.get(f"s_{name.lower()}", 0.0) + 1.0
        if path is None:
            f["s_agg_focus"] = 1.0
    f["s_n_aggs"] = float(len(g.aggs))
    f["s_group"] = 1.0 if g.group else 0.0
    if g.order is not None:
        f["s_order"] = 1.0
        f["s_order_desc"] = 1.0 if g.order[1] else 0.0
        f["s_order_agg"] = 1.0 if g.order[0] is None else 0.0
    if g.limit is not None:
        f["s_limit"] = 1.0
        f["s_limit1"] = 1.0 if g.limit == 1 else 0.0
    if g.having is not None:
        f["s_having"] = 1.0
        f[f"s_having_{_op_name(g.having[0])}"] = 1.0
    f["s_n_answer"] = float(len(g.answer))
    f["s_answer_focus"] = 1.0 if () in g.answer else 0.0
    f["s_answer_depth"] = float(max((len(p) for p in g.answer), default=0))
    f["s_distinct"] = 1.0 if g.distinct else 0.0
    f["s_focus_class"] = 1.0 if g.focus_class else 0.0
    flat = g.flat_conds()
    f["s_n_conds"] = float(len(flat))
    if any(c.any_of for c in g.conds):
        f["s_or"] = 1.0  # two attributes' constraints of which one must hold
    for c in flat:
        key = "s_neg" if c.negated else f"s_op_{_op_name(c.op)}"
        f[key] = f.get(key, 0.0) + 1.0
        f["s_cond_depth"] = max(f.get("s_cond_depth", 0.0), float(len(c.path)))
        if c.other is not None:
            f["s_other"] = 1.0
        if c.apart:
            f["s_apart"] = 1.0
        if c.shared:
            f["s_shared"] = 1.0
        if c.versus_average:
            f["s_vs_avg"] = 1.0
        if c.value is not None:
            f[f"s_value_{c.value.kind}"] = f.get(f"s_value_{c.value.kind}", 0.0) + 1.0
    if g.combine:
        f[f"s_combine_{_op_name(g.combine)}"] = 1.0
    if g.pred_set:
        f["s_pred_set"] = 1.0
    return f


def _op_name(op: str) -> str:
    return {"<": "lt", ">": "gt", "<=": "le", ">=": "ge", "=": "eq", "!=": "ne"}.get(op, op)


def graph_features(g: Graph) -> dict[str, float]:
    """Every feature of a candidate: the search's own, the structure's and the execution check's."""
    f = {k: float(v) for k, v in g.features.items()}
    f.update(structure_features(g))
    f["size"] = float(g.size())
    if g.rows is not None:
        f["has_rows"] = 1.0 if g.rows > 0 else 0.0
        f["log_rows"] = math.log1p(g.rows)
        f["one_row"] = 1.0 if g.rows == 1 else 0.0
    return f
