"""Registries are the one list of front-ends, translators and backends: a registered dummy shows up everywhere."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kb_dumps.stage_errors import KBQAError
from kbqa.backends import BACKENDS
from kbqa.frontends import FRONTENDS
from kbqa.pipeline import Engine
from kbqa.server import ServerSettings, create_app
from kbqa.settings import get_translator_settings
from kbqa.translators import TRANSLATORS, translator_names
from kbqa.translators.base import TranslationResult, Translator

# Guessed URIs: an engine without a store writes the query with them, unchecked.
ATLANTIS = (Path(__file__).parent / "fixtures" / "desq" / "atlantis_guessed.desq").read_text(encoding="utf-8")


class EchoTranslator(Translator):
    """Answers every question with the Atlantis DeSQ text."""

    name = "echo-dummy"

    def translate(self, question: str, frontend: str = "desq", *, qid: str | None = None) -> TranslationResult:
        return TranslationResult(ATLANTIS, frontend, self.name)


def make_echo(settings: object, store_dir: Path | None, **kw: object) -> EchoTranslator:
    return EchoTranslator()


@pytest.fixture
def dummy() -> Iterator[str]:
    TRANSLATORS.add("echo-dummy", "a test translator that always writes the Atlantis example", make_echo)
    FRONTENDS.add("desq-dummy", "DeSQ under another name (a test front-end)", "kbqa.frontends.desq:frontend")
    yield "echo-dummy"
    TRANSLATORS.remove("echo-dummy")
    FRONTENDS.remove("desq-dummy")


def test_the_built_in_names() -> None:
    assert FRONTENDS.names() == ("desq", "qcompiler", "pyrag")
    assert BACKENDS.names() == ("openai", "llama-cpp", "hf")
    assert translator_names()[:1] == ("cases",) and translator_names()[-3:] == BACKENDS.names()
    assert "model" in TRANSLATORS.names() and not set(BACKENDS.names()) & set(TRANSLATORS.names())
    assert {"cases", "replay"} <= set(TRANSLATORS.names())
    assert all(description for _, description in FRONTENDS.table() + TRANSLATORS.table() + BACKENDS.table())


def test_a_registered_translator_is_in_the_help_the_settings_and_the_schema(dummy: str, run_cli,  # noqa: ANN001
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    from kbqa.cli import main

    with pytest.raises(SystemExit) as e:
        main(["ask", "--help"])
    assert e.value.code == 0
    # argparse wraps lines anywhere, also after a hyphen ("echo-" / "dummy")
    help_text = " ".join(capsys.readouterr().out.split()).replace("- ", "-")
    assert "echo-dummy" in help_text and "always writes the Atlantis example" in help_text
    assert "desq-dummy" in help_text  # --frontend choices
    assert get_translator_settings(translator=dummy).translator == dummy  # the settings accept it
    schema = create_app(ServerSettings()).openapi()
    assert "echo-dummy" in schema["components"]["schemas"]["Health"]["properties"]["translator"]["examples"]
    assert "desq-dummy" in schema["components"]["schemas"]["CompileRequest"]["properties"]["frontend"]["enum"]


def test_the_engine_builds_a_registered_translator_from_its_settings(dummy: str) -> None:
    with Engine(None, settings=get_translator_settings(translator=dummy)) as engine:
        result = engine.ask("What is the capital of Atlantis?", frontend="desq-dummy", execute=False)
    assert result.status == "generated" and result.frontend == "desq-dummy", result.errors
    assert result.steps[0].stage == "translate" and result.translation["backend"] == "echo-dummy"


def test_unknown_names_are_usage_errors() -> None:
    with pytest.raises(KBQAError) as e:
        get_translator_settings(translator="no-such-translator")
    assert e.value.info.stage == "usage" and all(n in e.value.info.message for n in TRANSLATORS.names())
    with pytest.raises(KBQAError) as e:
        get_translator_settings(backend="no-such-backend")
    assert e.value.info.stage == "usage" and "openai, llama-cpp, hf" in e.value.info.message
    with pytest.raises(KBQAError) as e:  # the model translator without a provider
        get_translator_settings(translator="model")
    assert e.value.info.stage == "usage" and "needs a backend" in e.value.info.message
    with pytest.raises(KBQAError) as e:
        BACKENDS.get("no-such-backend")
    assert "openai, llama-cpp, hf" in e.value.info.message
    with Engine(None) as engine:
        result = engine.compile(ATLANTIS, frontend="no-such-frontend")
    assert result.failed_stage == "parse" and "desq, qcompiler, pyrag" in result.errors[0].message


def test_a_model_backend_name_makes_a_model_translator() -> None:
    settings = get_translator_settings(backend="openai", endpoint="http://127.0.0.1:9/v1")
    translator = TRANSLATORS.get(settings.translator).make(settings, None)
    assert translator.name == "openai" and translator.check_frontend("pyrag") is None
