"""The stdio transport of `kbqa mcp`: the SDK's, except that every line it cannot read gets a JSON-RPC error.

The SDK's reader logs a line that is not a JSON-RPC message and drops it, so the client waits for its own
timeout. Here each line is first read the way the SDK reads it (`jsonrpc_message_adapter.validate_json`);
a line it refuses is answered here and never reaches the session:

- -32700 parse error: not UTF-8, not JSON (NaN and Infinity included, which JSON does not have);
- -32600 invalid request: not an object (a batch array, a number), `jsonrpc` not "2.0", a method or id of the
  wrong type (the SDK would take a request with `"id": true` for a notification, which gets no answer), text that is not Unicode (a lone surrogate such as "\\ud800") outside `params`;
- -32602 invalid params: a request whose `params` is not an object, or holds text that is not Unicode.

The error carries the request's id when the line is a request with a usable id, else `null` (JSON-RPC 2.0
§5). Blank lines are not messages and are skipped. fd 0 is diverted to the null device while serving, as the
SDK does, so that nothing else in the process (or a child) reads the protocol's bytes.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from typing import TYPE_CHECKING, BinaryIO, NoReturn

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

from kb_dumps.json_types import JsonObject

if TYPE_CHECKING:
    # the stream protocols `Server.run` takes (the SDK's stdio_server yields objects of its private stream classes)
    from mcp.shared._stream_protocols import ReadStream, WriteStream

_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", int: "a number", float: "a number",
               bool: "a boolean", type(None): "null"}


def _error(rid: str | int | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=rid, error=ErrorData(code=code, message=message))


def _json_type(value: object) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def _not_unicode(value: object, where: str) -> str | None:
    """The path of the first key or string under `value` that a UTF-8 encoder refuses (a lone surrogate)."""
    stack: list[tuple[object, str]] = [(value, where)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return path
        elif isinstance(item, dict):
            for k, v in item.items():
                shown = k.encode("utf-8", "backslashreplace").decode("utf-8")  # a path that can be written back
                stack.append((k, f"a key of {path}"))
                stack.append((v, f"{path}.{shown}"))
        elif isinstance(item, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(item))
    return None


def _request_id(data: JsonObject) -> str | int | None:
    """The id to answer with: a request's string or integer id (booleans are not ids), else None."""
    rid = data.get("id")
    if "method" not in data or isinstance(rid, bool) or not isinstance(rid, str | int):
        return None
    if isinstance(rid, str) and _not_unicode(rid, "") is not None:
        return None  # an id that cannot be written back
    return rid


def rejection(line: bytes, unit: str = "line") -> JSONRPCError | None:
    """The JSON-RPC error for a line (`unit`: or an HTTP request body) that is not an MCP message; None when the
    SDK can read it."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as e:
        return _error(None, PARSE_ERROR, f"Parse error: the {unit} is not UTF-8 text (byte {e.start})")
    try:
        message = jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValidationError as e:
        why = e
    else:
        # the SDK reads a request whose id is not an id (true, 1.5) as a notification, which gets no answer
        if isinstance(message, JSONRPCNotification) and '"id"' in text:
            data = json.loads(text)
            if isinstance(data, dict) and "id" in data:
                return _error(None, INVALID_REQUEST, 'Invalid Request: "id" must be a string or an integer')
        return None
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return _error(None, PARSE_ERROR, f"Parse error: the {unit} is not JSON (one JSON-RPC message per {unit})")
    if not isinstance(data, dict):
        what = "a batch (an array)" if isinstance(data, list) else _json_type(data)
        return _error(None, INVALID_REQUEST, f"Invalid Request: a message is a JSON object, not {what}")
    rid = _request_id(data)
    if data.get("jsonrpc") != "2.0":
        return _error(rid, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
    if "method" in data:
        if not isinstance(data["method"], str):
            return _error(rid, INVALID_REQUEST, f'Invalid Request: "method" must be a string, not '
                                                f"{_json_type(data['method'])}")
        if "id" in data and rid is None:
            return _error(None, INVALID_REQUEST, 'Invalid Request: "id" must be a string or an integer')
        params = data.get("params")
        if params is not None and not isinstance(params, dict):
            return _error(rid, INVALID_PARAMS, f'Invalid params: "params" must be an object, not {_json_type(params)}')
        bad = _not_unicode(params, "params")
        if bad is not None:
            return _error(rid, INVALID_PARAMS, f"Invalid params: {bad} is not Unicode text (a lone surrogate)")
    bad = _not_unicode(data, "the message")
    if bad is not None:
        return _error(rid, INVALID_REQUEST, f"Invalid Request: {bad} is not Unicode text (a lone surrogate)")
    first = why.errors()[0] if why.errors() else {}
    loc = ".".join(str(x) for x in first.get("loc", ())[1:])  # [0] is the union member the SDK tried
    return _error(rid, INVALID_REQUEST, f"Invalid Request: not a JSON-RPC request, notification or response"
                                        f"{f' ({loc}: ' + first.get('msg', '') + ')' if loc else ''}")


class CheckedLines:
    """The lines of `raw` for the SDK's stdio reader (`async for line in stdin`): a line the SDK could not read
    is answered on `replies` and skipped."""

    def __init__(self, raw: BinaryIO, replies: MemoryObjectSendStream[JSONRPCError]):
        self._raw, self._replies = raw, replies

    def __aiter__(self) -> CheckedLines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await anyio.to_thread.run_sync(self._raw.readline, abandon_on_cancel=True)
            if not line:
                self._replies.close()
                raise StopAsyncIteration
            if not line.strip():
                continue
            error = rejection(line)
            if error is None:
                return line.decode("utf-8")
            await self._replies.send(error)


async def _relay(errors: MemoryObjectReceiveStream[JSONRPCError], write: WriteStream[SessionMessage]) -> None:
    """The errors, through the SDK's one stdout writer (two writers on one pipe would tear lines)."""
    with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
        async with errors:
            async for error in errors:
                await write.send(SessionMessage(error))


def _claim_stdin() -> tuple[BinaryIO, Callable[[], None]]:
    """Read the protocol from a private duplicate of fd 0 and point fd 0 at the null device until released."""
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):  # no real stdin (a test harness): read it in place
        return sys.stdin.buffer, lambda: None
    try:
        private = os.dup(fd)  # not inheritable: a child never holds the wire
    except OSError:
        return sys.stdin.buffer, lambda: None
    try:
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
    except OSError:
        os.close(private)
        return sys.stdin.buffer, lambda: None

    def release() -> None:
        with suppress(OSError):
            os.dup2(private, fd)

    return os.fdopen(private, "rb", closefd=False), release


@asynccontextmanager
async def checked_stdio_server() -> AsyncIterator[tuple[ReadStream[SessionMessage | Exception],
                                                       WriteStream[SessionMessage]]]:
    """`mcp.server.stdio.stdio_server` reading checked lines: (read stream, write stream) for `Server.run`."""
    raw, release = _claim_stdin()
    send, receive = anyio.create_memory_object_stream[JSONRPCError](64)
    try:
        async with stdio_server(stdin=CheckedLines(raw, send)) as (read_stream, write_stream):  # type: ignore[arg-type]
            async with anyio.create_task_group() as tg:
                tg.start_soon(_relay, receive, write_stream)
                yield read_stream, write_stream
                tg.cancel_scope.cancel()
    finally:
        release()
