"""The parsed parts of a DeSQ text as plain data: its atomic constraints, its grounding lines, the parse result.

Shared by the parser (`desq.py`), its meaning checks (`desq_check.py`) and the writer (`desq_writer.py`), which
import these types and never each other's modules.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kbqa.frontends.frontend_result import FrontendResult

FORMAT = "desq/1"


@dataclass
class Constraint:
    """One atomic constraint: id, the sentence, and its fragment text (line = where it started)."""

    id: str
    text: str = ""
    fragment: str = ""
    line: int | None = None
    fragment_line: int | None = None

    def to_dict(self) -> dict:
        return {"id": self.id, "text": self.text, "fragment": self.fragment}


@dataclass
class GroundingLine:
    """`[name] kind | label | description | guessed-uri` as data (uri a full IRI or None)."""

    name: str
    kind: str
    label: str = ""
    description: str = ""
    uri: str | None = None
    line: int | None = None

    def to_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "label": self.label,
                "description": self.description, "uri": self.uri}


@dataclass
class ParseResult(FrontendResult):
    """The Plan (None when any problem was found), all problems, and the parsed sections."""

    constraints: list[Constraint] = field(default_factory=list)
    grounding: list[GroundingLine] = field(default_factory=list)
    format: str = FORMAT

    def to_dict(self) -> dict:
        return {**self._result_dict(self.format),
                "constraints": [c.to_dict() for c in self.constraints],
                "grounding": [g.to_dict() for g in self.grounding]}
