"""Errors as JSON: `{"error": {"stage", "message", …}}` with a status code; no traceback leaves the server."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, TypeAlias

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from kb_dumps.json_types import JsonObject, JsonValue
from kb_dumps.stage_errors import EXIT_BACKEND, EXIT_NO_ANSWER, EXIT_OK, EXIT_USAGE, KBQAError

if TYPE_CHECKING:
    from kbqa.result import Result

log = logging.getLogger("kbqa.server")

# The OpenAPI documentation of one response status, as FastAPI's `responses=` takes it: a description, the body's
# model class, and the media types it may come in ({media type: its OpenAPI content object}).
ResponseDoc: TypeAlias = dict[str, str | type[BaseModel] | dict[str, JsonObject]]


class ServerError(Exception):
    """A request the server refuses or cannot serve: an HTTP status, a stage and a message."""

    def __init__(self, status: int, message: str, stage: str = "usage", headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.stage, self.message, self.headers = status, stage, message, headers


def error_body(stage: str, message: str, **extra: JsonValue) -> JsonObject:
    return {"error": {"stage": stage, "message": message, **{k: v for k, v in extra.items() if v is not None}}}


def error_response(status: int, stage: str, message: str, headers: dict[str, str] | None = None,
                   **extra: JsonValue) -> JSONResponse:
    return JSONResponse(error_body(stage, message, **extra), status_code=status, headers=headers)


def result_status(result: Result) -> int:
    """The HTTP status of a Result, from the exit code `kbqa ask` would give it: an answer, or no answer (the
    question was understood but the KB has nothing: 200); bad input (422); usage (400); a backend failure (502),
    or one that ran out of time (504)."""
    code = result.exit_code
    if code in (EXIT_OK, EXIT_NO_ANSWER):
        return 200
    if code == EXIT_USAGE:
        return 400
    timed_out = result.timed_out or any("timed out" in e.message or "time budget" in e.message
                                        for e in result.errors)
    if code == EXIT_BACKEND:
        return 504 if timed_out else 502
    return 422


def result_response(result: Result) -> JSONResponse:
    """A Result as the response body (`Result.to_dict()`, plus `error` when the status is not 2xx)."""
    status = result_status(result)
    body = result.to_dict()
    if status >= 400:
        first = result.errors[0].to_dict() if result.errors else {
            "stage": result.failed_stage or "server", "message": f"failed at stage {result.failed_stage}"}
        body["error"] = first
    return JSONResponse(body, status_code=status)


def kbqa_error_status(e: KBQAError) -> int:
    if e.exit_code == EXIT_BACKEND:
        return 504 if getattr(e, "timed_out", False) else 503
    return 400 if e.exit_code == EXIT_USAGE else 422


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err.get("loc", ()) if x not in ("body", "query"))
        msg = str(err.get("msg", "invalid"))
        msg = msg.removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts) or "the request is not valid"


def install_error_handlers(app: FastAPI) -> None:
    """Every failure becomes the JSON error shape; unexpected exceptions are logged here, never sent."""

    @app.exception_handler(ServerError)
    async def _server_error(request: Request, exc: ServerError) -> JSONResponse:
        return error_response(exc.status, exc.stage, exc.message, headers=exc.headers)

    @app.exception_handler(KBQAError)
    async def _kbqa_error(request: Request, exc: KBQAError) -> JSONResponse:
        return JSONResponse(error_body(**exc.info.to_dict()), status_code=kbqa_error_status(exc))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(422, "usage", _validation_message(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        stage = "usage" if exc.status_code < 500 else "server"
        message = exc.detail if isinstance(exc.detail, str) else "request failed"
        if exc.status_code == 400 and message == "There was an error parsing the body":
            # FastAPI's answer to a body that is not UTF-8: the README promises 422 for malformed JSON
            return error_response(422, "usage", "the body is not valid JSON in UTF-8")
        if exc.status_code == 404:
            message = f"no route {request.url.path}; see /openapi.json for the routes"
        elif exc.status_code == 405:
            message = f"{request.method} is not allowed on {request.url.path}"
        return error_response(exc.status_code, stage, message, headers=getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("unexpected error on %s %s", request.method, request.url.path, exc_info=exc)
        return error_response(500, "server", f"internal error ({type(exc).__name__}); the server log has the "
                                             "details")
