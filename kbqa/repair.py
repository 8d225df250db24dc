"""Compiler-style self-repair: a failed output goes back to the model with its structured errors, at most N rounds.

Shared by the three front-ends. `repair_loop` is generic: it is given the first output, a `check`
(text → value, failed stage, errors) and a `retranslate` (previous text, errors → corrected text), and
records every round; `compile_with_repair` wires it to a compile function (the Engine's) and a Translator. Only stages the model
can fix are sent back (`kb_dumps.stage_errors.REPAIRABLE`: parse, validate, assemble — lowering problems are
reported under these); a translate or store failure, an empty answer or a grounding failure is not a
malformed output, and an `internal` error is our bug, never sent to the model as its mistake.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar

from assembler.assembly_records import ReportStep
from kb_dumps.stage_errors import REPAIRABLE, ErrorInfo, KBQAError, Stage

if TYPE_CHECKING:
    from kbqa.result import Result
    from kbqa.translators.base import TranslationResult, Translator


DEFAULT_ROUNDS = 2

V = TypeVar("V")  # what a check makes of a text (an Engine Result, QCompiler's leaf)
# text -> (value, failed stage or None when it went through, errors); the value is what the check made (a Result)
Check = Callable[[str], tuple[V, str | None, list[ErrorInfo]]]
# (previous text, its errors) -> the corrected output (a TranslationResult or plain text)
Retranslate = Callable[[str, list[ErrorInfo]], "TranslationResult | str"]


@dataclass
class RepairRound:
    """One output and what checking it found; round 0 is the first output, 1… are repairs."""

    round: int
    text: str
    ok: bool
    stage: str | None = None  # the failed stage, None when the output went through
    errors: list[ErrorInfo] = field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0  # the model call that produced this output (0 for round 0: counted in translate)

    def to_dict(self) -> dict:
        return {"round": self.round, "text": self.text, "ok": self.ok, "stage": self.stage,
                "errors": [e.to_dict() for e in self.errors], "tokens_in": self.tokens_in,
                "tokens_out": self.tokens_out, "seconds": round(self.seconds, 6)}

    @classmethod
    def from_dict(cls, d: dict) -> RepairRound:
        return cls(d["round"], d["text"], d["ok"], d.get("stage"), [ErrorInfo(**e) for e in d.get("errors", [])],
                   d.get("tokens_in", 0), d.get("tokens_out", 0), d.get("seconds", 0.0))


@dataclass
class RepairOutcome(Generic[V]):
    """The value of the last check (e.g. an Engine Result) and every round."""

    value: V
    rounds: list[RepairRound] = field(default_factory=list)
    stopped: str = ""  # why the loop stopped: "ok", "not repairable", "no rounds left", "no repair", "translate"

    @property
    def converged(self) -> bool:
        return bool(self.rounds) and self.rounds[-1].ok

    @property
    def repairs(self) -> int:
        """Model calls made to repair (rounds after the first)."""
        return max(0, len(self.rounds) - 1)

    def steps(self) -> list[ReportStep]:
        """One `repair` step per repair round, for the step report: which errors were sent back and whether
        the corrected output went through."""
        out = []
        for prev, cur in zip(self.rounds, self.rounds[1:], strict=False):
            verdict = "went through" if cur.ok else f"failed at {cur.stage}"
            detail = (f"round {cur.round}: sent back {len(prev.errors)} {prev.stage} error(s); the corrected output "
                      f"{verdict} ({cur.tokens_in} tokens in, {cur.tokens_out} out)")
            out.append(ReportStep("repair", cur.ok, cur.seconds, detail, list(prev.errors)))
        return out

    def to_dict(self) -> dict:
        return {"rounds": [r.to_dict() for r in self.rounds], "converged": self.converged, "repairs": self.repairs,
                "stopped": self.stopped}


def _text_of(out: TranslationResult | str) -> tuple[str, int, int, float]:
    if isinstance(out, str):
        return out, 0, 0, 0.0
    # getattr: a leaf translator of a test or plug-in may give any object with a `text`
    return str(out.text), int(getattr(out, "tokens_in", 0)), int(getattr(out, "tokens_out", 0)), \
        float(getattr(out, "seconds", 0.0))


def repair_loop(first: TranslationResult | str, check: Check[V], retranslate: Retranslate | None, *,
                rounds: int = DEFAULT_ROUNDS, repairable: frozenset[Stage] = REPAIRABLE) -> RepairOutcome[V]:
    """Check `first` (text or a TranslationResult); while it fails at a repairable stage and rounds are
    left, ask `retranslate` for a corrected output and check that. Never raises for a failing repair call:
    a TranslateError ends the loop with the last value."""
    text, t_in, t_out, _ = _text_of(first)
    value, stage, errors = check(text)
    outcome = RepairOutcome(value, [RepairRound(0, text, stage is None, stage, list(errors), t_in, t_out, 0.0)])
    while True:
        last = outcome.rounds[-1]
        if last.ok:
            outcome.stopped = "ok"
            return outcome
        if last.stage not in repairable:
            outcome.stopped = "not repairable"
            return outcome
        if retranslate is None:
            outcome.stopped = "no repair"
            return outcome
        if outcome.repairs >= rounds:
            outcome.stopped = "no rounds left"
            return outcome
        t0 = time.perf_counter()
        try:
            fixed = retranslate(last.text, list(last.errors))
        except KBQAError as e:
            outcome.stopped = f"translate: {e.info.message}"
            return outcome
        text, t_in, t_out, seconds = _text_of(fixed)
        value, stage, errors = check(text)
        outcome.value = value
        outcome.rounds.append(RepairRound(last.round + 1, text, stage is None, stage, list(errors), t_in, t_out,
                                          seconds or time.perf_counter() - t0))


def can_repair(translator: Translator) -> bool:
    """Whether the translator takes a repair turn (`translate(..., previous=, errors=)`): model translators
    do; the case bank and replay produce the same text again, so repairing through them is pointless."""
    fn = getattr(translator, "translate", None)
    if fn is None:
        return False
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "previous" in params and "errors" in params


def retranslator(translator: Translator, question: str, frontend: str, qid: str | None = None) -> Retranslate | None:
    """The repair call of a translator for one question, or None when it cannot repair."""
    if not can_repair(translator):
        return None

    def again(previous: str, errors: list[ErrorInfo]) -> TranslationResult | str:
        return translator.translate(question, frontend, qid=qid, previous=previous, errors=[str(e) for e in errors])

    return again


def result_check(compile_text: Callable[[str], Result]) -> Check[Result]:
    """A Check over an Engine-style compile: the Result, its failed stage (None when ok), its errors."""

    def check(text: str) -> tuple[Result, str | None, list[ErrorInfo]]:
        result = compile_text(text)
        stage = None if result.ok else (result.failed_stage or result.status)
        return result, stage, list(result.errors)

    return check


def compile_with_repair(compile_text: Callable[[str], Result], question: str, first: TranslationResult | str,
                        translator: Translator, frontend: str = "desq", *, rounds: int = DEFAULT_ROUNDS,
                        qid: str | None = None) -> Result:
    """`compile_text` the translator's first output (a TranslationResult or text); repair it through the translator
    while it fails at a repairable stage. Returns the last Result with one `repair` step per round first in its
    steps and `repairs`, the rounds as plain data."""
    outcome = repair_loop(first, result_check(compile_text), retranslator(translator, question, frontend, qid),
                          rounds=rounds)
    result = outcome.value
    result.steps[:0] = outcome.steps()  # before the final round's own parse/ground/… steps
    result.repairs = outcome.to_dict()
    return result
