"""A translator over any model `Backend`: a prompt with the k most similar cases, an optional grammar, a repair turn.

Backends come from `kbqa.backends.BACKENDS` (openai, llama-cpp, hf); grammars from
`kbqa.translators.grammars.grammar_for(frontend)`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kb_dumps.json_types import JsonObject
from kbqa.backends.base import Backend
from kbqa.translators.base import TranslateError, TranslationResult, Translator
from kbqa.translators.casebank import CaseBank
from kbqa.translators.grammars import grammar_for
from kbqa.translators.prompts import FORMATS, build_prompt

if TYPE_CHECKING:
    from kb_dumps.label_memory import LabelMemory
    from kb_dumps.store_types import Store
    from kbqa.settings import TranslatorSettings


class ModelTranslator(Translator):
    """Question -> front-end text through a model backend, with few-shot cases from the case bank."""

    frontends = tuple(FORMATS)

    def __init__(self, backend: Backend, *, bank: CaseBank | None = None, few_shot_k: int = 4,
                 max_tokens: int = 512, temperature: float = 0.0, use_grammar: bool = True):
        self.backend = backend
        self.name = backend.name
        self.bank = bank
        self.few_shot_k = few_shot_k
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.use_grammar = use_grammar
        # Questions being scored never serve as their own few-shot example (kbqa eval sets these).
        self.exclude_ids: set[str] = set()
        self.exclude_questions: set[str] = set()

    def exclude(self, ids: set[str], questions: set[str]) -> None:
        from kbqa.translators.casebank import question_key

        self.exclude_ids |= ids
        self.exclude_questions |= {question_key(q) for q in questions}

    def examples(self, question: str, frontend: str) -> list[tuple[str, str]]:
        if self.bank is None or not len(self.bank) or self.few_shot_k <= 0:
            return []
        hits = self.bank.search(question, self.few_shot_k, exclude_ids=self.exclude_ids,
                                exclude_questions=self.exclude_questions)
        return [(h.case.question, h.case.targets[frontend]) for h in hits if frontend in h.case.targets]

    def translate(self, question: str, frontend: str = "desq", *, qid: str | None = None,
                  previous: str | None = None, errors: list[str] | None = None) -> TranslationResult:
        """The model's text; with `previous` and `errors`, a repair turn that shows the model what was wrong."""
        self.check_frontend(frontend)
        examples = self.examples(question, frontend)
        prompt = build_prompt(question, frontend, examples, previous, errors)
        grammar = grammar_for(frontend) if self.use_grammar else None
        try:
            out = self.backend.generate(prompt.messages(), grammar=grammar, max_tokens=self.max_tokens,
                                        temperature=self.temperature)
        except TranslateError as e:
            e.info.qid = e.info.qid or qid
            raise
        details: JsonObject = {"examples": [q for q, _ in examples], "grammar": grammar is not None,
                                   "attempts": out.attempts, "finish_reason": out.finish_reason,
                                   "tokens_estimated": out.tokens_estimated, "repair": previous is not None}
        return TranslationResult(out.text, frontend, self.backend.name, out.model, out.tokens_in, out.tokens_out,
                                 out.seconds, details)

    def close(self) -> None:
        self.backend.close()


def make_model_translator(settings: TranslatorSettings, store_dir: str | Path | None) -> Translator:
    """A model translator over the backend `settings.backend` names (`kbqa.backends.BACKENDS`), with the few-shot
    examples of the store's case bank when it has one."""
    from kbqa.backends import BACKENDS
    from kbqa.translators.casebank import bank_dir

    backend = BACKENDS.get(settings.backend).make(settings)
    folder = bank_dir(store_dir) if store_dir is not None else None
    bank = CaseBank.load(folder) if folder is not None and CaseBank.exists(folder) else None
    return ModelTranslator(backend, bank=bank, few_shot_k=settings.few_shot_k, max_tokens=settings.max_tokens,
                           temperature=settings.temperature)


def make(settings: TranslatorSettings, store_dir: str | Path | None, *, store: Store | None = None,
         memory: LabelMemory | None = None) -> Translator:
    """The `model` entry of `kbqa.translators.TRANSLATORS`: a model translator over `settings.backend`."""
    return make_model_translator(settings, store_dir)
