"""Model backends (prompt -> text, `kbqa.backends.base.Backend`). `BACKENDS` is the one list of them.

A factory takes the `TranslatorSettings` and returns a Backend that loads its model lazily (on the first
`generate`). A backend is the model translator's provider (`--backend openai` implies `--translator model`).
"""

# The table lives in kbqa/registry.py, below the settings that validate names against it; add a backend there.
from kbqa.registry import BACKENDS

__all__ = ["BACKENDS"]
