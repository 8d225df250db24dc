"""`Engine`: the Python API behind the CLI and the HTTP server — front-end text → Plan → SPARQL → answers.

    from kbqa.pipeline import Engine
    with Engine(store=".kbqa/stores/wikidata-mini") as engine:
        result = engine.compile(desq_text)          # one Result: SPARQL, answers, Plan, grounding, steps
        print(result.status, result.sparql, result.to_dict())

`Engine.ask(question)` puts a translator in front (the case bank by default, or a model backend) and
repairs failed outputs with the model (`kbqa/repair.py`); DeSQ, QCompiler and PyRAG texts all lower to
the same Plan. Everything fills the same `Result`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assembler.answers import Answers
from assembler.assemble import AssembleOptions, Assembler
from assembler.report import Attempt, Diagnosis, PlaceholderGrounding, Step
from kb_dumps.errors import (
    EXIT_BACKEND,
    EXIT_BAD_INPUT,
    EXIT_NO_ANSWER,
    EXIT_OK,
    ErrorInfo,
    KBQAError,
    StoreError,
)
from kb_dumps.layout import StoreLayout
from kb_dumps.profiles import KBProfile, get_profile
from kbqa.translators.base import TranslationResult


def _parse_desq(text: str) -> Any:
    from kbqa.frontends.desq import parse_desq

    return parse_desq(text)


# Front-end name → text parser returning an object with `.plan`, `.errors`, `.constraints` (see desq.ParseResult).
# QCompiler and PyRAG need a translator for their leaves / sub-questions: `Engine._frontend` binds it.
FRONTENDS: dict[str, Callable[[str], Any]] = {"desq": _parse_desq}
FRONTEND_NAMES = ("desq", "qcompiler", "pyrag")

# Exit code of the `kbqa` command for each failed stage (DESIGN "Command line and Python API").
_STAGE_EXIT = {"parse": EXIT_BAD_INPUT, "validate": EXIT_BAD_INPUT, "assemble": EXIT_BAD_INPUT,
               "execute": EXIT_BAD_INPUT, "ground": EXIT_NO_ANSWER, "empty": EXIT_NO_ANSWER,
               "store": EXIT_BACKEND, "translate": EXIT_BACKEND}


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
    steps: list[Step] = field(default_factory=list)
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
        if self.failed_stage == "execute" and self.timed_out:
            return EXIT_BACKEND
        return _STAGE_EXIT.get(self.failed_stage or "", EXIT_BAD_INPUT)

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
                   steps=[Step.from_dict(s) for s in d.get("steps", [])],
                   errors=[ErrorInfo(**e) for e in d.get("errors", [])], timed_out=bool(d.get("timed_out")),
                   seconds=float(d.get("seconds", 0.0)), translation=d.get("translation"),
                   repairs=d.get("repairs"))


class Engine:
    """One KB (a store directory made by `kbqa ingest`, or None for "generate only") and the settings
    to compile against it. Opening the store's worker, label memory and grounding index is lazy.

    With no grounding index in the store (`kbqa index` not run), only guessed URIs that the label
    memory confirms are used; with no store at all, guessed URIs are used unchecked."""

    def __init__(self, store: str | Path | None = None, *, profile: str | KBProfile | None = None,
                 timeout_s: float | None = None, row_cap: int | None = None,
                 options: AssembleOptions | None = None, grounder: Any = None, translator: Any = None,
                 repair_rounds: int = 2, endpoint: str | None = None, endpoint_dialect: str | None = None):
        self.options = options or AssembleOptions()
        self.translator = translator  # translates questions, QCompiler leaves and PyRAG sub-questions
        self.repair_rounds = repair_rounds
        if timeout_s is not None:
            self.options.timeout_s = timeout_s
        if row_cap is not None:
            self.options.row_cap = row_cap
        self.store_dir = Path(store) if store is not None else None
        # Queries go to `endpoint` (a SPARQL URL) when given, else to the endpoint a remote store directory
        # records, else to the local pyoxigraph store (kb_dumps.store.open_store). Labels and the grounding
        # index always come from the store directory; an endpoint alone grounds nothing (guesses unchecked).
        self.endpoint, self.endpoint_dialect = endpoint, endpoint_dialect
        if self.store_dir is not None:
            layout = StoreLayout.of(self.store_dir)
            if not layout.exists():
                raise StoreError(f"no store at {self.store_dir}; build one with `kbqa ingest SOURCE --store "
                                 f"{self.store_dir}` or `kbqa ingest --sample wikidata-mini`")
            self.profile = get_profile(profile or layout.profile_name)
        else:
            self.profile = get_profile(profile or "wikidata")
        self._grounder = grounder
        self._store: Any = None
        self._memory: Any = None
        self._assembler: Assembler | None = None
        self.grounding_note = ""  # why grounding is limited (no index), for the step report

    # ---- lazily opened parts -------------------------------------------------------------------
    @property
    def assembler(self) -> Assembler:
        if self._assembler is None:
            if self.store_dir is None and self.endpoint is None:
                self._assembler = Assembler(self.profile, grounder=self._grounder, options=self.options)
            else:
                from kb_dumps.label_memory import LabelMemory
                from kb_dumps.store import open_store

                self._store = open_store(self.store_dir, endpoint=self.endpoint, timeout_s=self.options.timeout_s,
                                         row_cap=self.options.row_cap, dialect=self.endpoint_dialect)
                grounder = self._grounder
                if self.store_dir is not None:
                    self._memory = LabelMemory(StoreLayout.of(self.store_dir).labels, readonly=True)
                    grounder = grounder if grounder is not None else self._open_grounder()
                self._assembler = Assembler(self.profile, store=self._store, grounder=grounder,
                                            memory=self._memory, options=self.options)
        return self._assembler

    def _open_grounder(self) -> Any:
        from grounding.ground import Grounder

        try:
            return Grounder(self.store_dir, profile=self.profile, store=self._store)  # type: ignore[arg-type]
        except KBQAError as e:
            self.grounding_note = e.info.message
            return None  # the Assembler then checks guessed URIs against the label memory only

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
        if self._memory is not None:
            self._memory.close()
        self._store = self._memory = self._assembler = None

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the API ---------------------------------------------------------------------------------
    def compile(self, text: str, frontend: str = "desq", execute: bool = True) -> Result:
        """Parse front-end `text`, ground, assemble and (with a store and `execute`) run it. Never raises
        for bad input or a failing query: the Result says which stage failed and why."""
        t_start = time.perf_counter()
        result = Result(frontend=frontend, text=text if isinstance(text, str) else "")
        parse = self._frontend(frontend)
        if parse is None:
            err = ErrorInfo("parse", f"unknown front-end {frontend!r}; choose one of {', '.join(FRONTEND_NAMES)}")
            result.steps.append(Step("parse", False, 0.0, "", [err]))
            return _finish(result, "parse", [err], t_start)
        t0 = time.perf_counter()
        parsed = parse(text)
        seconds = time.perf_counter() - t0
        parse_errs = [e for e in parsed.errors if e.stage != "validate"]
        validate_errs = [e for e in parsed.errors if e.stage == "validate"]
        result.constraints = [c.to_dict() for c in getattr(parsed, "constraints", [])]
        result.steps.append(Step("parse", not parse_errs, seconds,
                                 f"{len(result.constraints)} constraints", parse_errs))
        if not parse_errs:
            result.steps.append(Step("validate", not validate_errs, 0.0, "", validate_errs))
        if parsed.errors or parsed.plan is None:
            errs = list(parsed.errors) or [ErrorInfo("parse", "no Plan was produced")]
            stage = errs[0].stage if errs[0].stage in ("translate", "assemble") else (
                "parse" if parse_errs or not validate_errs else "validate")
            return _finish(result, stage, errs, t_start)
        result.plan = parsed.plan.to_dict()
        try:
            assembler = self.assembler
        except KBQAError as e:
            return _finish(result, e.info.stage if e.info.stage in _STAGE_EXIT else "store", e.errors, t_start)
        out = assembler.assemble(parsed.plan, execute=execute)
        if self.grounding_note and out.steps and out.steps[0].stage == "ground":
            out.steps[0].detail += f" (limited: {self.grounding_note})"
        result.steps.extend(out.steps)
        for name in ("status", "failed_stage", "sparql", "answers", "grounding", "attempts", "diagnosis", "errors",
                     "timed_out"):
            setattr(result, name, getattr(out, name))
        result.seconds = time.perf_counter() - t_start
        return result

    def answer(self, text: str, frontend: str = "desq") -> Result:
        """Compile and run `text` on the store: the answers with their labels (compile with execute=True)."""
        return self.compile(text, frontend=frontend, execute=True)

    def _frontend(self, frontend: str) -> Callable[[str], Any] | None:
        """The parser of a front-end; QCompiler and PyRAG get the engine's translator for their leaves."""
        if frontend not in ("qcompiler", "pyrag"):
            return FRONTENDS.get(frontend)
        from kbqa.frontends.qcompiler import leaf_repairer, leaf_translator

        tr, rounds = self.translator, self.repair_rounds
        leaf = leaf_translator(tr) if tr is not None else None
        repair = leaf_repairer(tr) if tr is not None else None
        if frontend == "qcompiler":
            from kbqa.frontends.qcompiler import parse_qcompiler

            return lambda text: parse_qcompiler(text, leaf, repair=repair, repair_rounds=rounds)
        from kbqa.frontends.pyrag import parse_pyrag

        return lambda text: parse_pyrag(text, leaf, profile=self.profile, repair=repair, repair_rounds=rounds)

    def ask(self, question: str, translator: Any = None, frontend: str = "desq", qid: str | None = None, *,
            execute: bool = True) -> Result:
        """Question → front-end text (the translator: the case bank by default, see `kbqa.translators.settings`)
        → `compile` (run on the store, or with `execute=False` stopped after the generate check), with a
        `translate` step (timings, tokens) first and model repairs recorded. Never raises for a failed
        translation: the Result's first step is `translate`, failed with the reason."""
        from kbqa.repair import compile_with_repair

        tr = translator or self.translator
        if tr is None and self.store_dir is None:
            raise KBQAError("asking needs a store (its case bank translates questions) or a translator: "
                            "Engine(store=DIR) or Engine(translator=…)", stage="translate")
        if tr is None:
            from kbqa.translators.model import make_translator
            from kbqa.translators.settings import get_model_settings

            tr = make_translator(get_model_settings(), self.store_dir, store=self.assembler.store)
        t0 = time.perf_counter()
        try:
            translation = tr.translate(question, frontend, qid=qid)
        except KBQAError as e:
            result = Result(frontend=frontend, question=question, status="error", failed_stage="translate")
            errors = [err if err.stage == "translate" else _as_translate(err) for err in e.errors]
            result.steps.append(Step("translate", False, time.perf_counter() - t0, tr.name, errors))
            result.errors = errors
            result.seconds = time.perf_counter() - t0
            return result
        if self.translator is None:
            self.translator = tr  # QCompiler leaves and PyRAG sub-questions use it too
        result = compile_with_repair(self, question, translation, tr, frontend, rounds=self.repair_rounds, qid=qid,
                                     execute=execute)
        result.question = question
        result.steps.insert(0, Step("translate", True, translation.seconds, translation_detail(translation)))
        result.seconds = time.perf_counter() - t0  # translation included
        result.translation = translation.to_dict()
        return result


def translation_detail(tr: TranslationResult) -> str:
    """One line for the step report: who translated, tokens, and what the translator based it on."""
    who = tr.backend + (f" ({tr.model})" if tr.model else "")
    parts = [who, f"{tr.tokens_in} tokens in, {tr.tokens_out} out"]
    if tr.details.get("case"):
        parts.append(f"case {tr.details['case']} (similarity {tr.details.get('similarity', 0):.2f}): "
                     f"{tr.details.get('case_question', '')!r}")
    fills = tr.details.get("fills") or {}
    for slot, f in fills.items():
        parts.append(f"[{slot}] <- {f.get('mention')!r} = {f.get('uri')}" + ("" if f.get("kb") in (None, True)
                                                                               else " (not confirmed by the KB)"))
    return "; ".join(parts)


def _as_translate(err: ErrorInfo) -> ErrorInfo:
    return ErrorInfo("translate", err.message, err.file, err.line, err.column, err.qid, err.ac)

def _finish(result: Result, stage: str, errors: list[ErrorInfo], t_start: float) -> Result:
    result.status, result.failed_stage = "error", stage
    result.errors = list(errors)
    result.seconds = time.perf_counter() - t_start
    return result
