"""The translator and backend interfaces: question -> front-end text, prompt -> model text, as plain data."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from typing import Any

from kb_dumps.errors import EXIT_BACKEND, KBQAError

FRONTENDS = ("desq", "qcompiler", "pyrag")


class TranslateError(KBQAError):
    """A translator or backend failed (server down, timeout, missing replay id, empty case bank)."""

    exit_code = EXIT_BACKEND

    def __init__(self, message: str, **kw: Any):
        kw.setdefault("stage", "translate")
        super().__init__(message, **kw)


@dataclass
class GenerateResult:
    """What one `Backend.generate` call produced: the text, token counts and timings."""

    text: str
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    backend: str = ""
    model: str = ""
    finish_reason: str | None = None  # "stop", "length", ... as the backend reports it
    tokens_estimated: bool = False  # True when the backend reported no usage and counts are estimates
    attempts: int = 1  # calls made, retries included

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> GenerateResult:
        return cls(**d)


@dataclass
class TranslationResult:
    """A question translated into front-end text, with what it cost (the translation step of the report).

    `details` holds translator-specific plain data (the cases used, the mentions found, the prompt size).
    """

    text: str
    frontend: str = "desq"
    backend: str = ""
    model: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> TranslationResult:
        return cls(**d)


class Backend(ABC):
    """A text generator: a local model, an HTTP server, ... One method; errors are TranslateError."""

    name: str = "backend"
    model: str = ""

    @abstractmethod
    def generate(self, prompt: str | list[dict[str, str]], grammar: str | None = None, max_tokens: int = 512,
                 temperature: float = 0.0, stop: list[str] | None = None) -> GenerateResult:
        """Text for a prompt (a string, or chat messages `[{"role", "content"}]`).

        `grammar` is a GBNF grammar the output must follow, honoured where the backend supports it.
        """

    def close(self) -> None:  # noqa: B027 - optional hook; most backends hold nothing
        """Release what the backend holds (a loaded model, a connection pool)."""


class Translator(ABC):
    """Question -> front-end text (DeSQ, QCompiler, PyRAG). Errors are TranslateError (stage translate)."""

    name: str = "translator"
    frontends: tuple[str, ...] = ("desq",)

    @abstractmethod
    def translate(self, question: str, frontend: str = "desq", *, qid: str | None = None) -> TranslationResult:
        """The front-end text for `question`; `qid` identifies a benchmark question (replay uses it)."""

    def check_frontend(self, frontend: str) -> None:
        if frontend not in self.frontends:
            raise TranslateError(f"the {self.name} translator cannot write {frontend!r}; it writes "
                                 f"{', '.join(self.frontends)}")

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release what the translator holds."""
