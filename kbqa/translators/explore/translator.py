"""`explore`: a translator that needs no language model and no solved case — the knowledge graph proposes the
structure. `ExploreTranslator.translate` is the whole path, top to bottom: link the question (link/), propose
candidate query graphs around the anchors (propose/), give them features (features/), rank them and check them
by execution (rank/), decide whether the case fallback should answer instead (fallback/), and lower the best to
DeSQ with the URIs the search confirmed (lower/), so that parse, ground, assemble, execute, reports and
evaluation work unchanged. `details["candidates"]` keeps the top candidates with their features and scores
(`kbqa ask --explain` shows them). Each stage is given the `ExploreContext` (context.py), never the translator.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from grounding.schema import SchemaMemory, open_schema
from kb_dumps.json_types import JsonObject
from kb_dumps.label_memory import LabelMemory
from kb_dumps.layout import StoreLayout
from kb_dumps.profiles import KBProfile, get_profile
from kb_dumps.store_types import Store
from kbqa.settings import TranslatorSettings
from kbqa.translators.base import TranslateError, TranslationResult, Translator
from kbqa.translators.explore.context import (
    DEFAULT_BUDGET_S,
    DEFAULT_CAP,
    FALLBACK_MODES,
    WEAK_SCORE,
    CaseBankView,
    ExploreContext,
    ExploreSettings,
)
from kbqa.translators.explore.fallback.cases import CaseFallback, weak
from kbqa.translators.explore.fallback.facts import FactsCheck
from kbqa.translators.explore.fallback.structure import StructureFallback
from kbqa.translators.explore.features.candidates import CandidateFeatures
from kbqa.translators.explore.features.prior import add_struct_prior
from kbqa.translators.explore.features.structure import add_question_features
from kbqa.translators.explore.link.anchors import Anchors, link_question
from kbqa.translators.explore.link.entities import EntityLinker
from kbqa.translators.explore.link.meaning import MeaningLinker
from kbqa.translators.explore.lower.result import no_graph_error, translation
from kbqa.translators.explore.lower.text import lower, verbalise
from kbqa.translators.explore.propose.display import DisplayColumns
from kbqa.translators.explore.propose.paths import SchemaPaths
from kbqa.translators.explore.propose.search import propose
from kbqa.translators.explore.query import Graph
from kbqa.translators.explore.rank.check import CHECK_ROW_CAP, rank_by_execution
from kbqa.translators.explore.rank.chooser import Chooser, make_chooser
from kbqa.translators.explore.rank.rankers import AnyRanker, load_ranker, ranker_info
from kbqa.translators.language import LanguageProfile, get_language

if TYPE_CHECKING:
    from kbqa.translators.casebank import CaseBank

__all__ = ["CHECK_ROW_CAP", "DEFAULT_BUDGET_S", "DEFAULT_CAP", "ExploreTranslator", "make", "open_ranker"]


class ExploreTranslator(Translator):
    """Question -> DeSQ by query-graph search over the store (see the module docstring)."""

    name = "explore"
    frontends = ("desq",)

    def __init__(self, store_dir: str | Path, *, store: Store | None = None, memory: LabelMemory | None = None,
                 budget_s: float = DEFAULT_BUDGET_S, cap: int = DEFAULT_CAP, ranker: AnyRanker | None = None,
                 schema: SchemaMemory | None = None, bank: CaseBank | None = None, weak_score: float | None = WEAK_SCORE,
                 fallback: str = "auto", language: str | LanguageProfile | None = None):
        store_dir = Path(store_dir)
        try:
            lang = get_language(language)  # the words questions are read with (kbqa/translators/language.py)
        except ValueError as e:
            raise TranslateError(str(e), stage="usage") from None
        layout = StoreLayout.of(store_dir)
        if not layout.exists():
            raise TranslateError(f"no store at {store_dir}; build one with `kbqa ingest SOURCE --store "
                                 f"{store_dir}`")
        if fallback not in FALLBACK_MODES:
            raise TranslateError(f"unknown explore fallback {fallback!r}; choose one of {', '.join(FALLBACK_MODES)}")
        profile = get_profile(layout.profile_name)
        self._own_memory, self._own_store = memory is None, store is None
        memory = memory if memory is not None else LabelMemory(layout.labels, readonly=True)
        if store is None:
            from kb_dumps.store import open_store

            store = open_store(store_dir)
        schema = schema or open_schema(store_dir, store, profile, memory)
        self.ctx = ExploreContext(store_dir, store, memory, profile, schema, lang,
                                  ExploreSettings(budget_s, cap, fallback, weak_score),
                                  CaseBankView(store_dir, store, memory, bank))
        store_weights = layout.current / "ranker.json"  # written by `kbqa train --ranker` for this store
        self.ranker = ranker or open_ranker(store_weights if store_weights.is_file() else None)
        self.chooser: Chooser | None = None  # a model that picks among the top candidates (None: the ranker's pick)
        # the stages' own state, built once per store
        self.entities = EntityLinker(self.ctx)  # the mention detector
        self.meaning = MeaningLinker(schema, lang)  # predicates named by a word of like meaning
        self.paths = SchemaPaths(schema)  # join paths between classes
        self.display = DisplayColumns(schema, store, lang)  # each class's name column, found once
        self.features = CandidateFeatures(self.ctx)  # the embedder and predicate vectors
        self.facts = FactsCheck(self.ctx)  # which solved questions' facts the store holds
        self.structure_fallback = StructureFallback(self.ctx)  # a Wikidata store: the learned query structure
        self.case_fallback = CaseFallback(self.ctx)

    # what callers read of the store (tests, training, bench)
    @property
    def store(self) -> Store:
        return self.ctx.store

    @property
    def schema(self) -> SchemaMemory:
        return self.ctx.schema

    @property
    def profile(self) -> KBProfile:
        return self.ctx.profile

    @property
    def language(self) -> LanguageProfile:
        return self.ctx.language

    def exclude(self, ids: set[str], questions: set[str]) -> None:
        """Benchmark questions `kbqa eval` scores never vote through the case bank."""
        self.ctx.cases.exclude(ids, questions)

    def close(self) -> None:
        if self.chooser is not None:
            self.chooser.close()
        self.structure_fallback.close()
        self.ctx.cases.close()
        if self._own_memory:
            self.ctx.memory.close()
        if self._own_store:
            self.ctx.store.close()

    # ---- the path ----------------------------------------------------------------------------------
    def anchors(self, question: str) -> Anchors:
        """The link stage alone: what the question names that the store knows, and its cue words."""
        return link_question(self.ctx, self.entities, question, self.meaning)

    def search(self, question: str) -> tuple[Anchors, list[Graph], JsonObject]:
        """Link, propose, features, rank: the anchors, the checked candidates best first, and what the search did."""
        t0 = time.perf_counter()
        anchors = link_question(self.ctx, self.entities, question, self.meaning)
        pool, truncated = propose(self.ctx, self.paths, self.display, anchors)
        self.features.add(question, anchors, pool)  # similarity, lexical overlap, the case bank's opinions
        add_struct_prior(question, pool, lang=self.ctx.language)  # P(shape, parts | the question's words)
        add_question_features(question, pool)  # the question's words, for the trees
        ranked, executed, out_of_time = rank_by_execution(self.ctx, self.ranker, pool, t0)
        info: JsonObject = {"candidates_built": len(pool), "executed": executed, "kept": len(ranked),
                "truncated": truncated or out_of_time, "seconds": round(time.perf_counter() - t0, 4)}
        return anchors, ranked, info

    def translate(self, question: str, frontend: str = "desq", *, qid: str | None = None) -> TranslationResult:
        self.check_frontend(frontend)
        t0 = time.perf_counter()
        if self.ctx.settings.fallback == "always":  # a sample store: the learned or the nearest case's structure
            res = self.fallback(question, "always (a sample store)", {}, qid=qid)
            if res is not None:
                res.seconds = time.perf_counter() - t0
                return res
        anchors, ranked, info = self.search(question)
        reason = self.fallback_reason(question, anchors, ranked)
        if reason:  # the store lacks the facts: the question's learned structure, else the nearest case's
            res = self.fallback(question, reason, info, qid=qid)
            if res is not None:
                res.seconds = time.perf_counter() - t0
                return res
        if not ranked:
            raise no_graph_error(anchors, qid)
        chosen = self.chooser.choose(question, [verbalise(g, self.ctx.schema) for g in ranked[:self.chooser.k]]) \
            if self.chooser is not None else None
        best = ranked[chosen["used"] - 1] if chosen else ranked[0]
        return translation(self.ctx, best, anchors, ranked, info, ranker=ranker_info(self.ranker),
                           contributions=self.ranker.explainer(ranked),
                           chosen=chosen, seconds=time.perf_counter() - t0)

    def fallback(self, question: str, reason: str, info: JsonObject, *,
                 qid: str | None = None) -> TranslationResult | None:
        """Where the store lacks the facts: the learned structure (Wikidata stores), else the nearest case's
        structure re-grounded from the question; None when neither fits."""
        return self.structure_fallback.translate(question, reason, info, qid=qid) or \
            self.case_fallback.translate(question, reason, info, qid=qid)

    def fallback_reason(self, question: str, a: Anchors, ranked: list[Graph]) -> str | None:
        """Why the fallback should replace the search's answer (modes "auto" and "fitted"): nothing found, a bare class list, a
        Wikidata store that holds no fact beyond names of an entity the learned structure names while the search's
        best uses no other entity (fallback/structure.py), or a store that lacks the facts of the solved questions
        nearest to this one; None: keep it."""
        if self.ctx.settings.fallback not in ("auto", "fitted"):
            return None
        gave_way = weak(ranked, self.ctx.settings.weak_score, names_entity=bool(a.entities))
        if gave_way:
            return gave_way
        spans = [a.entities[0].span] if a.entities else []
        used, sf = self.entities_used(ranked[0]), self.structure_fallback
        if sf.decision is None:  # the hand rule reads no bank: the bank is asked only when the rule keeps the search
            return sf.lacking(question, used, search=ranked[0]) or self.facts.lacking(question, spans)
        held = self.facts.held_share(question, spans)  # the fitted decision reads the bank's view: asked once
        return sf.lacking(question, used, search=ranked[0], held_share=held[0] if held else None) or \
            self.facts.reason(held)

    def entities_used(self, g: Graph) -> set[str]:
        """The IRIs of the items (not classes or predicates) a candidate graph names."""
        low = lower(g, self.ctx.schema)
        kinds = {line.name: line.kind for line in low.grounding}
        return {iri for name, iri in low.mapping.items() if iri and kinds.get(name) == "entity"}


def make(settings: TranslatorSettings, store_dir: str | Path | None, *, store: Store | None = None,
         memory: LabelMemory | None = None) -> ExploreTranslator:
    """The `explore` entry of `kbqa.translators.TRANSLATORS`."""
    if store_dir is None:
        raise TranslateError("the explore translator searches a store: give --store DIR (for a remote endpoint, "
                             "`kbqa ingest --endpoint URL --store DIR` first), or choose another --backend")
    ranker = open_ranker(settings.explore_weights) if settings.explore_weights else None
    tr = ExploreTranslator(store_dir, store=store, memory=memory, budget_s=settings.explore_budget_s,
                           cap=settings.explore_cap, ranker=ranker, fallback=settings.explore_fallback)
    tr.chooser = make_chooser(settings)  # None unless a model backend is named (--explore-chooser)
    return tr


def open_ranker(path: str | Path | None) -> AnyRanker:
    """The ranker in `path` (None: the shipped one); a bad file is a usage error naming it."""
    try:
        return load_ranker(path)
    except ValueError as e:
        raise TranslateError(f"{e}; write one with `kbqa train --ranker` or unset KBQA_EXPLORE_WEIGHTS",
                             stage="usage") from None
