"""Name → factory tables for the plug-in points (front-ends, translators, backends, vector stores).

In kb_dumps, the lowest layer, so that grounding's vector-store registry uses the same class as kbqa's.

A registry is the single list of the names of one kind: the CLI's `choices`, the settings' validation,
the server's schema enums and the docs tables read it, so adding a front-end, a translator or a backend is
one module plus one `add` line. Factories are given as ``"module:function"`` and imported on first use, so
listing the names (``kbqa --help``) imports none of the heavy modules behind them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from kb_dumps.stage_errors import KBQAError

T = TypeVar("T")  # what a registry's factories make (a front-end, a translator, a backend, a vector store)


@dataclass(frozen=True)
class Entry(Generic[T]):
    """One registered name: what it is in one line, and how to make it."""

    name: str
    description: str
    factory: str | Callable[..., T]  # "package.module:function", or the function itself

    # the factory's own arguments, whatever it takes
    def make(self, *args: Any, **kwargs: Any) -> T:
        factory = self.factory
        if isinstance(factory, str):
            module, _, path = factory.partition(":")
            factory = importlib.import_module(module)
            for attr in path.split("."):  # "Class.from_settings" names a classmethod
                factory = getattr(factory, attr)
        return factory(*args, **kwargs)


class Registry(Generic[T]):
    """Names of one kind (`kind` says which, for messages) in registration order."""

    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, Entry[T]] = {}

    def add(self, name: str, description: str, factory: str | Callable[..., T]) -> Entry[T]:
        """Register `name`; registering a name again replaces it (a test or a plug-in may override)."""
        entry = Entry(name, description, factory)
        self._entries[name] = entry
        return entry

    def remove(self, name: str) -> None:
        self._entries.pop(name, None)

    def get(self, name: str) -> Entry[T]:
        """The entry of `name`; an unknown name is a usage error that lists the known ones."""
        try:
            return self._entries[name]
        except KeyError:
            raise KBQAError(f"unknown {self.kind} {name!r}; choose one of {', '.join(self.names())}",
                            stage="usage") from None

    def names(self) -> tuple[str, ...]:
        return tuple(self._entries)

    def table(self) -> list[tuple[str, str]]:
        """(name, description) rows, for help texts and docs."""
        return [(e.name, e.description) for e in self._entries.values()]

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[Entry[T]]:
        return iter(list(self._entries.values()))
