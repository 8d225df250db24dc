"""The streamable-HTTP transport of `kbqa mcp`: the SDK's app, except that every body it cannot read gets one short
JSON-RPC error.

The SDK answers a body that is not JSON-RPC with `id: null` and pydantic's whole validation text, and takes a
request whose id is not an id (`"id": true`) for a notification: 202 and no reply. `CheckedBodies` reads each
POSTed body first, with the checks of the stdio transport (`kbqa.mcp.stdio.rejection`: -32700 parse error,
-32600 invalid request, -32602 invalid params, the request's id when it has a usable one), answers a refused
one with 400 and that error, and hands every other request to the SDK untouched. A body over the size limit is
handed on as well: the SDK's own limit answers it with 413.
"""

from __future__ import annotations

from collections import deque

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kbqa.mcp.stdio import rejection


class CheckedBodies:
    """ASGI middleware around the SDK's streamable-HTTP app: a POST to `path` whose JSON body is not an MCP
    message is answered here (HTTP 400, one JSON-RPC error) and never reaches the session manager."""

    def __init__(self, app: ASGIApp, max_body_bytes: int, path: str = "/mcp"):
        self.app, self.max_body_bytes, self.path = app, max_body_bytes, path.rstrip("/")

    def _checked(self, scope: Scope) -> bool:
        if scope["type"] != "http" or scope.get("method") != "POST" or scope.get("path", "").rstrip("/") != self.path:
            return False
        headers = dict(scope.get("headers") or [])
        ctype = headers.get(b"content-type", b"").decode("latin-1").split(";")[0]
        # as the SDK reads it: another content type keeps its 415
        return any(part.strip() == "application/json" for part in ctype.split(","))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._checked(scope):
            await self.app(scope, receive, send)
            return
        body = bytearray()
        seen: deque[Message] = deque()
        complete = False
        while not complete and len(body) <= self.max_body_bytes:
            message = await receive()
            seen.append(message)
            if message["type"] != "http.request":  # the client went away: the SDK sees it as it would have
                break
            body.extend(message.get("body", b""))
            complete = not message.get("more_body", False)
        error = rejection(bytes(body), "request body") if complete and len(body) <= self.max_body_bytes else None
        if error is None:
            await self.app(scope, _replay(seen, receive), send)
            return
        payload = error.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8")
        await send({"type": "http.response.start", "status": 400,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]})
        await send({"type": "http.response.body", "body": payload})


def _replay(seen: deque[Message], receive: Receive) -> Receive:
    """`receive` for the wrapped app: the messages already read, then the rest from the client."""

    async def replay() -> Message:
        if seen:
            return seen.popleft()
        return await receive()

    return replay
