"""Replay translator, prompts, settings, and `kbqa ask` exit codes through replayed outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbqa.backends.base import GenerateResult
from kbqa.settings import TranslatorSettings
from kbqa.translators.base import TranslateError, TranslationResult
from kbqa.translators.prompts import build_prompt
from kbqa.translators.replay import ReplayTranslator, write_replay_line

GOOD = """FORMAT desq/1
ATOMIC CONSTRAINTS
AC1: we need the place of birth of Sasha Vujačić
AC2: Sasha Vujačić has a place of birth
FRAGMENTS
AC1 => SELECT ?var1
AC2 => [sasha] [place_of_birth] ?var1 .
GROUNDING
[sasha] entity | Sasha Vujačić | | wd:Q318926
[place_of_birth] property | place of birth | | wdt:P19
"""
# A well-formed query the store has no answer for (Maribor was born nowhere).
EMPTY = GOOD.replace("wd:Q318926", "wd:Q1010").replace("Sasha Vujačić", "Maribor")


@pytest.fixture
def replay_file(tmp_path: Path) -> Path:
    path = tmp_path / "outputs.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        write_replay_line(f, "q1", "where was sasha vujačić born", TranslationResult(GOOD, model="m", tokens_in=10,
                                                                                     tokens_out=5, seconds=0.5))
        f.write(json.dumps({"id": "q2", "output": EMPTY}) + "\n")
        f.write(json.dumps({"id": "q3", "output": "not desq at all"}) + "\n")
    return path


def test_replay_by_id_and_by_question(replay_file):
    tr = ReplayTranslator(replay_file)
    res = tr.translate("anything", qid="q1")
    assert res.text == GOOD and res.tokens_in == 10 and res.tokens_out == 5 and res.model == "m"
    assert tr.translate("Where was Sasha Vujačić born").text == GOOD  # recorded question text, normalised
    assert len(tr) == 3


def test_replay_missing_id_is_a_translate_error(replay_file):
    with pytest.raises(TranslateError) as e:
        ReplayTranslator(replay_file).translate("q", qid="nope")
    assert e.value.info.stage == "translate" and e.value.info.qid == "nope" and "nope" in e.value.info.message


def test_replay_bad_line_names_the_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "a", "output": "x"}\n{"id": "b"}\n', encoding="utf-8")
    with pytest.raises(TranslateError) as e:
        ReplayTranslator(path)
    assert e.value.info.line == 2 and e.value.info.stage == "translate"
    with pytest.raises(TranslateError):
        ReplayTranslator(tmp_path / "absent.jsonl")


def test_results_round_trip_as_json():
    g = GenerateResult("t", 3, 4, 0.1, "openai", "m", "stop", False, 2)
    assert GenerateResult.from_dict(json.loads(json.dumps(g.to_dict()))) == g
    t = TranslationResult("t", "desq", "cases", "m", 0, 0, 0.01, {"case": "x"})
    assert TranslationResult.from_dict(json.loads(json.dumps(t.to_dict()))) == t


def test_prompt_has_format_examples_and_question():
    p = build_prompt("who directed Titanic?", "desq", [("nearest q", "NEAR"), ("second q", "SECOND")])
    msgs = p.messages()
    assert msgs[0]["role"] == "system" and "FRAGMENTS" in msgs[0]["content"]
    assert [m["content"] for m in msgs[1:5]] == ["Question: second q", "SECOND", "Question: nearest q", "NEAR"]
    assert msgs[-1] == {"role": "user", "content": "Question: who directed Titanic?"}
    assert p.text().rstrip().endswith("Question: who directed Titanic?")
    with pytest.raises(ValueError):
        build_prompt("q", "sparql")


def test_settings_from_environment_and_file(tmp_path, monkeypatch):
    cfg = tmp_path / "kbqa.toml"
    cfg.write_text('[models]\nbackend = "openai"\nmodel = "from-file"\nretries = 5\n', encoding="utf-8")
    monkeypatch.setenv("KBQA_CONFIG", str(cfg))
    monkeypatch.setenv("KBQA_MODEL", "from-env")
    monkeypatch.setenv("MY_KEY", "sk-123")
    s = TranslatorSettings(api_key_env="MY_KEY")
    assert (s.backend, s.model, s.retries, s.api_key()) == ("openai", "from-env", 5, "sk-123")
    assert s.translator == "model"  # a provider alone implies the model translator
    monkeypatch.delenv("KBQA_CONFIG")
    assert (TranslatorSettings().translator, TranslatorSettings().backend) == ("explore", "")


def test_cli_ask_exit_codes(run_cli, wikidata_mini_store, replay_file):
    base = ("--store", wikidata_mini_store, "--translator", "replay", "--replay", replay_file)
    code, out, err = run_cli("ask", "where was sasha vujačić born", *base, "--id", "q1")
    assert code == 0, err
    assert "wdt:P19" in out and "Maribor" in out and "translate" in out
    code, out, _ = run_cli("ask", "where was maribor born", *base, "--id", "q2", "--format", "json")
    assert code == 1 and json.loads(out)["status"] == "empty"
    code, _, err = run_cli("ask", "q", *base, "--id", "missing")
    assert code == 4 and "[translate]" in err and "missing" in err
    code, _, err = run_cli("ask", "q", *base, "--id", "q3")
    assert code == 3 and "parse" in err
