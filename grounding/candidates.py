"""Plain-data results of grounding: Candidate, GroundingResult, Correction (JSON round-trip)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kb_dumps.dict_records import DictRecord


@dataclass
class Candidate(DictRecord):
    """One KB id proposed for a placeholder.

    `score` is in [0, 1]; `signals` holds the value of each signal that scored it (lexical,
    vector, popularity, context), each in [0, 1]; `sources` names the index(es) that retrieved it.
    """

    id: str
    label: str
    description: str
    kind: str
    score: float
    signals: dict[str, float] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    matched: str = ""  # the label or alias that matched the query best


@dataclass
class GroundingResult(DictRecord):
    """Candidates above the threshold, best first; when there are none, `reason` says why.

    `below_threshold` keeps the best rejected candidates so that a caller may widen its search
    (the assembler's execution-driven adaptive grounding) without grounding again.
    """

    query: str
    description: str | None
    kind: str | None
    candidates: list[Candidate] = field(default_factory=list)
    below_threshold: list[Candidate] = field(default_factory=list)
    threshold: float = 0.0
    reason: str = ""
    context_used: bool = False

    @property
    def grounded(self) -> bool:
        return bool(self.candidates)

    @classmethod
    def from_dict(cls, d: dict) -> GroundingResult:
        d = dict(d)
        d["candidates"] = [Candidate.from_dict(c) for c in d.get("candidates", [])]
        d["below_threshold"] = [Candidate.from_dict(c) for c in d.get("below_threshold", [])]
        return cls(**d)


@dataclass
class Correction(DictRecord):
    """What `correct()` did with a guessed URI: `kept` it, `replaced` it, or found `none`."""

    action: str  # kept | replaced | none
    uri: str | None  # the id to use (label-memory form), None when action is "none"
    guessed: str | None
    reason: str
    candidate: Candidate | None = None

    @classmethod
    def from_dict(cls, d: dict) -> Correction:
        d = dict(d)
        if d.get("candidate"):
            d["candidate"] = Candidate.from_dict(d["candidate"])
        return cls(**d)
