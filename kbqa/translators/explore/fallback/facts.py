"""Does the store hold the facts of questions like this one? The case bank knows.

A sample store (wikidata-mini standing in for Wikidata) holds the facts of some benchmarks (SimpleQuestions: its
triples were sampled with it) and only the labels of others (LC-QuAD 2.0, QALD, WikiWebQuestions). There the
search still finds *some* query that runs — an unrelated predicate of the right entity — and no feature of that
candidate tells it from a right one. The solved questions nearest to this one do tell: each case records the
triples its gold query needs (`Case.checks`: the slot's entity in subject or object position of a property),
and whether those triples are in the store says whether questions of this kind can be answered by searching it.
Measured on wikidata-mini: the facts of 60 of 60 sampled SimpleQuestions train cases are there, of 1-11 in 60
for LC-QuAD 2.0 dev, QALD, RuBQ and WikiWebQuestions.
"""

from __future__ import annotations

from typing import Any

from kb_dumps.stage_errors import KBQAError
from kbqa.translators.explore import probes
from kbqa.translators.explore.context import ExploreContext
from kbqa.translators.mentions import mask

NEAREST = 5  # solved questions consulted
HELD_MIN = 0.5  # below this similarity-weighted share of nearest cases whose facts the store holds: fall back


class FactsCheck:
    """Whether the store holds the facts of the solved questions nearest to a question (see the docstring)."""

    def __init__(self, ctx: ExploreContext):
        self.ctx = ctx
        self._held: dict[str, bool] = {}  # case id -> its facts are in the store

    def lacking(self, question: str, spans: list[tuple[int, int]]) -> str | None:
        """A reason to take the case fallback (the nearest solved questions' facts are mostly not in the store),
        or None: no bank, no case, or the facts are there. `spans`: entity mentions, masked as the bank's own
        questions are."""
        x = self.ctx
        if not x.cases.usable():
            return None
        hits = x.cases.nearest(mask(question, spans, "something"), question, k=NEAREST)  # never its own case
        weight = sum(max(h.similarity, 0.0) for h in hits)
        if not hits or weight <= 0:
            return None
        held = sum(max(h.similarity, 0.0) for h in hits if self.holds(h.case))
        share = held / weight
        if share >= HELD_MIN:
            return None
        return (f"the store lacks the facts of the nearest solved questions (held for {share:.0%} of "
                f"{len(hits)}, by similarity)")

    def holds(self, case: Any) -> bool:
        """Every triple the case's gold query needs is in the store (a case with nothing to check: True)."""
        if case.id not in self._held:
            self._held[case.id] = self._check(case)
        return self._held[case.id]

    def _check(self, case: Any) -> bool:
        x = self.ctx
        slots = {s.name: s for s in case.slots}
        for chk in case.checks:
            slot = slots.get(chk.slot)
            if slot is None or not slot.uri:
                continue
            item, prop = x.profile.expand(slot.uri), x.profile.expand(chk.property)
            q = probes.has_fact(item, prop, subject=chk.position == "subject")
            if q is None:  # an IRI no query can hold: says nothing either way
                continue
            try:
                if not x.store.query(q, timeout_s=1.0).boolean:
                    return False
            except KBQAError:  # a probe that fails says nothing either way
                continue
        return True
