"""Structured errors shared by every layer: a stage, where it happened, and a message to act on.

Lives in the lowest package so that every layer (kb_dumps, grounding, assembler, eval, kbqa)
reports problems the same way; the CLI turns them into one line and an exit code, never a
traceback.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

STAGES = ("ingest", "translate", "parse", "validate", "ground", "assemble", "execute", "empty", "store", "usage")

# Exit codes of the `kbqa` command (DESIGN "Command line and Python API").
EXIT_OK, EXIT_NO_ANSWER, EXIT_USAGE, EXIT_BAD_INPUT, EXIT_BACKEND = 0, 1, 2, 3, 4


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
