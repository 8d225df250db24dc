"""The published HTTP schema: requests, and responses that mirror `Result.to_dict()` field for field.

The response models document what the routes return (they make /openapi.json); the routes send the
engine's own plain data (`Result.to_dict()`, the objects `kbqa ask --format json` prints), and the tests
validate real responses against /openapi.json, so a drift between the two is caught.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, Field, RootModel, field_validator

from kb_dumps.json_types import JsonObject
from kbqa.frontends import FRONTENDS


def _known_frontend(name: str) -> str:
    if name not in FRONTENDS:
        raise ValueError(f"unknown front-end {name!r}; choose one of {', '.join(FRONTENDS.names())}")
    return name


def _frontend_enum(schema: JsonObject) -> None:
    schema["enum"] = list(FRONTENDS.names())  # read when /openapi.json is made: registered front-ends included


def _translator_names(schema: JsonObject) -> None:
    from kbqa.translators import translator_names

    schema["examples"] = list(translator_names())


# A front-end name: validated against, and published from, the registry (`kbqa.frontends.FRONTENDS`).
Frontend = Annotated[str, AfterValidator(_known_frontend), Field(json_schema_extra=_frontend_enum)]


# ---- errors ---------------------------------------------------------------------------------------
class ErrorDetail(BaseModel):
    """One problem: the stage it belongs to and a message to act on (kb_dumps.stage_errors.ErrorInfo)."""

    stage: str = Field(description="ingest | translate | parse | validate | ground | assemble | execute | empty | "
                                   "store | usage | server")
    message: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    qid: str | None = None
    ac: str | None = None


class ErrorResponse(BaseModel):
    """Every error response of the server (4xx, 5xx) carries `error`; never a traceback."""

    error: ErrorDetail


# ---- the Result (kbqa.pipeline.Result.to_dict) ----------------------------------------------------
class AnswerValue(BaseModel):
    type: str = Field(description="uri | literal | bnode")
    value: str
    value_type: str = Field(description="iri | number | boolean | date | string | literal | bnode")
    normalized: str | int | float | bool | None = None
    label: str | None = None
    datatype: str | None = None
    lang: str | None = None


class Answers(BaseModel):
    kind: str = Field(description="select | ask")
    vars: list[str]
    boolean: bool | None = None
    truncated: bool = False
    rows: list[list[AnswerValue | None]]


class Candidate(BaseModel):
    id: str
    label: str
    description: str
    kind: str
    score: float
    signals: dict[str, float] = {}
    sources: list[str] = []
    matched: str = ""


class Correction(BaseModel):
    action: str = Field(description="kept | replaced | none")
    uri: str | None
    guessed: str | None
    reason: str
    candidate: Candidate | None = None


class PlaceholderGrounding(BaseModel):
    name: str
    kind: str
    label: str = ""
    description: str = ""
    guessed_uri: str | None = None
    ac: str | None = None
    candidates: list[Candidate] = []
    correction: Correction | None = None
    reason: str = ""
    chosen: str | None = None
    widened: bool = False


class Attempt(BaseModel):
    mapping: dict[str, str]
    score: float
    sparql: str | None = None
    outcome: str = Field(description="answers | empty | timeout | error | written | skipped")
    rows: int = 0
    seconds: float = 0.0
    message: str = ""


class Diagnosis(BaseModel):
    ac: str | None
    message: str
    checked: list[dict[str, Any]] = []
    alone_matches: bool | None = None


class ReportStep(BaseModel):
    stage: str
    ok: bool
    seconds: float
    detail: str = ""
    errors: list[ErrorDetail] = []


class Result(BaseModel):
    """One question or front-end text: SPARQL, answers, Plan, grounding, steps (the timings are `seconds` in
    all and each step's `seconds`; the failed stage is `failed_stage`). `error` is set on error responses."""

    status: str = Field(description="ok | generated | empty | error")
    failed_stage: str | None
    exit_code: int = Field(description="what `kbqa ask` would exit with: 0 ok, 1 no answer, 2 usage, 3 bad input, "
                                       "4 backend")
    frontend: str
    text: str = Field(description="the front-end text that was compiled")
    question: str | None
    sparql: str | None
    answers: Answers | None
    plan: dict[str, Any] | None
    constraints: list[dict[str, Any]] = Field(description="the DeSQ ACs (id, text, fragment) or the parts of a "
                                                          "QCompiler / PyRAG text")
    grounding: list[PlaceholderGrounding]
    attempts: list[Attempt]
    diagnosis: Diagnosis | None
    steps: list[ReportStep]
    errors: list[ErrorDetail]
    timed_out: bool
    seconds: float
    translation: dict[str, Any] | None = None
    repairs: dict[str, Any] | None = None
    error: ErrorDetail | None = Field(default=None, description="the first error, on 4xx / 5xx responses only")


class ResultOrError(RootModel[Result | ErrorResponse]):
    """A failed Result (bad input, a failed translator or store), or an error before the engine ran."""


class BatchResponse(BaseModel):
    results: list[Result] = Field(description="one Result per question, in the order of the request")
    seconds: float


class GroundingResponse(BaseModel):
    """`kbqa ground --format json`: candidates above the threshold, best first; `reason` when none."""

    query: str
    description: str | None
    kind: str | None
    candidates: list[Candidate]
    below_threshold: list[Candidate]
    threshold: float
    reason: str = ""
    context_used: bool = False


class Health(BaseModel):
    status: str = Field(description="ok | draining")
    store: str | None
    profile: str | None = Field(default=None, description="the KB profile (wikidata, freebase, generic, …)")
    translator: str | None = Field(default=None, json_schema_extra=_translator_names,
                                   description="the translator answering questions (`kbqa serve --translator`)")
    engines: int
    engines_busy: int
    sparql_workers: int
    inflight: int
    max_inflight: int


# ---- requests ----------------------------------------------------------------------------------------
def check_text(text: str, what: str) -> str:
    """ValueError (422) for a lone surrogate: JSON may carry one ("\\ud800"), and it is not text the embedder,
    the tokenizer or a UTF-8 encoder can take."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"{what} is not valid Unicode text: a lone surrogate {text[e.start]!a} at character "
                         f"{e.start}") from None
    return text


def check_question(text: str, limit: int) -> str:
    """The question, stripped; ValueError (a 422 usage error) when it is empty, longer than `limit` or not text."""
    check_text(text, "the question")
    if not text.strip():
        raise ValueError("the question is empty; write a question in words, e.g. 'where was sasha vujačić born'")
    if len(text) > limit:
        raise ValueError(f"the question has {len(text)} characters; the limit is {limit}")
    return text.strip()


class _QuestionOptions(BaseModel):
    frontend: Frontend = Field(default="desq", description="the language the translator writes")
    language: str | None = Field(default=None, description="the question's language; only 'en' is supported")

    @field_validator("language")
    @classmethod
    def _language(cls, v: str | None) -> str | None:
        if v is not None and v.lower().split("-")[0] != "en":
            raise ValueError(f"language {v!r} is not supported: the translators read English questions ('en')")
        return v


class GenerateRequest(_QuestionOptions):
    question: str = Field(description="the question, in words", examples=["where was sasha vujačić born"])
    id: str | None = Field(default=None, description="a question id (the replay backend looks outputs up by it)")

    @field_validator("id")
    @classmethod
    def _id(cls, v: str | None) -> str | None:
        return v if v is None else check_text(v, "the id")


class AskRequest(GenerateRequest):
    execute: bool = Field(default=True, description="run the query on the store (false: generate only)")


class BatchRequest(_QuestionOptions):
    questions: list[str] = Field(description="the questions, answered concurrently; results come in this order")
    execute: bool = True


class CompileRequest(BaseModel):
    frontend: Frontend = Field(default="desq", description="the language of `source`")
    source: str = Field(description="the DeSQ / QCompiler / PyRAG text")
    execute: bool = Field(default=True, description="run the query on the store (false: SPARQL only)")

    @field_validator("source")
    @classmethod
    def _source(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("the source is empty; give a DeSQ, QCompiler or PyRAG text")
        return check_text(v, "the source")
