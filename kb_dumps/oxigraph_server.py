"""Serve a local store over SPARQL with the `oxigraph` server (PyPI package `oxigraph`, the `test` extra).

Used by the tests and `bench/endpoint.py` to run the pipeline against a real SPARQL server, and handy
to share a store: `OxigraphServer(".kbqa/stores/wikidata-mini")` serves its current version read-only
on a free loopback port. The server is the same Rust engine as pyoxigraph and reads the same files.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from kb_dumps.layout import StoreLayout
from kb_dumps.stage_errors import StoreError


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def oxigraph_binary() -> str:
    """The `oxigraph` command beside this interpreter (a venv) or on PATH."""
    local = Path(sys.executable).parent / "oxigraph"
    found = str(local) if local.is_file() else shutil.which("oxigraph")
    if not found:
        raise StoreError("the `oxigraph` server is not installed: pip install oxigraph (the test extra)")
    return found


class OxigraphServer:
    """`oxigraph serve-read-only` over a store directory (or a bare pyoxigraph directory) on 127.0.0.1."""

    def __init__(self, store: str | Path, port: int | None = None, timeout_s: float | None = None):
        path = Path(store)
        if not (path / "CURRENT").exists():  # a store directory made by `kbqa ingest`
            path = StoreLayout.of(path).oxigraph
        if not path.is_dir():
            raise StoreError(f"no pyoxigraph store at {path}")
        self.location = path
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/query"
        self.timeout_s = timeout_s
        self.proc: subprocess.Popen | None = None

    def start(self, wait_s: float = 30.0) -> OxigraphServer:
        cmd = [oxigraph_binary(), "serve-read-only", "--location", str(self.location),
               "--bind", f"127.0.0.1:{self.port}", "--union-default-graph"]  # as LocalStore queries
        if self.timeout_s:
            cmd += ["--timeout-s", str(int(self.timeout_s))]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + wait_s
        probe = self.url + "?" + urllib.parse.urlencode({"query": "ASK {}"})
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
                raise StoreError(f"the oxigraph server exited with code {self.proc.returncode}: {err.strip()[:300]}")
            try:
                with urllib.request.urlopen(probe, timeout=2) as r:  # noqa: S310 - loopback
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.1)
        self.stop()
        raise StoreError(f"the oxigraph server on port {self.port} did not answer within {wait_s:g} s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self.proc is not None and self.proc.stderr:
            self.proc.stderr.close()
        self.proc = None

    def __enter__(self) -> OxigraphServer:
        return self.start() if self.proc is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()
