"""The stages of a question and their errors, shared by every layer: a stage, where it happened, a message to act on.

Lives in the lowest package so that every layer (kb_dumps, grounding, assembler, eval, kbqa)
reports problems the same way; the CLI turns them into one line and an exit code, never a
traceback.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from enum import StrEnum

log = logging.getLogger("kbqa")

# Exit codes of the `kbqa` command (DESIGN "Command line and Python API").
EXIT_OK, EXIT_NO_ANSWER, EXIT_USAGE, EXIT_BAD_INPUT, EXIT_BACKEND = 0, 1, 2, 3, 4
# User input quoted in a message (a label, a line, a guessed URI) is cut to this many characters: a 5 MB label
# must not become a 10 MB error (issue 15). A message as a whole is cut at MAX_MESSAGE_CHARS as a backstop.
ECHO_CHARS = 200
MAX_MESSAGE_CHARS = 2_000
# Where to report a bug of ours (the one-line message of an `internal` error names it).
ISSUES_HINT = "this is a bug in kbqa, not in your input: please report it with the input that caused it"


class Stage(StrEnum):
    """Where a problem happened. A `str` (``Stage.PARSE == "parse"``), so ErrorInfo, Results and JSON carry
    the plain name; the one list of stages that the pipeline, repair, attribution and exit codes use."""

    INGEST = "ingest"  # reading a dump (kbqa ingest)
    USAGE = "usage"  # a flag, file or setting the user gave is wrong
    TRANSLATE = "translate"  # question -> front-end text (translator or model backend)
    PARSE = "parse"  # front-end text -> Plan
    VALIDATE = "validate"  # the Plan breaks a rule of the format (unbound variable, unknown placeholder, ...)
    GROUND = "ground"  # placeholders -> KB ids
    ASSEMBLE = "assemble"  # Plan + grounding -> SPARQL text
    EXECUTE = "execute"  # the store refused the query, or it failed or ran out of time
    EMPTY = "empty"  # the query ran and returned nothing
    STORE = "store"  # the store could not be opened or failed
    INTERNAL = "internal"  # an unexpected exception in our own code: a bug, never the model's mistake

    @property
    def repairable(self) -> bool:
        """Whether a corrected model output can fix a failure at this stage (the repair loop sends it back)."""
        return self in REPAIRABLE

    @property
    def exit_code(self) -> int:
        """The `kbqa` exit code of a question that failed here."""
        return _STAGE_EXIT.get(self, EXIT_BAD_INPUT)


STAGES = tuple(Stage)
# The question path in order (DESIGN "Assembly, checking, execution"): attribution charges the first of these.
PIPELINE_ORDER = (Stage.TRANSLATE, Stage.PARSE, Stage.VALIDATE, Stage.GROUND, Stage.ASSEMBLE, Stage.EXECUTE,
                  Stage.EMPTY)
# Failed stages whose errors describe the model's output itself, so that a corrected output can fix them.
REPAIRABLE = frozenset({Stage.PARSE, Stage.VALIDATE, Stage.ASSEMBLE})
_STAGE_EXIT = {Stage.PARSE: EXIT_BAD_INPUT, Stage.VALIDATE: EXIT_BAD_INPUT, Stage.ASSEMBLE: EXIT_BAD_INPUT,
               Stage.EXECUTE: EXIT_BAD_INPUT, Stage.GROUND: EXIT_NO_ANSWER, Stage.EMPTY: EXIT_NO_ANSWER,
               Stage.STORE: EXIT_BACKEND, Stage.TRANSLATE: EXIT_BACKEND, Stage.INTERNAL: EXIT_BACKEND,
               Stage.USAGE: EXIT_USAGE, Stage.INGEST: EXIT_BAD_INPUT}


def exit_code_of(stage: str | None) -> int:
    """The exit code of a failed stage given by name (an unknown name is bad input)."""
    try:
        return Stage(stage).exit_code
    except ValueError:
        return EXIT_BAD_INPUT


def internal_error(exc: BaseException, where: str, **kw: str | int | None) -> ErrorInfo:
    """An unexpected exception of ours as one `internal` problem: its traceback goes to the log (shown
    under `kbqa -v`), the user sees one line with what failed and the issue-report hint."""
    log.info("internal error %s", where, exc_info=exc)
    return ErrorInfo(Stage.INTERNAL, f"internal error {where} ({type(exc).__name__}: {str(exc)[:200]}); "
                     f"{ISSUES_HINT} (kbqa -v shows the traceback)", **kw)  # type: ignore[arg-type]


def echo(value: object, limit: int = ECHO_CHARS) -> str:
    """`value` quoted for a message (as `repr` does), cut to `limit` characters with "…" when longer."""
    text = value if isinstance(value, str) else str(value)
    return repr(text[:limit] + "…" if len(text) > limit else text)


def cap_message(message: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """`message` cut to `limit` characters, saying how long it was (the backstop of every ErrorInfo)."""
    if len(message) <= limit:
        return message
    return f"{message[:limit]}… (message cut: {len(message):,} characters)"


@dataclass
class ErrorInfo:
    """One problem, as plain data: what the repair loop and the reports carry."""

    stage: str
    message: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    qid: str | None = None
    ac: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.message, str):
            self.message = cap_message(self.message)

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}

    def __str__(self) -> str:
        where = []
        if self.file:
            where.append(f"{self.file}" + (f":{self.line}" if self.line else ""))
        elif self.line:
            where.append(f"line {self.line}")
        if self.qid:
            where.append(f"question {self.qid}")
        if self.ac:
            where.append(self.ac)
        prefix = f"[{self.stage}] " + (", ".join(where) + ": " if where else "")
        return prefix + self.message


class KBQAError(Exception):
    """An error a user can act on. `exit_code` follows the CLI conventions."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, message: str, *, stage: str = "usage", file: str | None = None, line: int | None = None,
                 column: int | None = None, qid: str | None = None, ac: str | None = None,
                 errors: list[ErrorInfo] | None = None):
        self.info = ErrorInfo(stage=stage, message=message, file=file, line=line, column=column, qid=qid, ac=ac)
        self.errors = errors or [self.info]
        if stage == "usage":
            self.exit_code = EXIT_USAGE
        super().__init__(str(self.info))


class IngestError(KBQAError):
    exit_code = EXIT_BAD_INPUT

    def __init__(self, message: str, **kw):
        kw.setdefault("stage", "ingest")
        super().__init__(message, **kw)


class StoreError(KBQAError):
    """The store failed or refused (locked, missing, corrupt)."""

    exit_code = EXIT_BACKEND

    def __init__(self, message: str, **kw):
        kw.setdefault("stage", "store")
        super().__init__(message, **kw)


class QueryError(KBQAError):
    """A query was malformed, refused (SERVICE, update) or ran past its time budget."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, message: str, *, timed_out: bool = False, **kw):
        kw.setdefault("stage", "execute")
        super().__init__(message, **kw)
        self.timed_out = timed_out
        if timed_out:
            self.exit_code = EXIT_BACKEND


class EndpointError(QueryError):
    """A remote SPARQL endpoint could not answer: not reachable, an HTTP error, a malformed answer.

    Stage `execute` like any failed query (an evaluation records it and moves on); exit code 4.
    `reason`: unreachable | http | auth | malformed.
    """

    exit_code = EXIT_BACKEND

    def __init__(self, message: str, *, reason: str, status: int | None = None, **kw):
        super().__init__(message, **kw)
        self.reason, self.status = reason, status


class TranslateError(KBQAError):
    """A translator or a model backend failed (server down, timeout, missing replay id, empty case bank)."""

    exit_code = EXIT_BACKEND

    def __init__(self, message: str, **kw):
        kw.setdefault("stage", "translate")
        super().__init__(message, **kw)
