"""`explore`'s first fallback on a Wikidata store that lacks the facts: the question's own query structure, learned
from the Wikidata train sets (the `structure` translator: a fitted skeleton chooser and re-ranker, entity slots from
the label memory's mentions, property slots from a fitted scorer).

A sample store holds a sliver of Wikidata, so a partial fact the search finds near a linked name is usually the
wrong answer; the learned skeleton writes the query the question asks for, whether or not the store can answer it.
On the Wikidata dev sets the learned structure writes better queries than the nearest case re-filled (BENCHMARKS.md
"structure"), so it goes first; the case fallback stays for a question whose skeleton slots the question cannot fill.
Only Wikidata stores: the model's properties and skeletons are Wikidata's.
"""

from __future__ import annotations

from typing import Any

from kb_dumps.stage_errors import KBQAError
from kbqa.translators.base import TranslationResult
from kbqa.translators.explore.context import ExploreContext
from kbqa.translators.structure.answer import MODEL_PATH, StructureModel
from kbqa.translators.structure.translator import StructureTranslator

# The learned structure answers only when the fitted re-ranker gives its skeleton at least this probability; below
# it the nearest case is the better bet. 0 keeps every filled skeleton: on LC-QuAD 2.0 and WikiWebQuestions dev the
# structure beat the case fallback on the same questions without a cut (BENCHMARKS.md "structure").
MIN_CONFIDENCE = 0.0


class StructureFallback:
    """The learned structure's DeSQ for a question explore's search cannot answer from the store."""

    def __init__(self, ctx: ExploreContext):
        self.ctx = ctx
        self._translator: StructureTranslator | None = None
        self.applies = ctx.profile.name == "wikidata" and MODEL_PATH.is_file()

    def translator(self) -> StructureTranslator:
        if self._translator is None:  # built on first use: most questions on most stores never need it
            self._translator = StructureTranslator(self.ctx.store_dir, memory=self.ctx.memory)
        return self._translator

    def use_model(self, model: StructureModel) -> None:
        """Answer with another fitted model (a bench's model fitted without the sets it scores)."""
        self.close()
        self._translator = StructureTranslator(self.ctx.store_dir, memory=self.ctx.memory, model=model)

    def translate(self, question: str, reason: str, search_info: dict[str, Any], *,
                  qid: str | None = None) -> TranslationResult | None:
        """The learned structure's translation, or None (not a Wikidata store, a slot the question cannot fill,
        or a skeleton below `MIN_CONFIDENCE`): then the case fallback is tried."""
        if not self.applies:
            return None
        try:
            res = self.translator().translate(question, qid=qid)
        except KBQAError:  # an unfillable skeleton: the case fallback, then explore's own answer
            return None
        structure = res.details.get("structure") or {}
        if float(structure.get("confidence") or 0.0) < MIN_CONFIDENCE:
            return None
        res.backend = "explore"
        res.details = {"fallback": {"kind": "structure", "reason": reason}, "structure": structure,
                       "search": search_info}
        return res

    def close(self) -> None:
        if self._translator is not None:
            self._translator.close()
