"""`explore`: a translator that needs no language model and no solved case — the knowledge graph proposes the
structure. Link the question (classes, predicates, quoted values, entities, numbers and cue words), enumerate
candidate query graphs around the anchors and check each by execution within a time budget
(`explore_search.py`), rank them with features and JSON weights (`explore_rank.py`), and write the best as
DeSQ with the URIs the search confirmed, so that parse, ground, assemble, execute, reports and evaluation
work unchanged. `details["candidates"]` keeps the top candidates with their features and scores
(`kbqa ask --explain` shows them).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from grounding.schema import SchemaMemory, open_schema
from kb_dumps.errors import KBQAError
from kb_dumps.label_memory import LabelMemory
from kb_dumps.layout import StoreLayout
from kb_dumps.profiles import get_profile
from kb_dumps.store import Store
from kbqa.translators.base import TranslateError, TranslationResult, Translator
from kbqa.translators.explore_anchors import number_units, value_owners
from kbqa.translators.explore_chooser import Chooser, make_chooser
from kbqa.translators.explore_display import DisplayColumns
from kbqa.translators.explore_facts import FactsCheck
from kbqa.translators.explore_fallback import WEAK_SCORE, CaseFallback, weak
from kbqa.translators.explore_features import CandidateFeatures
from kbqa.translators.explore_graphs import Graph, verbalise, write
from kbqa.translators.explore_link import Link, link_schema, link_values, read_cues
from kbqa.translators.explore_names import name_variants
from kbqa.translators.explore_prior import add_struct_prior
from kbqa.translators.explore_rank import AnyRanker, load_ranker
from kbqa.translators.explore_search import Anchors, SchemaPaths, Search
from kbqa.translators.explore_structure import add_question_features
from kbqa.translators.language import LanguageProfile, get_language
from kbqa.translators.settings import ModelSettings

DEFAULT_BUDGET_S = 2.0
DEFAULT_CAP = 400
SHOW_CANDIDATES = 5
CHECK_ROW_CAP = 1000  # rows the execution check reads of a candidate
# When the nearest case's structure, re-grounded (explore_fallback.py), replaces the search: "auto" when the search
# finds nothing or only a bare class list; "always" for a sample store that lacks most facts (LC-QuAD 2.0, QALD,
# WikiWebQuestions on wikidata-mini); "never".
FALLBACK_MODES = ("auto", "always", "never")
MAX_VARIANTS = 6  # weak links for respelt or shortened names (explore_names.py)


class ExploreTranslator(Translator):
    """Question -> DeSQ by query-graph search over the store (see the module docstring)."""

    name = "explore"
    frontends = ("desq",)

    def __init__(self, store_dir: str | Path, *, store: Store | None = None, memory: LabelMemory | None = None,
                 budget_s: float = DEFAULT_BUDGET_S, cap: int = DEFAULT_CAP, ranker: AnyRanker | None = None,
                 schema: SchemaMemory | None = None, bank: Any = None, weak_score: float | None = WEAK_SCORE,
                 fallback: str = "auto", language: str | LanguageProfile | None = None):
        self.store_dir = Path(store_dir)
        try:
            self.language = get_language(language)  # the words questions are read with (language.py)
        except ValueError as e:
            raise TranslateError(str(e), stage="usage") from None
        layout = StoreLayout.of(self.store_dir)
        if not layout.exists():
            raise TranslateError(f"no store at {self.store_dir}; build one with `kbqa ingest SOURCE --store "
                                 f"{self.store_dir}`")
        self.profile = get_profile(layout.profile_name)
        self._own_memory = memory is None
        self.memory = memory if memory is not None else LabelMemory(layout.labels, readonly=True)
        self._own_store = store is None
        if store is None:
            from kb_dumps.store import open_store

            store = open_store(self.store_dir)
        self.store = store
        self.schema = schema or open_schema(self.store_dir, store, self.profile, self.memory)
        self.paths = SchemaPaths(self.schema)
        self.display = DisplayColumns(self.schema, self.store)  # each class's name column, found once
        store_weights = layout.current / "ranker.json"  # written by `kbqa train --ranker` for this store
        self.ranker = ranker or _load_ranker(store_weights if store_weights.is_file() else None)
        self.budget_s, self.cap = budget_s, cap
        self.chooser: Chooser | None = None  # a model that picks among the top candidates (None: the ranker's pick)
        self._detector: Any = None
        self._bank: Any = bank  # the case bank the `case_vote` feature reads (None: the store's own, if any)
        self._cases: Any = None  # the cases translator over the same bank (the `case_entity` feature)
        self._exclude_ids: set[str] = set()
        self._exclude_questions: set[str] = set()
        self.weak_score = weak_score
        if fallback not in FALLBACK_MODES:
            raise TranslateError(f"unknown explore fallback {fallback!r}; choose one of {', '.join(FALLBACK_MODES)}")
        self.fallback = fallback
        self._fallback = CaseFallback(self)
        self._facts = FactsCheck(self)
        self._features = CandidateFeatures(self)

    def exclude(self, ids: set[str], questions: set[str]) -> None:
        """Benchmark questions `kbqa eval` scores never vote through the case bank."""
        from kbqa.translators.casebank import question_key

        self._exclude_ids |= ids
        self._exclude_questions |= {question_key(q) for q in questions}
        if self._cases is not None:
            self._cases.exclude(ids, questions)

    def close(self) -> None:
        if self.chooser is not None:
            self.chooser.close()
        if self._cases is not None:
            self._cases.close()
        if self._own_memory:
            self.memory.close()
        if self._own_store:
            self.store.close()

    # ---- linking -----------------------------------------------------------------------------------
    def _entities(self, question: str, avoid: Sequence[tuple[int, int]] = ()) -> list[Link]:
        """Entity mentions through the store's lexical index (the mention detector of the cases translator)."""
        if self._detector is None:
            from kbqa.translators.mentions import MentionDetector, open_lexicon

            bank = self._case_bank()
            # the mention prior learned from the bank's training questions, when the store has a bank
            prior = bank.prior if bank else None
            self._detector = MentionDetector(open_lexicon(self.store_dir), self.memory, prior, kinds=("entity",))
        out = []
        for m in self._detector.detect(question, max_mentions=4, max_candidates=3):
            for rank, c in enumerate(m.candidates):
                if c.id in self.schema.classes or c.id in self.schema.predicates:
                    continue
                out.append(Link("entity", c.id, m.score * c.match * (1.0 - 0.1 * rank), (m.start, m.end), m.text,
                                label=c.label))
        out.extend(self._partial_entities(question, out))
        out.sort(key=lambda lk: -lk.score)
        out = out[:8]
        part = self._detector.lexicon.parts.get("entity")
        if part is not None:  # names written differently from the label: weak links, the KG decides
            out += [lk for lk in name_variants(question, out, part, self.memory, avoid, self.language)
                    if lk.iri not in self.schema.classes and lk.iri not in self.schema.predicates][:MAX_VARIANTS]
        return out

    def _partial_entities(self, question: str, found: list[Link]) -> list[Link]:
        """Entities whose label contains a content word of the question as a whole token ("krill" names
        *krill f*), for spans no exact mention covers; weak links the search may still use."""

        from grounding.text import normalize

        part = self._detector.lexicon.parts.get("entity")
        if part is None:
            return []
        out: list[Link] = []
        for m in re.finditer(r"[A-Za-z][A-Za-z\-']{3,}", question):
            word = normalize(m.group(0))
            if word in self.language.function_words or any(lk.span[0] <= m.start() < lk.span[1] for lk in found):
                continue
            hits = [h for h in part.search(word, 8) if word in h.name.split() and len(h.name.split()) <= 2]
            rows = self.memory.by_rowids([h.rowid for h in hits])
            for h in hits[:2]:
                row = rows.get(h.rowid)
                if row is None or row.id in self.schema.classes or row.id in self.schema.predicates:
                    continue
                out.append(Link("entity", row.id, 0.25 / len(h.name.split()), (m.start(), m.end()), m.group(0),
                                label=row.label))
        return out

    def _case_bank(self) -> Any:
        """The case bank (given, or the store's own), loaded once; False when there is none."""
        if self._bank is None:
            from kbqa.translators.casebank import CaseBank, bank_dir

            folder = bank_dir(self.store_dir)
            self._bank = CaseBank.load(folder) if CaseBank.exists(folder) else False
        return self._bank

    def anchors(self, question: str) -> Anchors:
        lang = self.language
        cues = read_cues(question, lang)
        schema_links = link_schema(question, self.schema, lang=lang)
        classes = [lk for lk in schema_links if lk.kind == "class"]
        # a span that names a class or predicate well is not a respelt item name
        entities = self._entities(question, [lk.span for lk in schema_links if lk.score >= 0.5])
        self._qualify(question, entities, classes)
        predicates = [lk for lk in schema_links if lk.kind == "predicate"]
        values = link_values(question, self.schema, cues, lang)
        number_units(question, values, predicates, lang)
        value_owners(question, values, classes, self.schema, lang)
        return Anchors(question, cues, classes, predicates, values, entities, lang)

    def _qualify(self, question: str, entities: list[Link], classes: list[Link]) -> None:
        """"herring food": a class word right after an entity of that class says what the entity is; the
        entity's span takes the word and the class is a weak focus. Among items of the same name the one of that
        class is meant ("herring food" is the food, not the supplier called Herring; of two such foods, the one
        the KG uses most), and the class word covers a list before it ("herring and krill food", "herring, krill
        and pellet food") and each place it is written."""

        for c in classes:
            found = False
            for m in re.finditer(r"\b" + re.escape(c.text.lower()) + r"\b", question.lower()):
                end, last = m.start(), True
                while end > 0:
                    word = re.search(r"[A-Za-z][A-Za-z'\-]*(?:\s+[A-Za-z][A-Za-z'\-]*)?\s*$", question[:end])
                    if word is None:
                        break
                    here = [e for e in entities if e.span[1] <= end and not question[e.span[1]:end].strip()
                            and e.span[1] > word.start()]
                    start = min((e.span[0] for e in here), default=word.start())
                    named = self._pick_used([e for e in here if self._is_a(e.iri, c.iri)] +
                                            self._instances_named(question, (start, end), c.iri, here))
                    if named is None:
                        break
                    if all(e is not named for e in entities):
                        entities.append(named)
                    for e in here:  # the same name, of another class (or less used): kept, but weaker
                        if e is not named:
                            e.score *= 0.5
                    named.score = min(1.0, named.score + 0.3)
                    if last:
                        named.span = (named.span[0], m.end())
                    found, last = True, False
                    joint = self.language.list_joint_re.search(question[:named.span[0]])
                    if joint is None:
                        break
                    end = joint.start()
            if found:
                c.score *= 0.3

    def _instances_named(self, question: str, span: tuple[int, int], cls: str, same: list[Link]) -> list[Link]:
        """Items of class `cls` named by the last one or two words in `span` (the name may add one word, as
        *herring f* does), other than those already linked there (`same`)."""

        from grounding.text import normalize

        part = self._detector.lexicon.parts.get("entity") if self._detector else None
        if part is None:
            return []
        tokens = list(re.finditer(r"\S+", question[span[0]:span[1]]))
        # the words of a linked name are that name ("anna berg", never just "berg"); else the last two
        # words or the last one
        for n in range(min(2, len(tokens)), 0 if not same else min(2, len(tokens)) - 1, -1):
            name = normalize(" ".join(t.group() for t in tokens[-n:])).split()
            if not name or all(w in self.language.function_words for w in name):
                continue
            hits = [h for h in part.search(" ".join(name), 10)
                    if h.name.split()[:len(name)] == name and len(h.name.split()) <= len(name) + 1]
            rows = self.memory.by_rowids([h.rowid for h in hits[:5]])
            start = span[0] + tokens[-n].start()
            score = max((e.score for e in same), default=0.25)
            out = [Link("entity", row.id, score, (start, span[1]), question[start:span[1]], label=row.label)
                   for row in (rows.get(h.rowid) for h in hits[:5])
                   if row is not None and all(e.iri != row.id for e in same) and self._is_a(row.id, cls)]
            if out:
                return out
        return []

    def _pick_used(self, links: list[Link]) -> Link | None:
        """Of items named alike, the one the KG links to most (a stray duplicate is rarely used)."""
        if len(links) <= 1:
            return links[0] if links else None
        iris = " ".join(f"<{lk.iri}>" for lk in links)
        try:
            rows = self.store.query(f"SELECT ?x (COUNT(?s) AS ?n) WHERE {{ VALUES ?x {{ {iris} }} ?s ?p ?x }} "
                                    "GROUP BY ?x", timeout_s=1.0).to_dict()["rows"]
        except KBQAError:
            return links[0]
        used = {r[0]["value"]: int(r[1]["value"]) for r in rows if r[0] and r[1]}
        return max(links, key=lambda lk: used.get(lk.iri, 0))

    def _is_a(self, item: str, cls: str) -> bool:
        try:
            return bool(self.store.query(f"ASK {{ <{item}> <{self.schema.type_predicate}> <{cls}> }}",
                                         timeout_s=1.0).boolean)
        except KBQAError:  # a failing probe just means "not known to be"
            return False

    # ---- search ------------------------------------------------------------------------------------
    def search(self, question: str) -> tuple[Anchors, list[Graph], dict[str, Any]]:
        """Linked anchors, the checked candidates best first, and what the search did."""
        t0 = time.perf_counter()
        a = self.anchors(question)
        search = Search(self.schema, self.paths, self.store, budget_s=self.budget_s, cap=self.cap,
                        display=self.display)
        seen: set[str] = set()
        pool: list[Graph] = []
        for g in search.candidates(a):
            k = g.key()
            if k in seen:
                continue
            seen.add(k)
            pool.append(g)
        self._features.add(question, a, pool)
        add_struct_prior(question, pool, lang=self.language)
        add_question_features(question, pool)
        for g, score in zip(pool, self.ranker.score_all(pool), strict=True):
            g.score = score  # before execution: the order in which candidates are checked
        pool.sort(key=lambda g: -g.score)
        checked: list[Graph] = []
        executed = 0
        stop = t0 + self.budget_s * 1.5  # checking may run a little past the search budget, never far
        for g in pool:
            left = stop - time.perf_counter()
            if left <= 0 and checked:
                search.truncated = True
                break
            executed += 1
            try:
                # one slow candidate (a NOT EXISTS over every item) must not eat the others' time
                res = self.store.query(write(g, self.schema, desq=False), timeout_s=max(0.2, min(left, 0.5)),
                                       row_cap=CHECK_ROW_CAP)
            except KBQAError:  # a candidate the store refuses or times out on is dropped
                continue
            g.rows = 1 if res.kind == "ask" else len(res.rows)
            g.result = res
            if res.kind != "ask" and _all_empty(res.rows) and not (g.aggs and g.aggs[0][0] == "COUNT" and not g.group):
                continue
            checked.append(g)
        for g, score in zip(checked, self.ranker.score_all(checked), strict=True):
            g.score = score  # with what the execution check found
        checked.sort(key=lambda g: -g.score)
        info = {"candidates_built": len(pool), "executed": executed, "kept": len(checked),
                "truncated": search.truncated, "seconds": round(time.perf_counter() - t0, 4)}
        return a, checked, info

    def fallback_reason(self, question: str, a: Anchors, ranked: list[Graph]) -> str | None:
        """Why the case fallback should replace the search's answer (mode "auto"): nothing found, a bare class
        list, or a store that lacks the facts of the solved questions nearest to this one; None: keep it."""
        if self.fallback != "auto":
            return None
        return weak(ranked, self.weak_score) or \
            self._facts.lacking(question, [a.entities[0].span] if a.entities else [])

    def translate(self, question: str, frontend: str = "desq", *, qid: str | None = None) -> TranslationResult:
        self.check_frontend(frontend)
        t0 = time.perf_counter()
        if self.fallback == "always":  # a sample store: the nearest case's structure first, the search if none
            res = self._fallback.translate(question, "always (a sample store)", {}, qid=qid)
            if res is not None:
                res.seconds = time.perf_counter() - t0
                return res
        a, ranked, info = self.search(question)
        reason = self.fallback_reason(question, a, ranked)
        if reason:  # the store lacks the facts: the nearest case's structure, every slot re-grounded
            res = self._fallback.translate(question, reason, info, qid=qid)
            if res is not None:
                res.seconds = time.perf_counter() - t0
                return res
        if not ranked:
            linked = [f"{lk.kind} {lk.label or lk.text!r}" for lk in (a.classes + a.predicates + a.values +
                                                                         a.entities)[:8]]
            raise TranslateError(f"explore found no query graph with answers for this question; linked: "
                                 f"{', '.join(linked) or 'nothing'} (cues: {a.cues.to_dict() or 'none'})",
                                 qid=qid)
        chosen = self.chooser.choose(question, [verbalise(g, self.schema) for g in ranked[:self.chooser.k]]) \
            if self.chooser is not None else None
        best = ranked[chosen["used"] - 1] if chosen else ranked[0]
        text = write(best, self.schema, desq=True)
        details = {"search": info, "cues": a.cues.to_dict(),
                   "linked": [lk.to_dict() for lk in (a.classes + a.predicates + a.values + a.entities)[:12]],
                   "ranker": ranker_info(self.ranker),
                   "candidates": [{"score": round(g.score, 4), "family": g.family, "rows": g.rows,
                                   "contributions": self.ranker.contributions(g),
                                   "verbalised": verbalise(g, self.schema)} for g in ranked[:SHOW_CANDIDATES]]}
        if chosen is not None:
            details["chooser"] = chosen
        return TranslationResult(text, "desq", backend="explore", seconds=time.perf_counter() - t0, details=details)


def make(settings: ModelSettings, store_dir: str | Path | None, *, store: Store | None = None,
         memory: LabelMemory | None = None) -> ExploreTranslator:
    """The `explore` entry of `kbqa.translators.TRANSLATORS`."""
    if store_dir is None:
        raise TranslateError("the explore translator searches a store: give --store DIR (for a remote endpoint, "
                             "`kbqa ingest --endpoint URL --store DIR` first), or choose another --backend")
    ranker = _load_ranker(settings.explore_weights) if settings.explore_weights else None
    tr = ExploreTranslator(store_dir, store=store, memory=memory, budget_s=settings.explore_budget_s,
                           cap=settings.explore_cap, ranker=ranker, fallback=settings.explore_fallback)
    tr.chooser = make_chooser(settings)  # None unless a model backend is named (--explore-chooser)
    return tr


def _load_ranker(path: str | Path | None) -> AnyRanker:
    """The ranker in `path` (None: the shipped one); a bad file is a usage error naming it."""
    try:
        return load_ranker(path)
    except ValueError as e:
        raise TranslateError(f"{e}; write one with `kbqa train --ranker` or unset KBQA_EXPLORE_WEIGHTS",
                             stage="usage") from None


def ranker_info(ranker: AnyRanker) -> dict[str, Any]:
    """Which ranker chose (the step report and `--explain` say it): its file, kind and what it was fitted on."""
    kind = "trees" if hasattr(ranker, "trees") else "linear"
    info: dict[str, Any] = {"file": ranker.source or "(given in code)", "kind": kind}
    for key in ("fitted_on", "command", "source"):
        if key in ranker.meta:
            info[key] = ranker.meta[key]
    return info


def _all_empty(rows: list[list[Any]]) -> bool:
    return not rows or all(all(c is None for c in r) for r in rows)
