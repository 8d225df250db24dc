"""A model as chooser for `explore` (kbqa/translators/explore/rank/chooser.py): the real SmolLM2 GGUF picks among the
zoo's top candidates through llama.cpp with a one-token grammar; a reply out of range, a reply that is no number
and a failing model all keep the ranker's pick and say so; the setting and the CLI flag wire it in.
(Needs llama-cpp-python and the SmolLM2 weights, like tests/test_models_llama.py: the `smollm2` fixture.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kb_dumps.stage_errors import KBQAError
from kbqa.backends.base import Backend, GenerateResult
from kbqa.pipeline import Engine
from kbqa.settings import get_translator_settings
from kbqa.translators.base import TranslateError
from kbqa.translators.explore import ExploreTranslator, make
from kbqa.translators.explore.rank.chooser import Chooser, choice_grammar, parse_choice

ZOO = Path(__file__).resolve().parent / "fixtures" / "explore" / "zoo.ttl"
EX = "http://example.org/zoo/"


@pytest.fixture(scope="module")
def zoo(ingest_dumps) -> Path:
    return ingest_dumps([ZOO], "zoo")


class Scripted(Backend):
    """A backend that answers a fixed reply (or fails), counting its calls."""

    name = "scripted"

    def __init__(self, reply: str | None):
        self.reply, self.calls = reply, 0

    def generate(self, prompt, grammar=None, max_tokens=512, temperature=0.0, stop=None) -> GenerateResult:
        self.calls += 1
        if self.reply is None:
            raise TranslateError("the model server at http://127.0.0.1:9/v1 did not answer (timeout)")
        return GenerateResult(self.reply, 10, 1, 0.01, self.name)


def _ask(zoo: Path, chooser: Chooser | None, question: str):
    with Engine(store=zoo) as engine:
        tr = ExploreTranslator(zoo, store=engine.store)
        tr.chooser = chooser
        engine.translator = tr
        return engine.ask(question)


@pytest.mark.parametrize(("reply", "k", "expected"), [
    ("3", 5, 3), (" 2.", 5, 2), ("5\n", 5, 5),
    ("7", 5, None), ("0", 5, None), ("12", 5, None),  # out of range
    ("two", 5, None), ("", 5, None), ("__import__('os').system('x')", 5, None), ("1+1", 2, 1),  # data, not code
])
def test_parse_choice(reply: str, k: int, expected: int | None) -> None:
    assert parse_choice(reply, k) == expected


def test_smollm2_picks_among_the_zoo_candidates(zoo: Path, smollm2) -> None:
    chooser = Chooser(smollm2, k=5)
    result = _ask(zoo, chooser, "Who keeps Leo?")
    assert result.ok, [e.message for e in result.errors]
    details = result.translation["details"]
    pick = details["chooser"]
    shown = details["candidates"]
    assert len(shown) >= 2 and pick["k"] == min(5, len(shown))
    assert pick["backend"] == "llama-cpp" and pick["ranker_pick"] == 1 and pick["seconds"] > 0
    assert pick["fallback"] is None and 1 <= pick["pick"] <= pick["k"] and pick["used"] == pick["pick"]
    assert pick["reply"] == str(pick["pick"])  # one token, one digit: the grammar
    # the DeSQ written is the chosen candidate's
    acs = [line.split(": ", 1)[1] for line in result.text.split("FRAGMENTS")[0].splitlines()[1:] if ": " in line]
    assert "; ".join(acs) == shown[pick["used"] - 1]["verbalised"]
    # the fixed instructions come first: the next question reuses their KV cache
    again = _ask(zoo, chooser, "Where does Pip live?").translation["details"]["chooser"]
    assert again["prefix_cached"] > 50 and again["fallback"] is None
    assert choice_grammar(5) == "root ::= [1-5]"


@pytest.mark.parametrize(("reply", "why"), [("7", "no number from 1 to"), ("the second one", "no number"),
                                            (None, "the model failed")])
def test_a_bad_reply_keeps_the_rankers_pick(zoo: Path, reply: str | None, why: str) -> None:
    plain = _ask(zoo, None, "Who keeps Leo?")
    backend = Scripted(reply)
    result = _ask(zoo, Chooser(backend, k=5), "Who keeps Leo?")
    pick = result.translation["details"]["chooser"]
    assert backend.calls == 1 and pick["used"] == 1 and pick["pick"] is None and why in pick["fallback"]
    assert result.ok and result.text == plain.text
    assert sorted(c.value for row in result.answers.rows for c in row) == [EX + "anna"]


def test_a_reply_in_range_is_used(zoo: Path) -> None:
    result = _ask(zoo, Chooser(Scripted("2"), k=3), "Who keeps Leo?")
    pick = result.translation["details"]["chooser"]
    assert pick["pick"] == 2 and pick["used"] == 2 and pick["k"] == 3 and pick["fallback"] is None
    assert "; ".join(line.split(": ", 1)[1] for line in result.text.split("FRAGMENTS")[0].splitlines()[1:]
                     if ": " in line) == result.translation["details"]["candidates"][1]["verbalised"]


def test_setting_and_cli_flag(zoo: Path, smollm2, run_cli) -> None:
    assert get_translator_settings(explore_chooser="none").explore_chooser == ""
    with pytest.raises(KBQAError):
        get_translator_settings(explore_chooser="gpt-9")
    with pytest.raises(KBQAError):
        get_translator_settings(explore_chooser="llama-cpp", explore_chooser_k=12)  # one digit: 2-9
    tr = make(get_translator_settings(explore_chooser="llama-cpp", model=smollm2.model, explore_chooser_k=3), zoo)
    try:
        assert tr.chooser is not None and tr.chooser.k == 3 and tr.chooser.backend.name == "llama-cpp"
    finally:
        tr.close()
    assert make(get_translator_settings(), zoo).chooser is None
    code, out, err = run_cli("ask", "Who keeps Leo?", "--store", zoo, "--explore-chooser", "llama-cpp",
                             "--model", smollm2.model, "--format", "json")
    assert code == 0, err
    pick = json.loads(out)["translation"]["details"]["chooser"]
    assert pick["backend"] == "llama-cpp" and 1 <= pick["used"] <= pick["k"]
