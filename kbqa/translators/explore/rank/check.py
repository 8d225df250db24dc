"""The rank stage: score the proposed candidates, check them by execution in that order (within the time left,
dropping those without answers unless ASK or COUNT), and score the survivors again with what execution found
(their row counts, and how their answers agree: features/answers.py)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from kb_dumps.stage_errors import KBQAError
from kbqa.translators.explore.context import ExploreContext
from kbqa.translators.explore.features.answers import add_answer_features
from kbqa.translators.explore.lower.text import write
from kbqa.translators.explore.query import Graph
from kbqa.translators.explore.rank.rankers import AnyRanker

if TYPE_CHECKING:
    from kb_dumps.store_types import Term

CHECK_ROW_CAP = 1000  # rows the execution check reads of a candidate


def rank_by_execution(ctx: ExploreContext, ranker: AnyRanker, pool: list[Graph], started: float
                      ) -> tuple[list[Graph], int, bool]:
    """The checked candidates best first, how many were run, and whether the time ran out first. `started`:
    when the question's search began (checking may run a little past the search budget, never far)."""
    for g, score in zip(pool, ranker.score_all(pool), strict=True):
        g.score = score  # before execution: the order in which candidates are checked
    pool.sort(key=lambda g: -g.score)
    checked: list[Graph] = []
    executed = 0
    truncated = False
    stop = started + ctx.settings.budget_s * 1.5
    for g in pool:
        left = stop - time.perf_counter()
        if left <= 0 and checked:
            truncated = True
            break
        executed += 1
        try:
            # one slow candidate (a NOT EXISTS over every item) must not eat the others' time
            res = ctx.store.query(write(g, ctx.schema, desq=False), timeout_s=max(0.2, min(left, 0.5)),
                                  row_cap=CHECK_ROW_CAP)
        except KBQAError:  # a candidate the store refuses or times out on is dropped
            continue
        g.rows = 1 if res.kind == "ask" else len(res.rows)
        g.result = res
        if res.kind != "ask" and _all_empty(res.rows) and not (g.aggs and g.aggs[0][0] == "COUNT" and not g.group):
            continue
        checked.append(g)
    add_answer_features(checked)  # listwise: how the candidates' answers agree, known only now
    for g, score in zip(checked, ranker.score_all(checked), strict=True):
        g.score = score  # with what the execution check found
    checked.sort(key=lambda g: -g.score)
    return checked, executed, truncated


def _all_empty(rows: list[list[Term | None]]) -> bool:
    return not rows or all(all(c is None for c in r) for r in rows)
