"""The backend interface: prompt -> model text, as plain data. Errors are `TranslateError` (stage translate)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass


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
