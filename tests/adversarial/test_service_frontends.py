"""SERVICE must never reach the network through the front-ends either: in a DeSQ fragment, in the DeSQ of a
QCompiler leaf, and in the DeSQ of a PyRAG `ask_kb` sub-question (the model writes all three)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_service import ESCAPED_NAMES, NOISE

from kbqa.pipeline import Engine
from kbqa.result import Result
from kbqa.translators.base import TranslationResult, Translator


class ScriptedTranslator(Translator):
    """Answers every leaf / sub-question with the DeSQ text it holds (the test sets it per example)."""

    name = "scripted"
    frontends = ("desq",)

    def __init__(self) -> None:
        self.desq = ""

    def translate(self, question: str, frontend: str = "desq", *, qid: str | None = None) -> TranslationResult:
        return TranslationResult(self.desq, frontend, self.name)


def desq_with(fragment: str) -> str:
    return ("ATOMIC CONSTRAINTS\nAC1: we need the values\nAC2: something has a value\nFRAGMENTS\n"
            f"AC1 => SELECT ?var1\nAC2 => ?var2 <http://example.org/p> ?var1 . {fragment}\nGROUNDING\n")


# The DeSQ goes in directly (desq), as the translation of a leaf, or of an ask_kb sub-question.
SOURCES = {
    "desq": "",
    "qcompiler": "Which values are there?",
    "pyrag": 'v = ask_kb("which values are there?")\nfinal_answer = v\n',
}


@pytest.fixture(scope="module")
def engine(small_store: Path) -> Iterator[tuple[Engine, ScriptedTranslator]]:
    tr = ScriptedTranslator()
    with Engine(small_store, translator=tr, repair_rounds=0, timeout_s=5.0) as e:
        yield e, tr


def compile_through(engine_and_tr: tuple[Engine, ScriptedTranslator], frontend: str, desq: str) -> Result:
    engine, tr = engine_and_tr
    tr.desq = desq
    text = desq if frontend == "desq" else SOURCES[frontend]
    return engine.compile(text, frontend=frontend)


@pytest.mark.parametrize("frontend", sorted(SOURCES))
def test_a_plain_service_is_refused_by_every_front_end(engine, listener, frontend: str) -> None:
    ok = compile_through(engine, frontend, desq_with(""))
    assert ok.status == "ok" and len(ok.answers.rows) == 50  # the same text without SERVICE runs
    result = compile_through(engine, frontend, desq_with(f"SERVICE <{listener.url}> {{ ?a ?b ?c }}"))
    assert result.status == "error" and result.failed_stage in ("parse", "validate", "assemble", "execute")
    assert "SERVICE" in " ".join(e.message for e in result.errors)
    assert listener.connections == 0


def services(url: str) -> st.SearchStrategy[str]:
    return st.sampled_from([f"SERVICE <{url}>", f"SERVICE SILENT <{url}>", f"service <{url}>", "SERVICE ?svc",
                            f"SeRvIcE <{url}>", "\\u0053ERVICE <" + url + ">",
                            "SERVICE <" + url.replace("127.0.0.1", "localhost") + ">"])


@given(data=st.data())
def test_generated_service_fragments_never_connect(engine, listener, data) -> None:
    token = st.sampled_from(ESCAPED_NAMES + [n for n in NOISE if "\n" not in n])
    fragment = " ".join([*data.draw(st.lists(token, max_size=3)), data.draw(services(listener.url)),
                         "{ ?a ?b ?c", *data.draw(st.lists(token, max_size=2)), "}"])
    frontend = data.draw(st.sampled_from(sorted(SOURCES)))
    result = compile_through(engine, frontend, desq_with(fragment))
    assert result.failed_stage != "internal", result.errors
    assert listener.connections == 0, (frontend, fragment)
