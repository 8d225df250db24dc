"""Plain-data records of one assembly: steps, grounding per placeholder, attempts, diagnosis, the result."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TypedDict

from assembler.answers import Answers
from grounding.candidates import Candidate, Correction
from kb_dumps.dict_records import DictRecord
from kb_dumps.stage_errors import ErrorInfo

# What `AssemblyResult.status` may be: answered, generated without executing, answered with nothing, failed.
STATUSES = ("ok", "generated", "empty", "error")


def _error(d: dict) -> ErrorInfo:
    return ErrorInfo(**d)


@dataclass
class ReportStep:
    """One stage of the pipeline: whether it went well, how long it took, what it did, what went wrong."""

    stage: str
    ok: bool
    seconds: float = 0.0
    detail: str = ""
    errors: list[ErrorInfo] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"stage": self.stage, "ok": self.ok, "seconds": round(self.seconds, 6), "detail": self.detail,
                "errors": [e.to_dict() for e in self.errors]}

    @classmethod
    def from_dict(cls, d: dict) -> ReportStep:
        return cls(d["stage"], d["ok"], d.get("seconds", 0.0), d.get("detail", ""),
                   [_error(e) for e in d.get("errors", [])])


@dataclass
class PlaceholderGrounding:
    """The candidates found for one placeholder (best first), what happened to its guessed URI, the choice."""

    name: str
    kind: str
    label: str = ""
    description: str = ""
    guessed_uri: str | None = None
    ac: str | None = None  # the first AC that uses the placeholder
    candidates: list[Candidate] = field(default_factory=list)
    correction: Correction | None = None
    reason: str = ""  # why there is no candidate, when there is none
    chosen: str | None = None  # the id used by the returned query
    widened: bool = False  # the list was widened after every combination came back empty

    def to_dict(self) -> dict:
        d = asdict(self)
        d["candidates"] = [c.to_dict() for c in self.candidates]
        d["correction"] = self.correction.to_dict() if self.correction else None
        return d

    @classmethod
    def from_dict(cls, d: dict) -> PlaceholderGrounding:
        d = dict(d)
        d["candidates"] = [Candidate.from_dict(c) for c in d.get("candidates", [])]
        d["correction"] = Correction.from_dict(d["correction"]) if d.get("correction") else None
        return cls(**d)


@dataclass
class Attempt(DictRecord):
    """One grounding combination tried: its score, the query written, and what running it gave."""

    mapping: dict[str, str]
    score: float
    sparql: str | None = None
    outcome: str = "skipped"  # answers | empty | timeout | error | written (not executed)
    rows: int = 0
    seconds: float = 0.0
    message: str = ""


class PrefixCheck(TypedDict):
    """One prefix of the WHERE clause checked by the diagnosis: up to which AC, and whether it matches (None: the
    check failed or ran out of time)."""

    ac: str | None
    matches: bool | None


@dataclass
class Diagnosis(DictRecord):
    """Why a query came back empty: the first AC whose constraint empties the join (None when the pattern
    matches and the modifiers remove every row), a message, and each prefix that was checked."""

    ac: str | None
    message: str
    checked: list[PrefixCheck] = field(default_factory=list)  # [{"ac": "AC2", "matches": True}, …]
    alone_matches: bool | None = None  # whether the culprit AC matches anything on its own


@dataclass
class AssemblyResult:
    """What assembling (and running) one Plan produced."""

    status: str = "error"
    failed_stage: str | None = None
    sparql: str | None = None
    answers: Answers | None = None
    grounding: list[PlaceholderGrounding] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    diagnosis: Diagnosis | None = None
    steps: list[ReportStep] = field(default_factory=list)
    errors: list[ErrorInfo] = field(default_factory=list)
    timed_out: bool = False  # at least one attempt ran past its time budget

    def to_dict(self) -> dict:
        return {"status": self.status, "failed_stage": self.failed_stage, "sparql": self.sparql,
                "answers": self.answers.to_dict() if self.answers else None,
                "grounding": [g.to_dict() for g in self.grounding],
                "attempts": [a.to_dict() for a in self.attempts],
                "diagnosis": self.diagnosis.to_dict() if self.diagnosis else None,
                "steps": [s.to_dict() for s in self.steps], "errors": [e.to_dict() for e in self.errors],
                "timed_out": self.timed_out}

    @classmethod
    def from_dict(cls, d: dict) -> AssemblyResult:
        return cls(status=d["status"], failed_stage=d.get("failed_stage"), sparql=d.get("sparql"),
                   answers=Answers.from_dict(d["answers"]) if d.get("answers") else None,
                   grounding=[PlaceholderGrounding.from_dict(g) for g in d.get("grounding", [])],
                   attempts=[Attempt.from_dict(a) for a in d.get("attempts", [])],
                   diagnosis=Diagnosis.from_dict(d["diagnosis"]) if d.get("diagnosis") else None,
                   steps=[ReportStep.from_dict(s) for s in d.get("steps", [])],
                   errors=[_error(e) for e in d.get("errors", [])], timed_out=bool(d.get("timed_out")))
