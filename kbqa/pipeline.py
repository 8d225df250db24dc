"""`Engine`: the one path of a question through kbqa — translate → parse → ground → assemble → execute → repair.

    from kbqa.pipeline import Engine
    with Engine(store=".kbqa/stores/wikidata-mini") as engine:
        result = engine.ask("where was sasha vujačić born")   # question in: the translator writes DeSQ
        result = engine.compile(desq_text)                    # front-end text in: no translator
        print(result.status, result.sparql, result.to_dict())

The CLI verbs, the HTTP and MCP handlers and `kbqa eval` build their engine with `Engine.from_settings(...)` (the
settings of `kbqa.settings` with the flags given on top) and call these methods and nothing below them. The engine
builds its translator from the translator settings (`kbqa.settings.TranslatorSettings`) on first use and hands
it the engine's own query worker and label memory, so a process opens each once. DeSQ, QCompiler and
PyRAG texts all lower to the same Plan; everything fills the same `Result`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from assembler.assemble import AssembleOptions, Assembler
from assembler.assembly_records import ReportStep
from kb_dumps.layout import StoreLayout
from kb_dumps.profiles import KBProfile, get_profile
from kb_dumps.stage_errors import PIPELINE_ORDER, ErrorInfo, KBQAError, Stage, StoreError, internal_error
from kbqa.frontends import FRONTENDS
from kbqa.result import Result, translation_detail
from kbqa.settings import RequestCaps, get_settings
from kbqa.translators.base import Translator

if TYPE_CHECKING:
    from grounding.ground import Grounder
    from kb_dumps.label_memory import LabelMemory
    from kb_dumps.store_types import Store
    from kbqa.frontends.desq_types import ParseResult
    from kbqa.frontends.pyrag_lower import PyragResult
    from kbqa.frontends.qcompiler import QCompilerResult
    from kbqa.settings import SettingValue, TranslatorSettings

__all__ = ["FRONTENDS", "Engine", "Result"]


class Engine:
    """One KB (a store directory made by `kbqa ingest`, or None for "generate only") and the settings
    to compile against it. Opening the store's worker, label memory, grounding index and translator is lazy.

    With no grounding index in the store (`kbqa index` not run), only guessed URIs that the label
    memory confirms are used; with no store at all, guessed URIs are used unchecked."""

    def __init__(self, store: str | Path | None = None, *, profile: str | KBProfile | None = None,
                 timeout_s: float | None = None, row_cap: int | None = None,
                 options: AssembleOptions | None = None, grounder: Grounder | None = None,
                 translator: Translator | None = None, settings: TranslatorSettings | None = None,
                 repair_rounds: int = 2, endpoint: str | None = None, endpoint_dialect: str | None = None,
                 caps: RequestCaps | None = None):
        self.options = options or AssembleOptions()
        # Per-request caps (QCompiler leaves, PyRAG sub-questions and lines) that the front-ends enforce, so
        # every face (CLI, HTTP, MCP) gets them; from the settings (KBQA_MAX_LEAVES, ...) unless given.
        self.caps = caps or get_settings().frontend.caps()
        self.settings = settings  # which translator `ask` builds (None: from the environment / kbqa.toml)
        self._translator = translator  # translates questions, QCompiler leaves and PyRAG sub-questions
        self._own_translator = False  # closed with the engine only when the engine made it
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
        self._store: Store | None = None
        self._memory: LabelMemory | None = None
        self._assembler: Assembler | None = None
        self.grounding_note = ""  # why grounding is limited (no index), for the step report

    @classmethod
    def from_settings(cls, store: str | Path | None = None, *, sparql_endpoint: str | None = None,
                      endpoint_dialect: str | None = None, **overrides: SettingValue) -> Engine:
        """The engine every face builds (CLI verbs, HTTP server, MCP, `kbqa eval`): the settings of `kbqa.settings`
        (environment, `.env`, `kbqa.toml`) with `overrides` on top — each a field of the store, front-end or
        translator section (`query_timeout_s`, `row_cap`, `repair_rounds`, `translator`, `backend`, `model`, …;
        None = not given). Queries go to `sparql_endpoint` when given. (A ready Translator object is given to
        `Engine(..., translator=)` or set as `engine.translator`.)"""
        settings = get_settings(**overrides)
        return cls(store, timeout_s=settings.store.query_timeout_s, row_cap=settings.store.row_cap,
                   repair_rounds=settings.translator.repair_rounds, caps=settings.frontend.caps(),
                   settings=settings.translator, endpoint=sparql_endpoint,
                   endpoint_dialect=endpoint_dialect)

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

    @property
    def store(self) -> Store | None:
        """The engine's query worker (None without a store or endpoint): translators and /v1/ground share it."""
        return self.assembler.store if self.store_dir is not None or self.endpoint is not None else None

    def _open_grounder(self) -> Grounder | None:
        from grounding.ground import Grounder

        try:
            return Grounder(self.store_dir, profile=self.profile, store=self._store)  # type: ignore[arg-type]
        except KBQAError as e:
            self.grounding_note = e.info.message
            return None  # the Assembler then checks guessed URIs against the label memory only

    @property
    def translator(self) -> Translator:
        """The translator of `ask` (and of QCompiler leaves / PyRAG sub-questions), made from the settings on
        first use over this engine's store and label memory. A translator that cannot be made (no case bank,
        no replay file) raises its KBQAError here."""
        if self._translator is None:
            from kbqa.settings import get_translator_settings
            from kbqa.translators import TRANSLATORS

            settings = self.settings or get_translator_settings()
            store = self.store
            memory = self._memory if store is not None else None
            self._translator = TRANSLATORS.get(settings.translator).make(settings, self.store_dir, store=store,
                                                                         memory=memory)
            self._own_translator = True
        return self._translator

    @translator.setter
    def translator(self, translator: Translator | None) -> None:
        self._translator, self._own_translator = translator, False

    def leaf_translator(self) -> Translator | None:
        """The translator for QCompiler leaves and PyRAG sub-questions, or None when none can be made (the
        front-end then reports that its leaves have no translator)."""
        try:
            return self.translator
        except KBQAError:
            return None

    def close(self) -> None:
        if self._own_translator and self._translator is not None:
            self._translator.close()
            self._translator = None
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
    def ask(self, question: str, *, frontend: str = "desq", execute: bool = True, qid: str | None = None) -> Result:
        """Question → front-end text (the translator) → `compile` (run on the store, or with `execute=False`
        stopped after the generate check), with a `translate` step (timings, tokens) first and the model's
        repairs recorded. `qid` names a benchmark question (replay looks outputs up by it). Never raises for
        a failed translation: the Result's first step is `translate`, failed with the reason."""
        from kbqa.repair import compile_with_repair

        tr = self.translator
        t0 = time.perf_counter()
        try:
            translation = tr.translate(question, frontend, qid=qid)
        except KBQAError as e:
            errors = [err if err.stage == Stage.TRANSLATE else _as_translate(err) for err in e.errors]
            return _translate_failed(question, frontend, tr.name, Stage.TRANSLATE, errors, t0)
        except Exception as exc:  # a translator bug is ours: stage internal, not the model's failure
            errors = [internal_error(exc, f"in the {tr.name} translator", qid=qid)]
            return _translate_failed(question, frontend, tr.name, Stage.INTERNAL, errors, t0)
        confirmed = translation.confirmed  # IRIs the translator checked on this store: not ground a second time

        def compile_text(text: str) -> Result:
            return self.compile(text, frontend=frontend, execute=execute,
                                pinned=confirmed if confirmed and text == translation.text else None)

        result = compile_with_repair(compile_text, question, translation, tr, frontend, rounds=self.repair_rounds,
                                     qid=qid)
        result.question = question
        result.steps.insert(0, ReportStep(Stage.TRANSLATE, True, translation.seconds, translation_detail(translation)))
        result.seconds = time.perf_counter() - t0  # translation included
        result.translation = translation.to_dict()
        return result

    def generate(self, question: str, *, frontend: str = "desq", qid: str | None = None) -> Result:
        """`ask` without running the query: checked SPARQL for another endpoint (/v1/generate)."""
        return self.ask(question, frontend=frontend, execute=False, qid=qid)

    def compile(self, text: str, frontend: str = "desq", execute: bool = True,
                pinned: Mapping[str, str] | None = None) -> Result:
        """Parse front-end `text` (once), ground, assemble and (with a store and `execute`) run it. Never raises
        for bad input or a failing query: the Result says which stage failed and why. `pinned`: placeholder name ->
        the IRI a translator already confirmed on this store (used as is, not ground again)."""
        t_start = time.perf_counter()
        result = Result(frontend=frontend, text=text if isinstance(text, str) else "")
        if frontend not in FRONTENDS:
            err = ErrorInfo(Stage.PARSE, f"unknown front-end {frontend!r}; choose one of "
                                         f"{', '.join(FRONTENDS.names())}")
            result.steps.append(ReportStep(Stage.PARSE, False, 0.0, "", [err]))
            return _finish(result, Stage.PARSE, [err], t_start)
        parse: Callable[[str], ParseResult | QCompilerResult | PyragResult] = FRONTENDS.get(frontend).make(self)
        t0 = time.perf_counter()
        try:
            parsed = parse(text)
        except Exception as exc:  # a front-end's contract is "never raises"; one that does is our bug
            err = internal_error(exc, f"in the {frontend} front-end")
            result.steps.append(ReportStep(Stage.PARSE, False, time.perf_counter() - t0, "", [err]))
            return _finish(result, Stage.INTERNAL, [err], t_start)
        seconds = time.perf_counter() - t0
        parse_errs = [e for e in parsed.errors if e.stage != Stage.VALIDATE]
        validate_errs = [e for e in parsed.errors if e.stage == Stage.VALIDATE]
        result.constraints = [c.to_dict() for c in getattr(parsed, "constraints", [])]
        result.steps.append(ReportStep(Stage.PARSE, not parse_errs, seconds,
                                 f"{len(result.constraints)} constraints", parse_errs))
        if not parse_errs:
            result.steps.append(ReportStep(Stage.VALIDATE, not validate_errs, 0.0, "", validate_errs))
        if parsed.errors or parsed.plan is None:
            errs = list(parsed.errors) or [ErrorInfo(Stage.PARSE, "no Plan was produced")]
            return _finish(result, _parse_stage(errs, parse_errs, validate_errs), errs, t_start)
        result.plan = parsed.plan.to_dict()
        try:
            assembler = self.assembler
        except KBQAError as e:
            stage = e.info.stage if e.info.stage in (*PIPELINE_ORDER, Stage.STORE) else Stage.STORE
            return _finish(result, stage, e.errors, t_start)
        try:
            out = assembler.assemble(parsed.plan, execute=execute, pinned=pinned)
        except KBQAError:
            raise
        except Exception as exc:  # the assembler reports problems as errors; an exception is our bug
            return _finish(result, Stage.INTERNAL, [internal_error(exc, "assembling the query")], t_start)
        if self.grounding_note and out.steps and out.steps[0].stage == Stage.GROUND:
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


def _parse_stage(errs: list[ErrorInfo], parse_errs: list[ErrorInfo], validate_errs: list[ErrorInfo]) -> Stage:
    """The failed stage of a text that gave no Plan: internal when any error is our bug (so that it is never
    repaired as the model's mistake), else translate / assemble as reported, else parse or validate."""
    if any(e.stage == Stage.INTERNAL for e in errs):
        return Stage.INTERNAL
    if errs[0].stage in (Stage.TRANSLATE, Stage.ASSEMBLE):
        return Stage(errs[0].stage)
    return Stage.PARSE if parse_errs or not validate_errs else Stage.VALIDATE


def _translate_failed(question: str, frontend: str, who: str, stage: Stage, errors: list[ErrorInfo],
                      t0: float) -> Result:
    result = Result(frontend=frontend, question=question, status="error", failed_stage=stage, errors=errors)
    result.steps.append(ReportStep(Stage.TRANSLATE, False, time.perf_counter() - t0, who, errors))
    result.seconds = time.perf_counter() - t0
    return result


def _as_translate(err: ErrorInfo) -> ErrorInfo:
    return ErrorInfo(Stage.TRANSLATE, err.message, err.file, err.line, err.column, err.qid, err.ac)


def _finish(result: Result, stage: str, errors: list[ErrorInfo], t_start: float) -> Result:
    result.status, result.failed_stage = "error", stage
    result.errors = list(errors)
    result.seconds = time.perf_counter() - t_start
    return result
