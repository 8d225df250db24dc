"""Test helpers for `kbqa mcp`: the real command as a subprocess (stdio or streamable HTTP on a loopback port),
driven by the MCP SDK's own client from a thread of its own, so that one server serves a whole test module."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[1]
START_S = 180.0  # the engine loads the embedding model and starts a query worker before it answers


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kbqa_mcp(*args: str) -> list[str]:
    return [sys.executable, "-m", "kbqa.cli", "mcp", *args]


class McpClient:
    """A `ClientSession` opened by `connect()` on an event loop in a background thread; `call(coro_fn)` runs
    `coro_fn(session)` there and returns its result (the session's streams belong to that loop)."""

    def __init__(self, connect: Callable[[], AbstractAsyncContextManager[Any]]):
        self._connect = connect
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._failed: BaseException | None = None
        self._stop: asyncio.Event | None = None
        self.session: ClientSession | None = None
        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(self._main(),), daemon=True)

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        try:
            async with self._connect() as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                self.session = session
                self._ready.set()
                await self._stop.wait()
        except BaseException as e:  # noqa: BLE001  # reported to the test thread, which raises it
            self._failed = e
            self._ready.set()

    def __enter__(self) -> McpClient:
        self._thread.start()
        self._ready.wait(START_S)
        if self._failed is not None or self.session is None:
            raise RuntimeError(f"the MCP session did not open: {self._failed!r}")
        return self

    def call(self, fn: Callable[[ClientSession], Any], timeout: float = 120.0) -> Any:
        assert self.session is not None
        return asyncio.run_coroutine_threadsafe(fn(self.session), self._loop).result(timeout)

    def tool(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        return self.call(lambda s: s.call_tool(name, arguments or {}))

    def __exit__(self, *exc: object) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)


def stdio_session(args: list[str], env: dict[str, str], log: Path) -> McpClient:
    """`kbqa mcp ARGS` started by the SDK's stdio client, as a desktop client starts it; stderr goes to `log`."""

    @asynccontextmanager
    async def connect() -> AsyncIterator[Any]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "kbqa.cli", "mcp", *args],
                                       env=env, cwd=str(ROOT))
        with open(log, "a", encoding="utf-8") as errlog:  # a real file: the child's stderr needs a descriptor
            async with stdio_client(params, errlog=errlog) as streams:
                yield streams

    return McpClient(connect)


class HttpServer:
    """`kbqa mcp --transport http` on a free loopback port, as a subprocess; stopped with SIGINT (Ctrl-C)."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self._args = [*args, "--transport", "http", "--host", "127.0.0.1", "--port", str(self.port)]
        self._env, self._log = {**os.environ, **env}, log
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> HttpServer:
        errlog = open(self._log, "ab")  # noqa: SIM115  # closed with the process
        self.proc = subprocess.Popen(kbqa_mcp(*self._args), cwd=ROOT, env=self._env, stdin=subprocess.DEVNULL,
                                     stdout=errlog, stderr=errlog)
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:  # uvicorn binds the port once the lifespan has opened the engines
            if self.proc.poll() is not None:
                raise RuntimeError(f"kbqa mcp exited with {self.proc.returncode}: {self._log.read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("kbqa mcp --transport http did not start")

    def session(self) -> McpClient:
        return McpClient(lambda: _http_streams(self.url))

    def stop(self) -> int | None:
        if self.proc is None:
            return None
        self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(10)

    def __exit__(self, *exc: object) -> None:
        self.stop()


@asynccontextmanager
async def _http_streams(url: str) -> AsyncIterator[Any]:
    async with streamable_http_client(url) as streams:
        yield streams[0], streams[1]


class RawStdio:
    """`kbqa mcp ARGS` on pipes, for lines no SDK client would send: `send(bytes)` writes one line, `reply()`
    reads the next JSON-RPC message the server writes (a reader thread, so that a silent server fails the test
    at `timeout` instead of hanging it)."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path):
        import queue

        self._errlog = open(log, "ab")  # noqa: SIM115  # closed with the process
        self.proc = subprocess.Popen(kbqa_mcp(*args), cwd=ROOT, env={**os.environ, **env}, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._errlog)
        self._lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.rstrip(b"\n") + b"\n")
        self.proc.stdin.flush()

    def reply(self, timeout: float = START_S) -> dict[str, Any]:
        import json
        import queue

        try:
            return json.loads(self._lines.get(timeout=timeout))
        except queue.Empty:
            raise AssertionError(f"no reply from kbqa mcp within {timeout} s") from None

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()  # end of input ends the session
        try:
            return self.proc.wait(30)
        finally:
            self._errlog.close()
