"""`Result`: everything one question or front-end text produced, as plain data (`to_dict` is the JSON of
`kbqa ask --format json` and of the HTTP API)."""

from __future__ import annotations

from dataclasses import dataclass, field

from assembler.answers import Answers
from assembler.assembly_records import Attempt, Diagnosis, PlaceholderGrounding, ReportStep
from kb_dumps.stage_errors import EXIT_BACKEND, EXIT_NO_ANSWER, EXIT_OK, ErrorInfo, Stage, exit_code_of
from kbqa.translators.base import TranslationResult


@dataclass
class Result:
    """Everything one question or front-end text produced, as plain data (`to_dict` is JSON)."""

    status: str = "error"  # ok | generated | empty | error
    failed_stage: str | None = None
    frontend: str = "desq"
    text: str = ""  # the front-end text that was compiled
    question: str | None = None  # set by `ask` (translators, a later issue)
    sparql: str | None = None
    answers: Answers | None = None
    plan: dict | None = None
    constraints: list[dict] = field(default_factory=list)  # the ACs (id, text, fragment) of a DeSQ text
    grounding: list[PlaceholderGrounding] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    diagnosis: Diagnosis | None = None
    steps: list[ReportStep] = field(default_factory=list)
    errors: list[ErrorInfo] = field(default_factory=list)
    timed_out: bool = False
    seconds: float = 0.0
    translation: dict | None = None  # the translator's output, tokens and timings (set by `ask`)
    repairs: dict | None = None  # the self-repair rounds (set by `ask` when a model repaired its output)

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "generated")

    @property
    def exit_code(self) -> int:
        if self.ok:
            return EXIT_OK
        if self.status == "empty":
            return EXIT_NO_ANSWER
        if self.failed_stage == Stage.EXECUTE and self.timed_out:
            return EXIT_BACKEND
        return exit_code_of(self.failed_stage)

    def to_dict(self) -> dict:
        return {"status": self.status, "failed_stage": self.failed_stage, "exit_code": self.exit_code,
                "frontend": self.frontend, "text": self.text, "question": self.question, "sparql": self.sparql,
                "answers": self.answers.to_dict() if self.answers else None, "plan": self.plan,
                "constraints": self.constraints, "grounding": [g.to_dict() for g in self.grounding],
                "attempts": [a.to_dict() for a in self.attempts],
                "diagnosis": self.diagnosis.to_dict() if self.diagnosis else None,
                "steps": [s.to_dict() for s in self.steps], "errors": [e.to_dict() for e in self.errors],
                "timed_out": self.timed_out, "seconds": round(self.seconds, 6),
                "translation": self.translation, "repairs": self.repairs}

    @classmethod
    def from_dict(cls, d: dict) -> Result:
        return cls(status=d["status"], failed_stage=d.get("failed_stage"), frontend=d.get("frontend", "desq"),
                   text=d.get("text", ""), question=d.get("question"), sparql=d.get("sparql"),
                   answers=Answers.from_dict(d["answers"]) if d.get("answers") else None, plan=d.get("plan"),
                   constraints=list(d.get("constraints", [])),
                   grounding=[PlaceholderGrounding.from_dict(g) for g in d.get("grounding", [])],
                   attempts=[Attempt.from_dict(a) for a in d.get("attempts", [])],
                   diagnosis=Diagnosis.from_dict(d["diagnosis"]) if d.get("diagnosis") else None,
                   steps=[ReportStep.from_dict(s) for s in d.get("steps", [])],
                   errors=[ErrorInfo(**e) for e in d.get("errors", [])], timed_out=bool(d.get("timed_out")),
                   seconds=float(d.get("seconds", 0.0)), translation=d.get("translation"),
                   repairs=d.get("repairs"))


def translation_detail(tr: TranslationResult) -> str:
    """One line for the step report: who translated, tokens, and what the translator based it on."""
    who = tr.backend + (f" ({tr.model})" if tr.model else "")
    parts = [who, f"{tr.tokens_in} tokens in, {tr.tokens_out} out"]
    fallback = tr.details.get("fallback") or {}  # explore took the learned or the nearest case's structure instead
    if fallback:
        parts.append(f"{fallback.get('kind', 'case')} fallback: {fallback.get('reason', '')}")
    if tr.details.get("case"):
        similarity = tr.details.get("similarity", fallback.get("similarity")) or 0.0
        question = tr.details.get("case_question", fallback.get("case_question", ""))
        parts.append(f"case {tr.details['case']} (similarity {similarity:.2f}): {question!r}")
    search = tr.details.get("search")
    if search:  # the explore translator: what the query-graph search did and what won
        parts.append(f"{search.get('candidates_built', 0)} candidate graphs, {search.get('executed', 0)} run, "
                     f"{search.get('kept', 0)} with answers" + (" (stopped at the time budget)"
                                                                if search.get("truncated") else ""))
        best = (tr.details.get("candidates") or [{}])[0]
        if best.get("verbalised"):
            parts.append(f"best: {best['verbalised']}")
    structure = tr.details.get("structure")
    if structure:  # the structure translator: which learned skeleton, why, and each slot's top alternatives
        parts.append(f"skeleton {structure.get('skeleton')!r}: {structure.get('why', '')}")
        for f in structure.get("slots") or []:
            alts = ", ".join(f"{v} {s:.2f}" for v, s in (f.get("alternatives") or [])[:3])
            parts.append(f"[{f.get('slot')}] = {f.get('value')} ({f.get('source', '')}; top: {alts})")
    fills = tr.details.get("fills") or {}
    for slot, f in fills.items():
        parts.append(f"[{slot}] <- {f.get('mention')!r} = {f.get('uri')}" + ("" if f.get("kb") in (None, True)
                                                                               else " (not confirmed by the KB)"))
    return "; ".join(parts)
