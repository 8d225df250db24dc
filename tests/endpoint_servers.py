"""Real HTTP servers on loopback for the endpoint tests: one that misbehaves on purpose, one that is closed.

`FaultyEndpoint(behaviour)` is a `http.server` in a thread that answers every request the way a broken
SPARQL endpoint does (slow, HTTP 500, malformed JSON, auth required, rate limited, …) and records
what it received, so tests can check what the client sent (method, headers, the query).
"""

from __future__ import annotations

import base64
import json
import threading
import time
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from kb_dumps.oxigraph_server import free_port

ASK_TRUE = json.dumps({"head": {}, "boolean": True}).encode()
SELECT_ONE = json.dumps({"head": {"vars": ["x"]}, "results": {"bindings": [
    {"x": {"type": "uri", "value": "http://example.org/a"}}]}}).encode()


class LoopbackServer:
    """A `http.server` on 127.0.0.1 (`port` 0: any free one) that answers in a daemon thread while the `with`
    block runs; subclasses pass the request handler they build."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], port: int = 0):
        self.server = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


class FaultyEndpoint(LoopbackServer):
    """behaviour(request_number, request) -> (status, headers, body, delay_s); `request` has method, path,
    query and headers."""

    def __init__(self, behaviour: Callable[[int, dict[str, Any]], tuple[int, dict[str, str], bytes, float]]):
        self.behaviour = behaviour
        self.requests: list[dict[str, Any]] = []
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/sparql"
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _answer(self, query: str) -> None:
                n = len(outer.requests)
                request = {"method": self.command, "path": self.path, "query": query,
                           "headers": dict(self.headers.items()), "time": time.monotonic()}
                outer.requests.append(request)
                status, headers, body, delay = outer.behaviour(n, request)
                if delay:
                    time.sleep(delay)
                try:
                    self.send_response(status)
                    for k, v in {"Content-Type": "application/sparql-results+json", **headers}.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout): expected

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                qs = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
                self._answer(qs.get("query", [""])[0])

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(length).decode()
                self._answer(urllib.parse.parse_qs(data).get("query", [""])[0])

        super().__init__(Handler, self.port)


def ok(body: bytes = ASK_TRUE, delay: float = 0.0) -> tuple[int, dict[str, str], bytes, float]:
    return 200, {}, body, delay


def needs_basic_auth(user: str, password: str) -> Callable[..., Any]:
    """401 unless the request carries these basic-auth credentials."""
    token = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    def behaviour(n: int, request: dict[str, Any]) -> tuple[int, dict[str, str], bytes, float]:
        return (200, {}, ASK_TRUE, 0.0) if request["headers"].get("Authorization") == token else (
            401, {}, b"unauthorized", 0.0)

    return behaviour


def closed_port_url() -> str:
    """The URL of a port nothing listens on (bound, then released)."""
    return f"http://127.0.0.1:{free_port()}/sparql"
