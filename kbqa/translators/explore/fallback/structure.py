"""`explore`'s first fallback on a Wikidata store that lacks the facts: the question's own query structure, learned
from the Wikidata train sets (the `structure` translator: a fitted skeleton chooser and re-ranker, entity slots from
the label memory's mentions, property slots from a fitted scorer).

A sample store holds a sliver of Wikidata, so a partial fact the search finds near a linked name is usually the
wrong answer; the learned skeleton writes the query the question asks for, whether or not the store can answer it.
When to prefer it over the search (`lacking`): the evidence is the store's own — an entity the learned structure
names (not as a class: the object of instance-of / subclass-of) has no fact in the store beyond its names (label,
description, aliases), so no candidate of the search can use it, and the search's best candidate uses no entity
the structure leaves out: the search answered a part of the question (a partial match), not another reading of
it. When the search's best uses an entity the structure does not name (the structure read another mention), or
every entity has facts, the choice stays with the search and the case bank's check, as before.
On the Wikidata dev sets the learned structure writes better queries than the nearest case re-filled (BENCHMARKS.md
"structure"), so it goes first; the case fallback stays for a question whose skeleton slots the question cannot fill.
Only Wikidata stores: the model's properties and skeletons are Wikidata's.
"""

from __future__ import annotations

import re
from typing import Any

from kb_dumps.stage_errors import KBQAError
from kbqa.translators.base import TranslationResult
from kbqa.translators.explore import probes
from kbqa.translators.explore.context import ExploreContext
from kbqa.translators.structure.answer import MODEL_PATH, StructureModel
from kbqa.translators.structure.translator import StructureTranslator

# The learned structure answers only when the fitted re-ranker (fitted on a held-out third of the train sets to give
# the probability that a filled skeleton is the right one) says its skeleton is more likely right than not; below
# that the nearest case, then the search, answer. 0.5 is that probability's decision boundary, not a tuned value.
MIN_CONFIDENCE = 0.5
EDGE_GROUPS = 50  # predicate groups read per entity: enough to see a fact that is not a name
WD_ENTITY = "wd:"
# an entity in a class position of the learned query (instance-of / subclass-of object): a class, not the subject
_CLASS_OBJECT = re.compile(r"wdt:P(?:31|279)[*+]?(?:/wdt:P279[*+]?)?\s+(wd:Q\d+)")


class StructureFallback:
    """The learned structure's DeSQ for a question explore's search cannot answer from the store."""

    def __init__(self, ctx: ExploreContext):
        self.ctx = ctx
        self._translator: StructureTranslator | None = None
        self._last: tuple[str, TranslationResult | None] | None = None  # the last question's structure
        self._facts: dict[str, bool] = {}  # entity -> has a fact beyond its names in the store
        self.applies = ctx.profile.name == "wikidata" and MODEL_PATH.is_file()

    def translator(self) -> StructureTranslator:
        if self._translator is None:  # built on first use: most questions on most stores never need it
            self._translator = StructureTranslator(self.ctx.store_dir, memory=self.ctx.memory)
        return self._translator

    def use_model(self, model: StructureModel) -> None:
        """Answer with another fitted model (a bench's model fitted without the sets it scores)."""
        self.close()
        self._last = None
        self._translator = StructureTranslator(self.ctx.store_dir, memory=self.ctx.memory, model=model)

    def lacking(self, question: str, search_entities: set[str], *, qid: str | None = None) -> str | None:
        """Why the learned structure should answer instead of the search (see the module docstring), or None.
        `search_entities`: the IRIs of the entities the search's best candidate uses."""
        if not self.applies:
            return None
        res = self._translate(question, qid)
        if res is None:
            return None
        entities = [slot["value"] for slot in res.details["structure"].get("slots") or []
                    if str(slot.get("value") or "").startswith(WD_ENTITY)]
        named = {self.ctx.profile.expand(e) for e in entities}
        if search_entities - named:  # the search read another entity than the structure: keep its reading
            return None
        classes = set(_CLASS_OBJECT.findall(res.text))
        bare = [e for e in entities if e not in classes and not self._has_facts(e)]
        if not bare:
            return None
        return f"the store holds no fact of {', '.join(bare[:3])} beyond names (an entity the learned structure names)"

    def _has_facts(self, entity: str) -> bool:
        if entity not in self._facts:
            names = {*self.ctx.profile.label_predicates, *self.ctx.profile.description_predicates,
                     *self.ctx.profile.alias_predicates}
            q = probes.edges(self.ctx.profile.expand(entity), EDGE_GROUPS)
            try:
                rows = self.ctx.store.query(q, timeout_s=1.0).rows if q else None
            except KBQAError:  # a probe that fails says nothing: assume the facts are there (keep the search)
                rows = None
            self._facts[entity] = rows is None or any(r[0] and r[0]["value"] not in names for r in rows)
        return self._facts[entity]

    def _translate(self, question: str, qid: str | None) -> TranslationResult | None:
        """The structure translator's result for `question`, computed once per question (lacking, then translate)."""
        if self._last is None or self._last[0] != question:
            try:
                res: TranslationResult | None = self.translator().translate(question, qid=qid)
            except KBQAError:  # an unfillable skeleton: the case fallback, then explore's own answer
                res = None
            self._last = (question, res)
        return self._last[1]

    def translate(self, question: str, reason: str, search_info: dict[str, Any], *,
                  qid: str | None = None) -> TranslationResult | None:
        """The learned structure's translation, or None (not a Wikidata store, a slot the question cannot fill,
        or a skeleton below `MIN_CONFIDENCE`): then the case fallback is tried."""
        if not self.applies:
            return None
        res = self._translate(question, qid)
        if res is None:
            return None
        structure = res.details.get("structure") or {}
        if float(structure.get("confidence") or 0.0) < MIN_CONFIDENCE:
            return None
        return TranslationResult(res.text, res.frontend, "explore", res.model, seconds=res.seconds,
                                 details={"fallback": {"kind": "structure", "reason": reason},
                                          "structure": structure, "search": search_info})

    def close(self) -> None:
        if self._translator is not None:
            self._translator.close()

