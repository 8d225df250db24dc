"""Does the store hold the facts of questions like this one? The case bank knows.

A sample store (wikidata-mini standing in for Wikidata) holds the facts of some benchmarks (SimpleQuestions: its
triples were sampled with it) and only the labels of others (LC-QuAD 2.0, QALD, WikiWebQuestions). There the
search still finds *some* query that runs — an unrelated predicate of the right entity — and no feature of that
candidate tells it from a right one. The solved questions nearest to this one do tell: each case records the
triples its gold query needs (`Case.checks`: the slot's entity in subject or object position of a property),
and whether those triples are in the store says whether questions of this kind can be answered by searching it.
Measured on wikidata-mini: the facts of 60 of 60 sampled SimpleQuestions train cases are there, of 1-11 in 60
for LC-QuAD 2.0 dev, QALD, RuBQ and WikiWebQuestions.

That reading needs a bank about this KG's items. A bank of another KG's questions (Spider4SPARQL train cases on
BESTIARY: their classes are `http://valuenet/ontop/...`) names items the store has never heard of, so none of its
facts is held and the check would send every question to the case fallback (BESTIARY explore 0.29 -> 0.01,
BENCHMARKS "The generic profile's default case bank"). So the check first asks whether the store knows the bank's
items at all (a sample of the IRIs its checks name, each in any triple): wikidata-mini knows 87% of its default
bank's, BESTIARY 0% of the Spider train bank's. Below KNOWN_MIN the bank says nothing about this store's facts.
"""

from __future__ import annotations

from typing import Any

from kb_dumps.stage_errors import KBQAError
from kbqa.translators.explore import probes
from kbqa.translators.explore.context import ExploreContext
from kbqa.translators.mentions import mask

NEAREST = 5  # solved questions consulted
HELD_MIN = 0.5  # below this similarity-weighted share of nearest cases whose facts the store holds: fall back
KNOWN_SAMPLE = 200  # distinct items of the bank's checks asked about once, spread over the bank
KNOWN_MIN = 0.2  # share of them the store must know (in any triple) for the bank to be about this KG


class FactsCheck:
    """Whether the store holds the facts of the solved questions nearest to a question (see the docstring)."""

    def __init__(self, ctx: ExploreContext):
        self.ctx = ctx
        self._held: dict[str, bool] = {}  # case id -> its facts are in the store
        self._same_kg: bool | None = None  # the bank names items this store knows (asked once)

    def lacking(self, question: str, spans: list[tuple[int, int]]) -> str | None:
        """A reason to take the case fallback (the nearest solved questions' facts are mostly not in the store),
        or None: no bank, no case, or the facts are there. `spans`: entity mentions, masked as the bank's own
        questions are."""
        return self.reason(self.held_share(question, spans))

    @staticmethod
    def reason(found: tuple[float, int] | None) -> str | None:
        """`lacking`'s reason from a `held_share` already computed."""
        if found is None or found[0] >= HELD_MIN:
            return None
        share, n = found
        return f"the store lacks the facts of the nearest solved questions (held for {share:.0%} of {n}, by similarity)"

    def held_share(self, question: str, spans: list[tuple[int, int]]) -> tuple[float, int] | None:
        """The similarity-weighted share of the nearest solved questions whose facts the store holds, and how many
        were consulted; None where the bank says nothing (no bank, a bank about another KG, no near case)."""
        x = self.ctx
        if not x.cases.usable() or not self.bank_is_about_this_kg():
            return None
        hits = x.cases.nearest(mask(question, spans, "something"), question, k=NEAREST)  # never its own case
        weight = sum(max(h.similarity, 0.0) for h in hits)
        if not hits or weight <= 0:
            return None
        held = sum(max(h.similarity, 0.0) for h in hits if self.holds(h.case))
        return held / weight, len(hits)

    def bank_is_about_this_kg(self) -> bool:
        """Whether the store knows the items the bank's checks name (see the module docstring); a bank with no
        checked item: True (nothing to tell it apart)."""
        if self._same_kg is None:
            items = self._checked_items()
            known = sum(self._known(i) for i in items)
            self._same_kg = not items or known / len(items) >= KNOWN_MIN
        return self._same_kg

    def _checked_items(self) -> list[str]:
        """Up to KNOWN_SAMPLE distinct IRIs named by the bank's checks, taken evenly over the bank's cases."""
        x = self.ctx
        bank = x.cases.bank()
        cases = bank.cases if bank else []
        step = max(1, len(cases) // KNOWN_SAMPLE)
        items: dict[str, None] = {}
        for case in cases[::step]:
            slots = {s.name: s for s in case.slots}
            for chk in case.checks:
                slot = slots.get(chk.slot)
                if slot is not None and slot.uri:
                    items.setdefault(x.profile.expand(slot.uri))
            if len(items) >= KNOWN_SAMPLE:
                break
        return list(items)

    def _known(self, item: str) -> bool:
        q = probes.mentioned(item)
        if q is None:
            return False
        try:
            return bool(self.ctx.store.query(q, timeout_s=1.0).boolean)
        except KBQAError:  # a probe that fails: count the item as unknown
            return False

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
