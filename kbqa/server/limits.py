"""Limits: request body size, requests in flight (429), draining on shutdown (503), model-call timeout."""

from __future__ import annotations

import concurrent.futures as cf
import json
import threading
from dataclasses import dataclass

from starlette.types import ASGIApp, Receive, Scope, Send

from kbqa.translators.base import TranslateError, TranslationResult, Translator

# Paths counted against the in-flight limit: the ones that do work (the page, health and schema never wait).
LIMITED_PREFIXES = ("/v1/", "/sparql")


async def _send_json(send: Send, status: int, body: dict, headers: dict[str, str] | None = None) -> None:
    data = json.dumps(body).encode("utf-8")
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": data})


class BodyLimit:
    """ASGI middleware: a body over `max_bytes` is refused with 413 before any route reads it.

    The body is read here (bounded) and replayed to the app, so a client that sends no Content-Length
    (chunked) is bounded too."""

    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            await self._too_large(send, int(length))
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                return
            size += len(msg.get("body", b""))
            if size > self.max_bytes:
                await self._too_large(send, size)
                return
            chunks.append(msg.get("body", b""))
            if not msg.get("more_body"):
                break
        body = b"".join(chunks)
        sent = False

        async def replay() -> dict:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: wait for the disconnect, as the server would

        await self.app(scope, replay, send)

    async def _too_large(self, send: Send, size: int) -> None:
        await _send_json(send, 413, {"error": {
            "stage": "usage", "message": f"the request body has {'more than ' if size > self.max_bytes else ''}"
                                         f"{size} bytes; the limit is {self.max_bytes} bytes"}},
                         {"connection": "close"})


@dataclass
class Gate:
    """What the in-flight limit counts, shared with the app (health report, draining on shutdown)."""

    max_inflight: int
    inflight: int = 0
    draining: bool = False


class InflightLimit:
    """ASGI middleware: at most `gate.max_inflight` working requests at once; one more gets 429 with
    Retry-After, and every one gets 503 once the server is draining (shutting down)."""

    def __init__(self, app: ASGIApp, gate: Gate):
        self.app, self.gate = app, gate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        gate = self.gate
        if scope["type"] != "http" or not scope["path"].startswith(LIMITED_PREFIXES):
            await self.app(scope, receive, send)
            return
        if gate.draining:
            await _send_json(send, 503, {"error": {"stage": "server", "message": "the server is shutting down; "
                                                                                 "retry on a running one"}},
                             {"connection": "close"})
            return
        if gate.inflight >= gate.max_inflight:
            await _send_json(send, 429, {"error": {
                "stage": "server", "message": f"too many requests in flight (the limit is {gate.max_inflight}); "
                                              "retry in a moment"}}, {"retry-after": "1"})
            return
        gate.inflight += 1  # one event loop: no lock needed
        try:
            await self.app(scope, receive, send)
        finally:
            gate.inflight -= 1


class TimedTranslator(Translator):
    """A translator whose calls are bounded by `timeout_s`: past it the question fails at stage translate.

    A Python thread cannot be stopped, so a call that overruns goes on in the background; the next call
    waits behind it (model backends are not re-entrant) within its own deadline."""

    def __init__(self, inner: Translator, timeout_s: float):
        self.inner, self.timeout_s = inner, timeout_s
        self.name, self.frontends = inner.name, inner.frontends
        self._pool = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix="kbqa-model")
        self._closed = threading.Event()

    def _call(self, **kw: str | list[str] | None) -> TranslationResult:
        future = self._pool.submit(self.inner.translate, **kw)
        try:
            return future.result(timeout=self.timeout_s)
        except cf.TimeoutError:
            raise TranslateError(f"the model call timed out after {self.timeout_s:g} s (setting model_timeout_s)",
                                 qid=kw.get("qid")) from None

    def translate(self, question: str, frontend: str = "desq", *, qid: str | None = None) -> TranslationResult:
        return self._call(question=question, frontend=frontend, qid=qid)

    def close(self) -> None:
        if not self._closed.is_set():
            self._closed.set()
            self._pool.shutdown(wait=False, cancel_futures=True)
            self.inner.close()


class TimedRepairTranslator(TimedTranslator):
    """The same for translators that take a repair turn (`kbqa.repair.can_repair` reads this signature)."""

    def translate(self, question: str, frontend: str = "desq", *, qid: str | None = None,  # type: ignore[override]
                  previous: str | None = None, errors: list[str] | None = None) -> TranslationResult:
        if previous is None and errors is None:
            return self._call(question=question, frontend=frontend, qid=qid)
        return self._call(question=question, frontend=frontend, qid=qid, previous=previous, errors=errors)


def timed(translator: Translator, timeout_s: float) -> TimedTranslator:
    from kbqa.repair import can_repair

    cls = TimedRepairTranslator if can_repair(translator) else TimedTranslator
    return cls(translator, timeout_s)
