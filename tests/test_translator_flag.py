"""`--translator NAME` chooses the translator, `--backend NAME` only the model translator's provider (alone it implies
`--translator model`); the old `--backend explore|cases|replay` and `KBQA_BACKEND=replay` still work with a one-line
deprecation note; the same split in the settings (KBQA_TRANSLATOR / KBQA_BACKEND) and in `kbqa serve`'s settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_server_api import CAPITAL, QUESTION

import kbqa.settings
from kb_dumps.stage_errors import KBQAError
from kbqa.settings import ServerSettings, get_translator_settings


@pytest.fixture(autouse=True)
def fresh_notes(monkeypatch: pytest.MonkeyPatch) -> None:
    # the note is printed once per process; each test starts as a fresh process would
    monkeypatch.setattr(kbqa.settings, "_noted", set())
    for name in ("KBQA_TRANSLATOR", "KBQA_BACKEND"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def replay(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("flag") / "outputs.jsonl"
    path.write_text(json.dumps({"id": "q1", "question": QUESTION, "output": CAPITAL}) + "\n", encoding="utf-8")
    return path


def test_translator_flag_answers_without_a_note(run_cli, tiny_store: Path, replay: Path) -> None:
    code, out, err = run_cli("ask", QUESTION, "--store", tiny_store, "--translator", "replay", "--replay", replay,
                             "--id", "q1", "--format", "json")
    assert code == 0, err
    result = json.loads(out)
    assert result["status"] == "ok" and result["translation"]["backend"] == "replay"
    assert "deprecated" not in err


def test_old_backend_spelling_still_answers_with_one_note(run_cli, tiny_store: Path, replay: Path) -> None:
    args = ("ask", QUESTION, "--store", tiny_store, "--backend", "replay", "--replay", replay, "--id", "q1")
    code, out, err = run_cli(*args, "--format", "json")
    assert code == 0, err
    assert json.loads(out)["translation"]["backend"] == "replay"
    notes = [line for line in err.splitlines() if "deprecated" in line]
    assert notes == ["note: --backend replay is deprecated; use --translator replay (--backend names a model "
                     "provider: llama-cpp, openai, hf)"]


def test_environment_variables_choose_translator_and_provider(monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("KBQA_TRANSLATOR", "cases")
    assert (get_translator_settings().translator, get_translator_settings().backend) == ("cases", "")
    monkeypatch.delenv("KBQA_TRANSLATOR")
    monkeypatch.setenv("KBQA_BACKEND", "openai")  # a provider alone: the model translator
    assert (get_translator_settings().translator, get_translator_settings().backend) == ("model", "openai")
    # a flag wins over the environment: --translator explore with KBQA_BACKEND=openai keeps explore
    assert get_translator_settings(translator="explore").translator == "explore"
    monkeypatch.setenv("KBQA_BACKEND", "replay")  # the old spelling: a translator name as the backend
    settings = get_translator_settings()
    assert (settings.translator, settings.backend) == ("replay", "")
    assert "KBQA_BACKEND / backend replay is deprecated" in capsys.readouterr().err


def test_a_model_provider_flag_implies_the_model_translator(run_cli) -> None:
    from kbqa.cli import build_parser
    from kbqa.commands.common import translator_choice

    parser = build_parser()
    assert translator_choice(parser.parse_args(["ask", "q", "--backend", "openai"])) == ("model", "openai")
    assert translator_choice(parser.parse_args(["ask", "q", "--translator", "cases"])) == ("cases", None)
    assert translator_choice(parser.parse_args(["ask", "q"])) == (None, None)
    with pytest.raises(SystemExit):  # a provider is not a translator
        parser.parse_args(["ask", "q", "--translator", "openai"])


def test_server_settings_split_the_same_way() -> None:
    assert (ServerSettings(backend="openai").translator, ServerSettings(backend="openai").backend) == \
        ("model", "openai")
    assert (ServerSettings(backend="cases").translator, ServerSettings(backend="cases").backend) == ("cases", None)
    with pytest.raises(KBQAError) as e:
        get_translator_settings(translator="model")  # a model translator needs its provider
    assert e.value.info.stage == "usage" and "--backend" in e.value.info.message
