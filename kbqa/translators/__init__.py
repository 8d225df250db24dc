"""Translators: question -> front-end text (`kbqa.translators.base.Translator`). `TRANSLATORS` is the one list.

A factory is `make(settings, store_dir, *, store, memory) -> Translator` (settings: `kbqa.settings.TranslatorSettings`):
the engine (`Engine.translator`) hands over its own query worker and label memory so that a process opens each
once. Adding a translator is one module plus one `TRANSLATORS.add` line here. The `model` translator (prompts with few-shot cases, a GBNF grammar, repair turns)
runs over a model backend (`kbqa.backends.BACKENDS`: `--backend` / KBQA_BACKEND names which).
"""

from __future__ import annotations

from kbqa.registry import Registry

TRANSLATORS = Registry("translator")
TRANSLATORS.add("cases", "no model: the nearest solved questions of the store's case bank, slots re-filled",
                "kbqa.translators.cases:make")
TRANSLATORS.add("explore", "no model: query graphs proposed by the knowledge graph itself, checked by execution "
                "and ranked (works on any RDF graph, no solved case needed)", "kbqa.translators.explore:make")
TRANSLATORS.add("model", "a model writes the front-end text (--backend: llama-cpp, openai, hf), with few-shot cases, "
                "a GBNF grammar and repair turns", "kbqa.translators.model:make")
TRANSLATORS.add("structure", "no model: the query skeleton and slots learned from the Wikidata train sets (for "
                "questions whose facts the store lacks; query-level Wikidata benchmarks)",
                "kbqa.translators.structure.translator:make")
TRANSLATORS.add("replay", "recorded model outputs from a JSONL file (id, output), for offline evaluation",
                "kbqa.translators.replay:make")


def translator_names() -> tuple[str, ...]:
    """The names a translator reports in results and /healthz: the translators, then each model backend (the model
    translator reports its backend's name)."""
    from kbqa.backends import BACKENDS

    return TRANSLATORS.names() + tuple(n for n in BACKENDS.names() if n not in TRANSLATORS)
