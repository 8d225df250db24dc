"""Translators: question -> front-end text (`kbqa.translators.base.Translator`). `TRANSLATORS` is the one list.

A factory is `make(settings, store_dir, *, store, memory) -> Translator` (settings: `kbqa.settings.TranslatorSettings`):
the engine (`Engine.translator`) hands over its own query worker and label memory so that a process opens each
once. Adding a translator is one module plus one `TRANSLATORS.add` line in `kbqa/registry.py`. The `model`
translator (prompts with few-shot cases, a GBNF grammar, repair turns) runs over a model backend
(`kbqa.backends.BACKENDS`: `--backend` / KBQA_BACKEND names which).
"""

from __future__ import annotations

# The table lives in kbqa/registry.py, below the settings that validate names against it; add a translator there.
from kbqa.registry import TRANSLATORS

__all__ = ["TRANSLATORS", "translator_names"]


def translator_names() -> tuple[str, ...]:
    """The names a translator reports in results and /healthz: the translators, then each model backend (the model
    translator reports its backend's name)."""
    from kbqa.backends import BACKENDS

    return TRANSLATORS.names() + tuple(n for n in BACKENDS.names() if n not in TRANSLATORS)
