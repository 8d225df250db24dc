"""The registries' class, which lives in `kb_dumps/registry.py` (the lowest layer: grounding uses it too)."""

from kb_dumps.registry import Entry, Registry

__all__ = ["Entry", "Registry"]
