"""`explore`'s first fallback on a Wikidata store that lacks the facts: the question's own query structure, learned
from the Wikidata train sets (the `structure` translator: a fitted skeleton chooser and re-ranker, entity slots from
the label memory's mentions, property slots from a fitted scorer).

A sample store holds a sliver of Wikidata, so a partial fact the search finds near a linked name is usually the
wrong answer; the learned skeleton writes the query the question asks for, whether or not the store can answer it.
When to prefer it over the search (`lacking`): in mode `fitted`, a fitted decision (decision.py: a logistic
regression over the store's and the search's evidence, fitted on train questions); by default (`auto`) a hand rule
whose evidence is the store's own — an entity the learned structure
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
from kbqa.translators.explore.fallback.decision import THRESHOLD, Evidence, FactsDecision
from kbqa.translators.explore.query import Graph
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
        self._facts: dict[str, int] = {}  # entity -> predicate groups beyond its names in the store
        self.last_decision: dict[str, Any] | None = None  # the last fitted decision's probability and features
        self.applies = ctx.profile.name == "wikidata" and MODEL_PATH.is_file()
        # the fitted fact-lack decision (mode "fitted"); None: the hand rule decides
        self.decision = FactsDecision.load() if ctx.settings.fallback == "fitted" and self.applies else None

    def translator(self) -> StructureTranslator:
        if self._translator is None:  # built on first use: most questions on most stores never need it
            self._translator = StructureTranslator(self.ctx.store_dir, memory=self.ctx.memory)
        return self._translator

    def use_model(self, model: StructureModel) -> None:
        """Answer with another fitted model (a bench's model fitted without the sets it scores)."""
        self.close()
        self._last = None
        self._translator = StructureTranslator(self.ctx.store_dir, memory=self.ctx.memory, model=model)

    def lacking(self, question: str, search_entities: set[str], *, search: Graph | None = None,
                held_share: float | None = None, qid: str | None = None) -> str | None:
        """Why the learned structure should answer instead of the search, or None. `search_entities`: the IRIs of
        the entities the search's best candidate (`search`) uses; `held_share`: the case bank's share of nearest
        solved questions whose facts the store holds (None: no bank about this store). In mode "fitted" the fitted
        decision's probability decides; otherwise the hand rule of the module docstring."""
        if not self.applies:
            return None
        res = self._translate(question, qid)
        if res is None:
            return None
        named = self._named_entities(res)
        if self.decision is None:
            return self._hand_rule(named, search_entities)
        feats = self.evidence(named, search_entities, search, held_share).features()
        p = self.decision.p_lacks(feats)
        self.last_decision = {"p_lacks": round(p, 4), "features": feats,
                              "contributions": {k: round(v, 4) for k, v in self.decision.contributions(feats).items()}}
        if p < THRESHOLD:
            return None
        return f"the store likely lacks the facts (P = {p:.2f}; {self.decision.explain(feats)})"

    def evidence_for(self, question: str, search_entities: set[str], search: Graph | None,
                     held_share: float | None, *, qid: str | None = None) -> Evidence | None:
        """`evidence` for a question (None where the learned structure writes no query): what the decision's
        fit (kbqa/training/facts_decision.py) records for a train question."""
        res = self._translate(question, qid) if self.applies else None
        return None if res is None else self.evidence(self._named_entities(res), search_entities, search, held_share)

    def evidence(self, named: list[str], search_entities: set[str], search: Graph | None,
                 held_share: float | None) -> Evidence:
        """The store's and the search's evidence about the entities the learned structure names."""
        expanded = {self.ctx.profile.expand(e) for e in named}
        return Evidence(facts=[self.facts_count(e) for e in named], search_found=search is not None,
                        search_score=float(search.score) if search is not None else 0.0,
                        search_rows=int(search.rows or 0) if search is not None else 0,
                        search_other_entity=bool(search_entities - expanded),
                        search_entities=len(search_entities), bank_held_share=held_share)

    def _named_entities(self, res: TranslationResult) -> list[str]:
        """The entities the learned query names, minus those in a class position (the object of instance-of /
        subclass-of)."""
        entities = [str(slot["value"]) for slot in res.details["structure"].get("slots") or []
                    if str(slot.get("value") or "").startswith(WD_ENTITY)]
        classes = set(_CLASS_OBJECT.findall(res.text))
        return list(dict.fromkeys(e for e in entities if e not in classes))

    def _hand_rule(self, named: list[str], search_entities: set[str]) -> str | None:
        """Without a fitted decision: an entity the structure names has no fact beyond its names, and the search's
        best uses no entity the structure leaves out."""
        if search_entities - {self.ctx.profile.expand(e) for e in named}:
            return None  # the search read another entity than the structure: keep its reading
        bare = [e for e in named if self.facts_count(e) == 0]
        if not bare:
            return None
        return f"the store holds no fact of {', '.join(bare[:3])} beyond names (an entity the learned structure names)"

    def facts_count(self, entity: str) -> int:
        """The predicate groups (predicate, direction) `entity` takes part in beyond its names, up to EDGE_GROUPS;
        -1 when the probe cannot tell (then it counts as having facts: the search is kept)."""
        if entity not in self._facts:
            names = {*self.ctx.profile.label_predicates, *self.ctx.profile.description_predicates,
                     *self.ctx.profile.alias_predicates}
            q = probes.edges(self.ctx.profile.expand(entity), EDGE_GROUPS)
            try:
                rows = self.ctx.store.query(q, timeout_s=1.0).rows if q else None
            except KBQAError:  # a probe that fails says nothing
                rows = None
            self._facts[entity] = -1 if rows is None else sum(1 for r in rows if r[0] and r[0]["value"] not in names)
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

