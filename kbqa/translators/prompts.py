"""Prompts for model translators: the front-end format, the k most similar solved cases as few-shot, the question.

One `Prompt` renders both as chat messages (OpenAI-compatible servers, chat templates) and as one
flat text (completion-style backends). A repair turn adds the previous output and its errors.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

DESQ_FORMAT = """You translate a question into DeSQ, a decomposed SPARQL format. Write exactly three sections:
ATOMIC CONSTRAINTS: one line per constraint `ACn: sentence`, AC1 says what is asked.
FRAGMENTS: `ACn => fragment`; AC1's fragment is the query form (`SELECT ?var1`, `SELECT (COUNT(?var1) AS ?n)`,
  `ASK`); the others are SPARQL triple patterns or FILTER/OPTIONAL/MINUS/UNION blocks using ?var1, ?var2, ...
  and placeholders `[name]` for every KB item (entities, properties, classes); never write a URI in a fragment.
  Statement roles (Wikidata qualifiers) are written `p:[name]`, `ps:[name]`, `pq:[name]`.
GROUNDING: one line per placeholder `[name] kind | label | short description | guessed-uri`, kind one of
  entity, property, class; the URI is optional (leave it out when unsure).
Start with the line `FORMAT desq/1`. Write nothing else."""

FORMATS = {"desq": DESQ_FORMAT}


def _register_other_formats() -> None:
    from kbqa.translators.grammars_qcompiler_pyrag import PYRAG_FORMAT, QCOMPILER_FORMAT

    FORMATS.update(qcompiler=QCOMPILER_FORMAT, pyrag=PYRAG_FORMAT)


_register_other_formats()


@dataclass
class Prompt:
    """A rendered request: instructions, few-shot (question, answer) pairs, the question, and repair feedback."""

    system: str
    examples: list[tuple[str, str]] = field(default_factory=list)
    question: str = ""
    previous: str | None = None  # the last output, when asking for a repair
    errors: list[str] = field(default_factory=list)

    def _final_user(self) -> str:
        return f"Question: {self.question}"

    def messages(self) -> list[dict[str, str]]:
        """Chat messages: system, then each example as a user/assistant turn, then the question."""
        msgs = [{"role": "system", "content": self.system}]
        for q, a in self.examples:
            msgs.append({"role": "user", "content": f"Question: {q}"})
            msgs.append({"role": "assistant", "content": a.strip()})
        msgs.append({"role": "user", "content": self._final_user()})
        if self.previous is not None:
            msgs.append({"role": "assistant", "content": self.previous.strip()})
            msgs.append({"role": "user", "content": repair_request(self.errors)})
        return msgs

    def text(self) -> str:
        """One flat completion prompt with the same content, ending where the model should write."""
        parts = [self.system, ""]
        for q, a in self.examples:
            parts += [f"Question: {q}", a.strip(), ""]
        parts.append(self._final_user())
        if self.previous is not None:
            parts += [self.previous.strip(), "", repair_request(self.errors)]
        return "\n".join(parts) + "\n"

    def to_dict(self) -> dict:
        return asdict(self)


def repair_request(errors: list[str]) -> str:
    listed = "\n".join(f"- {e}" for e in errors) or "- the output could not be read"
    return f"The answer above has these problems:\n{listed}\nWrite the corrected answer in full."


def build_prompt(question: str, frontend: str = "desq", examples: list[tuple[str, str]] | None = None,
                 previous: str | None = None, errors: list[str] | None = None) -> Prompt:
    """The prompt for one question; `examples` are (question, target text) pairs, most similar first."""
    if frontend not in FORMATS:
        raise ValueError(f"no prompt format for the {frontend!r} front-end (known: {', '.join(FORMATS)})")
    # Most similar last: the example nearest the question is the freshest in the model's context.
    ordered = list(reversed(examples or []))
    system = FORMATS[frontend]
    if frontend == "desq" and re.search(r"\{[A-Za-z_]\w*\}", question):
        from kbqa.translators.grammars_qcompiler_pyrag import LEAF_NOTE

        system += "\n" + LEAF_NOTE  # a QCompiler leaf: its {x} must become the [x] placeholder
    return Prompt(system, ordered, " ".join(question.split()), previous, list(errors or []))
