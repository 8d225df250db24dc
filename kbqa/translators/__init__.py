"""Translators: question -> front-end text (`kbqa.translators.base.Translator`). `TRANSLATORS` is the one list.

A factory is `make(settings, store_dir, *, store, memory) -> Translator`: the engine hands over its own
query worker and label memory so that a process opens each once. Adding a translator is one module plus
one `TRANSLATORS.add` line here. Every model backend (`kbqa.backends.BACKENDS`) is a translator name too:
the model translator (prompts with few-shot cases, a GBNF grammar, repair turns) over that backend.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kbqa.registry import Registry

if TYPE_CHECKING:
    from kb_dumps.label_memory import LabelMemory
    from kb_dumps.store import Store
    from kbqa.translators.base import Translator
    from kbqa.translators.settings import ModelSettings

TRANSLATORS = Registry("translator")
TRANSLATORS.add("cases", "no model: the nearest solved questions of the store's case bank, slots re-filled",
                "kbqa.translators.cases:make")
TRANSLATORS.add("explore", "no model: query graphs proposed by the knowledge graph itself, checked by execution "
                "and ranked (works on any RDF graph, no solved case needed)", "kbqa.translators.explore:make")
TRANSLATORS.add("replay", "recorded model outputs from a JSONL file (id, output), for offline evaluation",
                "kbqa.translators.replay:make")


def translator_names() -> tuple[str, ...]:
    """What `--backend` / KBQA_BACKEND accept: the translators, then each model backend."""
    from kbqa.backends import BACKENDS

    return TRANSLATORS.names() + tuple(n for n in BACKENDS.names() if n not in TRANSLATORS)


def translator_table() -> list[tuple[str, str]]:
    """(name, one line) for help texts: the translators, then the model backends."""
    from kbqa.backends import BACKENDS

    return TRANSLATORS.table() + [(n, f"a model translator over {d}") for n, d in BACKENDS.table()
                                  if n not in TRANSLATORS]


def make_translator(settings: ModelSettings, store_dir: str | Path | None, *, store: Store | None = None,
                    memory: LabelMemory | None = None) -> Translator:
    """The translator `settings.backend` names, over the store at `store_dir` (sharing `store` and `memory`)."""
    if settings.backend in TRANSLATORS:
        return TRANSLATORS.get(settings.backend).make(settings, store_dir, store=store, memory=memory)
    from kbqa.translators.model import make_model_translator

    return make_model_translator(settings, store_dir)
