"""Test helpers for the HTTP server: a real uvicorn server on a free loopback port, and schema checks."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveServer:
    """uvicorn serving `app` in a thread (lifespan included); `stop()` is what SIGTERM does: a graceful exit."""

    def __init__(self, app: Any, graceful_s: float = 10.0):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on",
                                timeout_graceful_shutdown=graceful_s)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name=f"uvicorn-{self.port}", daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 180  # the first engine loads the embedding model
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the test server did not start")
            time.sleep(0.05)
        return self

    def stop(self, timeout: float = 30.0) -> None:
        self.server.should_exit = True
        self.thread.join(timeout)

    def __exit__(self, *exc: object) -> None:
        self.stop()


class SchemaChecker:
    """Validates response bodies against the server's own /openapi.json (JSON Schema 2020-12 in OpenAPI 3.1)."""

    def __init__(self, spec: dict):
        import jsonschema

        self.spec = spec
        self._jsonschema = jsonschema

    def schema_for(self, path: str, method: str, status: int) -> dict:
        responses = self.spec["paths"][path][method.lower()]["responses"]
        entry = responses.get(str(status))
        assert entry is not None, f"{method} {path} answered {status}, which /openapi.json does not document"
        return entry["content"]["application/json"]["schema"]

    def check(self, path: str, method: str, status: int, body: Any) -> None:
        schema = {**self.schema_for(path, method, status), "components": self.spec["components"]}
        self._jsonschema.Draft202012Validator(schema).validate(body)
