"""What every stage of `explore` reads, in one small object: the store and what was built from it (schema memory,
label memory, KB profile), the language profile questions are read with, the settings (time budget, candidate
cap, fallback mode) and a view of the case bank. The stages are given this context, never the translator, so no
stage reads another's fields."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from grounding.schema import SchemaMemory
from kb_dumps.label_memory import LabelMemory
from kb_dumps.profiles import KBProfile
from kb_dumps.store_types import Store
from kbqa.translators.language import LanguageProfile

if TYPE_CHECKING:
    from kbqa.translators.base import TranslationResult
    from kbqa.translators.casebank import CaseBank, Hit
    from kbqa.translators.cases import CasesTranslator

DEFAULT_BUDGET_S = 2.0
DEFAULT_CAP = 400
# When the nearest case's structure, re-grounded (fallback/cases.py), replaces the search: "auto" when the search
# finds nothing or only a bare class list; "always" for a sample store that lacks most facts (LC-QuAD 2.0, QALD,
# WikiWebQuestions on wikidata-mini); "never"; "fitted": as auto, but on a Wikidata store the fitted fact-lack
# decision (fallback/decision.py) instead of the hand rule says when the learned structure answers — better queries
# where the store lacks most facts (LC-QuAD 2.0 dev +0.16 triple F1), a few questions lost where it holds them
# (SimpleQuestions valid -2.7 points): BENCHMARKS.md "A fitted fact-lack decision".
FALLBACK_MODES = ("auto", "fitted", "always", "never")
# The best search candidate must score at least this for `explore` to keep it over the fallback (ranker units;
# measured with bench/explore_fallback.py). None: no score threshold (the other reasons of `weak` still apply).
WEAK_SCORE = None


@dataclass(frozen=True)
class ExploreSettings:
    """How hard the search works and when the case fallback takes over."""

    budget_s: float = DEFAULT_BUDGET_S  # seconds for proposing candidates (checking them may take half as long again)
    cap: int = DEFAULT_CAP  # candidates proposed at most
    fallback: str = "auto"  # one of FALLBACK_MODES
    weak_score: float | None = WEAK_SCORE


class CaseBankView:
    """The store's case bank as explore's stages see it: loaded once (given, or the store's own), with the
    questions a benchmark scores excluded. A question never retrieves its own case: each lookup excludes it for
    that lookup only; the exclusions themselves change only through `exclude`."""

    def __init__(self, store_dir: Path, store: Store, memory: LabelMemory, bank: CaseBank | None = None):
        self.store_dir, self.store, self.memory = store_dir, store, memory
        self._bank: CaseBank | Literal[False] | None = bank  # None: not loaded yet; False: the store has none
        self._cases: CasesTranslator | None = None  # the `cases` translator over the same bank, built on first use
        self.exclude_ids: set[str] = set()
        self.exclude_questions: set[str] = set()

    def bank(self) -> CaseBank | Literal[False]:
        """The case bank, or False when there is none."""
        if self._bank is None:
            from kbqa.translators.casebank import CaseBank, bank_dir

            folder = bank_dir(self.store_dir)
            self._bank = CaseBank.load(folder) if CaseBank.exists(folder) else False
        return self._bank

    def usable(self) -> bool:
        """A bank with at least one case."""
        bank = self.bank()
        return bool(bank) and len(bank) > 0

    def exclude(self, ids: set[str], questions: set[str]) -> None:
        """Benchmark questions `kbqa eval` scores never vote through the case bank."""
        from kbqa.translators.casebank import question_key

        self.exclude_ids |= ids
        self.exclude_questions |= {question_key(q) for q in questions}
        if self._cases is not None:
            self._cases.exclude(ids, questions)

    def nearest(self, text: str, question: str, k: int) -> list[Hit]:
        """The `k` cases nearest to `text` (the question, masked), never `question`'s own nor an excluded one."""
        from kbqa.translators.casebank import question_key

        skip = self.exclude_questions | {question_key(question)}
        return self.bank().search(text, k=k, exclude_ids=self.exclude_ids or None, exclude_questions=skip)

    def cases_translator(self) -> CasesTranslator | None:
        """The `cases` translator over this bank (one per view, sharing the store and label memory); None when
        the bank is missing or empty."""
        if not self.usable():
            return None
        if self._cases is None:
            from kbqa.translators.cases import CasesTranslator

            self._cases = CasesTranslator(self.store_dir, bank=self.bank(), store=self.store, memory=self.memory)
            self._cases.exclude(self.exclude_ids, self.exclude_questions)
        return self._cases

    def translate_with_cases(self, question: str, *, qid: str | None = None) -> TranslationResult:
        """The `cases` translator's translation of `question` with its own case excluded (a benchmark scores bank
        questions too). The lookup runs on a shallow copy, so the shared exclusions are never changed."""
        from kbqa.translators.casebank import question_key

        cases = copy.copy(self.cases_translator())
        cases.exclude_questions = cases.exclude_questions | {question_key(question)}
        return cases.translate(question, qid=qid)

    def close(self) -> None:
        if self._cases is not None:
            self._cases.close()


@dataclass
class ExploreContext:
    """The store and what explore reads with it (see the module docstring)."""

    store_dir: Path
    store: Store
    memory: LabelMemory
    profile: KBProfile
    schema: SchemaMemory
    language: LanguageProfile
    settings: ExploreSettings
    cases: CaseBankView
