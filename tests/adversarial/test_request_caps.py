"""Per-request caps on the work one front-end text asks for: QCompiler leaves, PyRAG sub-questions and lines.

A text over a cap is refused at stage `validate` before any leaf reaches the translator, through the Engine
(what the CLI and MCP call) and through `/v1/compile`; the message names the cap and its setting.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
from server_harness import LiveServer

from kbqa.pipeline import Engine
from kbqa.server import ServerSettings, create_app
from kbqa.settings import FrontendSettings, RequestCaps
from kbqa.translators.base import TranslationResult, Translator

GUESSED = (Path(__file__).parent.parent / "fixtures" / "desq" / "atlantis_guessed.desq").read_text(encoding="utf-8")


class CountingTranslator(Translator):
    """A scripted model that counts its calls (a refused text must cost none)."""

    name = "counting"
    frontends = ("desq",)

    def __init__(self) -> None:
        self.calls = 0

    def translate(self, question: str, frontend: str = "desq", *, qid: str | None = None) -> TranslationResult:
        self.calls += 1
        return TranslationResult(GUESSED, frontend, self.name)


def leaves_text(n: int) -> str:
    return " + ".join(f"who rules city {i}?" for i in range(n))


def test_600_leaves_are_refused_fast_before_any_translation() -> None:
    tr = CountingTranslator()
    with Engine(None, translator=tr) as engine:
        t0 = time.perf_counter()
        result = engine.compile(leaves_text(600), frontend="qcompiler")
        seconds = time.perf_counter() - t0
    assert result.status == "error" and result.failed_stage == "validate"
    assert "leaves in the expression: 600, more than the 50 allowed" in result.errors[0].message
    assert "max_leaves" in result.errors[0].message and "KBQA_MAX_LEAVES" in result.errors[0].message
    assert tr.calls == 0 and seconds < 2.0


def test_a_text_at_the_cap_is_translated() -> None:
    tr = CountingTranslator()
    with Engine(None, translator=tr, caps=RequestCaps(max_leaves=3)) as engine:
        assert engine.compile(leaves_text(3), frontend="qcompiler").status == "generated"
        refused = engine.compile(leaves_text(4), frontend="qcompiler")
    assert tr.calls == 3 and refused.failed_stage == "validate" and "the 3 allowed" in refused.errors[0].message


def test_the_caps_come_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("KBQA_MAX_LEAVES", "7")
    monkeypatch.setenv("KBQA_MAX_SUBQUESTIONS", "2")
    assert FrontendSettings().caps() == RequestCaps(7, 2, 200)
    with Engine(None, translator=CountingTranslator()) as engine:
        assert engine.caps == RequestCaps(7, 2, 200)


def test_pyrag_subquestions_and_lines_are_capped() -> None:
    tr = CountingTranslator()
    asks = "\n".join(f'a{i} = ask_kb("what is the capital of atlantis {i}")' for i in range(21))
    many_lines = "\n".join(f'e{i} = entity("Atlantis", "a city")' for i in range(201))
    with Engine(None, translator=tr) as engine:
        sub = engine.compile(asks + "\nfinal_answer = a0\n", frontend="pyrag")
        lines = engine.compile(many_lines + "\nfinal_answer = e0\n", frontend="pyrag")
    assert sub.failed_stage == "validate" and "sub-questions (ask_kb calls): 21, more than the 20" in \
        sub.errors[0].message and "max_subquestions" in sub.errors[0].message
    assert lines.failed_stage == "validate" and "program lines (statements): 202, more than the 200" in \
        lines.errors[0].message and "max_program_lines" in lines.errors[0].message
    assert tr.calls == 0


def test_http_compile_refuses_600_leaves_fast() -> None:
    tr = CountingTranslator()
    app = create_app(ServerSettings(), engine_factory=lambda: Engine(None, translator=tr))
    with LiveServer(app) as live:
        t0 = time.perf_counter()
        res = httpx.post(live.url + "/v1/compile", json={"source": leaves_text(600), "frontend": "qcompiler"},
                         timeout=30)
        seconds = time.perf_counter() - t0
    assert res.status_code == 422 and res.json()["error"]["stage"] == "validate"
    assert "max_leaves" in res.json()["error"]["message"] and len(res.content) < 2 * len(leaves_text(600))  # the source echoed once, no per-leaf records
    assert tr.calls == 0 and seconds < 5.0
