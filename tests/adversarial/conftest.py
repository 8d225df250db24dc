"""The standing adversarial suite: a loopback listener that must never be called, hypothesis profiles.

`HYPOTHESIS_PROFILE=nightly` (`make test-adversarial`) runs 2,000 generated examples per property; CI runs 200.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from kb_dumps.ingest import ingest

settings.register_profile("ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("nightly", max_examples=2000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


class Listener:
    """A TCP listener on 127.0.0.1 that counts the connections it accepts (any would be a SERVICE call)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/sparql"
        self.connections = 0
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self.sock.close()


@pytest.fixture(scope="session")
def listener() -> Iterator[Listener]:
    lis = Listener()
    yield lis
    lis.close()


@pytest.fixture(scope="session")
def small_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("adv") / "small.nt"
    src.write_text("".join(f"<http://example.org/s{i}> <http://example.org/p> \"v{i}\" .\n" for i in range(50)))
    store = src.parent / "kb"
    ingest([src], store, progress=False)
    return store
