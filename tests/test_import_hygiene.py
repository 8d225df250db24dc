"""The query path never imports the training stack: each verb runs in a fresh interpreter on an indexed store
with a case bank, and what it imported is read from its `sys.modules` at exit.

torch + sentence-transformers cost ~6 s of start-up and ~400 MB per process (issue 17); they load only
for `kbqa train`, the hf backend and the `minilm` embedder.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

HEAVY = ("torch", "transformers", "peft", "sentence_transformers", "model2vec", "onnxruntime")
FIXTURES = Path(__file__).parent / "fixtures"
# Runs the CLI in this interpreter, then prints the heavy modules it imported as the last line: from
# atexit, so that `kbqa serve` (stopped by SIGINT) reports too.
HOOK = (
    "import atexit, json, sys\n"
    f"HEAVY = {HEAVY!r}\n"
    "atexit.register(lambda: print('MODULES ' + json.dumps(sorted(m for m in HEAVY if m in sys.modules)),"
    " flush=True))\n"
    "from kbqa.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def _env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(Path(__file__).parents[1])}


def _modules(stdout: str) -> list[str]:
    line = [x for x in stdout.splitlines() if x.startswith("MODULES ")][-1]
    return json.loads(line[len("MODULES "):])


@pytest.fixture(scope="module")
def store(tiny_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the tiny indexed store with a small case bank: `ask` then translates, grounds and executes."""
    from kbqa.translators.casebank_build import build_case_bank

    root = tmp_path_factory.mktemp("lean") / "tiny"
    shutil.copytree(tiny_store, root)
    build_case_bank(root, ["simplequestions-train"], limit_per_set=200, progress=False)
    return root


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", HOOK, *argv], capture_output=True, text=True, env=_env(),
                          timeout=120)


@pytest.mark.parametrize("verb", ["ask", "compile", "sparql", "ground"])
def test_query_verbs_do_not_import_the_training_stack(verb: str, store: Path, tmp_path: Path) -> None:
    argv = {
        "ask": ["ask", "what is the capital of atlantis", "--store", str(store)],
        "compile": ["compile", str(FIXTURES / "desq_real" / "b09_simple.desq"), "--store", str(store)],
        "sparql": ["sparql", "SELECT ?l WHERE { <http://www.wikidata.org/entity/Q1> "
                             "<http://www.w3.org/2000/01/rdf-schema#label> ?l }", "--store", str(store)],
        "ground": ["ground", "Atlantis", "--store", str(store)],
    }[verb]
    proc = _run(*argv)
    assert "MODULES" in proc.stdout, proc.stderr[-2000:]
    assert proc.returncode in (0, 1), proc.stderr[-2000:]  # 1 = no answer: the path still ran
    assert _modules(proc.stdout) == [], f"{verb} imported {_modules(proc.stdout)}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_does_not_import_the_training_stack(store: Path, tmp_path: Path) -> None:
    port = _free_port()
    out = tmp_path / "serve.out"
    with out.open("w") as f:
        proc = subprocess.Popen([sys.executable, "-c", HOOK, "serve", "--store", str(store), "--port", str(port),
                                 "--log-level", "warning"], stdout=f, stderr=subprocess.STDOUT, env=_env())
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(base + "/healthz", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    pytest.fail(f"kbqa serve did not start: {out.read_text()[-2000:]}")
                time.sleep(0.3)
        body = json.dumps({"question": "what is the capital of atlantis"}).encode()
        req = urllib.request.Request(base + "/v1/ask", data=body, headers={"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(req, timeout=60).read()  # warm-up: translate, ground, execute
        except urllib.error.HTTPError:
            pass  # a 4xx/5xx answer still went through the path
        with urllib.request.urlopen(base + "/v1/ground?label=Atlantis", timeout=60) as r:
            r.read()
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    assert _modules(out.read_text()) == [], out.read_text()[-2000:]
