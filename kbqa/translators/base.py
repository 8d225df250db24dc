"""The translator interface: question -> front-end text, as plain data, and the error translators raise."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field

from kb_dumps.json_types import JsonObject
from kb_dumps.stage_errors import TranslateError  # noqa: F401 - the translators' error, named with their interface
from kbqa.frontends import FRONTENDS


@dataclass
class TranslationResult:
    """A question translated into front-end text, with what it cost (the translation step of the report).

    `details` holds translator-specific plain data (the cases used, the mentions found, the prompt size).
    `confirmed` maps a placeholder of `text` to the IRI the translator already checked against this store (explore's
    search ran its query with it): the Engine uses that IRI as the placeholder's only grounding instead of grounding
    the label a second time. Empty for translators that check nothing (a model's guesses are always grounded).
    """

    text: str
    frontend: str = "desq"
    backend: str = ""
    model: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    details: JsonObject = field(default_factory=dict)
    confirmed: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict:
        d = asdict(self)
        if not d["confirmed"]:  # only a translator that checked its URIs on the store has any (explore)
            del d["confirmed"]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> TranslationResult:
        return cls(**d)


class Translator(ABC):
    """Question -> front-end text (DeSQ, QCompiler, PyRAG). Errors are TranslateError (stage translate)."""

    name: str = "translator"
    # The front-ends it writes; None: every registered one (`kbqa.frontends.FRONTENDS`), e.g. replay.
    frontends: tuple[str, ...] | None = ("desq",)

    @abstractmethod
    def translate(self, question: str, frontend: str = "desq", *, qid: str | None = None) -> TranslationResult:
        """The front-end text for `question`; `qid` identifies a benchmark question (replay uses it)."""

    def check_frontend(self, frontend: str) -> None:
        writes = self.frontends if self.frontends is not None else FRONTENDS.names()
        if frontend not in writes:
            raise TranslateError(f"the {self.name} translator cannot write {frontend!r}; it writes "
                                 f"{', '.join(writes)}")

    def exclude(self, ids: set[str], questions: set[str]) -> None:  # noqa: B027 - optional hook
        """Never use these benchmark questions (by id and by text) as cases or examples: `kbqa eval` scores them."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release what the translator holds."""
