"""A translator over any model `Backend`: a prompt with the k most similar cases, an optional grammar, a repair turn.

Backends plug in here (`make_backend`: openai, llama-cpp, hf).
Grammars come from `kbqa.translators.grammars.grammar_for(frontend)` when that module exists; without it
the model is unconstrained and the parser reports what is malformed.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from kbqa.backends.base import Backend
from kbqa.translators.base import TranslateError, TranslationResult, Translator
from kbqa.translators.casebank import CaseBank
from kbqa.translators.prompts import FORMATS, build_prompt
from kbqa.translators.settings import ModelSettings


def grammar_for(frontend: str) -> str | None:
    """The GBNF grammar of a front-end, when the grammars module provides one (an extension point)."""
    try:
        module = importlib.import_module("kbqa.translators.grammars")
    except ModuleNotFoundError:
        return None
    fn = getattr(module, "grammar_for", None)
    return fn(frontend) if callable(fn) else None


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
        details: dict[str, Any] = {"examples": [q for q, _ in examples], "grammar": grammar is not None,
                                   "attempts": out.attempts, "finish_reason": out.finish_reason,
                                   "tokens_estimated": out.tokens_estimated, "repair": previous is not None}
        return TranslationResult(out.text, frontend, self.backend.name, out.model, out.tokens_in, out.tokens_out,
                                 out.seconds, details)

    def close(self) -> None:
        self.backend.close()


def make_backend(settings: ModelSettings) -> Backend:
    """The model backend named by the settings: openai, llama-cpp, hf (loaded lazily on first generate)."""
    if settings.backend == "openai":
        from kbqa.backends.openai import OpenAIBackend

        return OpenAIBackend.from_settings(settings)
    if settings.backend == "llama-cpp":
        from kbqa.backends.llama_cpp import LlamaCppBackend

        return LlamaCppBackend.from_settings(settings)
    if settings.backend == "hf":
        from kbqa.backends.hf import HFBackend

        return HFBackend.from_settings(settings)
    raise TranslateError(f"the {settings.backend!r} backend is not available in this build (available: cases, "
                         "replay, openai, llama-cpp, hf)", stage="usage")


def make_translator(settings: ModelSettings, store_dir: str | Path, *, store: Any = None) -> Translator:
    """The translator the settings ask for, over a store: cases (default), replay, or a model backend."""
    from kbqa.translators.casebank import bank_dir

    if settings.backend == "cases":
        from kbqa.translators.cases import CasesTranslator

        return CasesTranslator(store_dir, store=store, k=settings.cases_k, kb_check=settings.cases_kb_check)
    if settings.backend == "replay":
        from kbqa.translators.replay import ReplayTranslator

        if settings.replay_path is None:
            raise TranslateError("the replay backend needs a file: --replay FILE (or KBQA_REPLAY_PATH)", stage="usage")
        return ReplayTranslator(settings.replay_path)
    backend = make_backend(settings)
    folder = bank_dir(store_dir)
    bank = CaseBank.load(folder) if CaseBank.exists(folder) else None  # few-shot examples when a bank exists
    return ModelTranslator(backend, bank=bank, few_shot_k=settings.few_shot_k, max_tokens=settings.max_tokens,
                           temperature=settings.temperature)
