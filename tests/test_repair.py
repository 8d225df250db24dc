"""The self-repair loop: a scripted backend replays a wrong then a right output; the loop converges and records both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kb_dumps.stage_errors import ErrorInfo
from kbqa.backends.base import Backend, GenerateResult
from kbqa.frontends.qcompiler import leaf_repairer, leaf_translator, parse_qcompiler
from kbqa.pipeline import Engine
from kbqa.repair import RepairOutcome, RepairRound, can_repair, compile_with_repair, repair_loop
from kbqa.translators.model import ModelTranslator

LEAVES = json.loads((Path(__file__).parent / "fixtures" / "multihop" / "leaves.json").read_text(encoding="utf-8"))
RIGHT = LEAVES["Who directed Titanic?"]
WRONG = RIGHT.replace("AC2 => [titanic] [director] ?var1 .", "AC2 => [titanic] [directed] ?var1 .")


class ScriptedBackend(Backend):
    """Replays fixed outputs in order and keeps every prompt it was given."""

    name = "scripted"

    def __init__(self, outputs: list[str]):
        self.outputs = list(outputs)
        self.prompts: list = []

    def generate(self, prompt, grammar=None, max_tokens=512, temperature=0.0, stop=None) -> GenerateResult:  # noqa: ANN001
        self.prompts.append(prompt)
        return GenerateResult(self.outputs.pop(0), tokens_in=100, tokens_out=40, backend=self.name)


@pytest.fixture(scope="module")
def engine(wikidata_mini_store: Path):
    with Engine(wikidata_mini_store) as e:
        yield e


def test_wrong_then_right_converges_and_records_both_rounds(engine: Engine) -> None:
    backend = ScriptedBackend([WRONG, RIGHT])
    translator = ModelTranslator(backend)
    assert can_repair(translator)
    first = translator.translate("Who directed Titanic?", "desq")
    result = compile_with_repair(engine.compile, "Who directed Titanic?", first, translator, "desq", rounds=2)
    assert result.status == "ok"
    assert [r[0].value for r in result.answers.rows] == ["http://www.wikidata.org/entity/Q42574"]
    repair_steps = [s for s in result.steps if s.stage == "repair"]
    assert len(repair_steps) == 1 and repair_steps[0].ok
    assert any("[directed]" in e.message for e in repair_steps[0].errors)  # what was sent back
    # the model saw its previous output and the structured errors
    last = backend.prompts[-1]
    assert last[-2] == {"role": "assistant", "content": WRONG.strip()}
    assert "[directed]" in last[-1]["content"] and "problems" in last[-1]["content"]


def test_loop_records_each_round_and_stops_after_n() -> None:
    seen: list[str] = []

    def check(text: str) -> tuple[str, str | None, list[ErrorInfo]]:
        seen.append(text)
        return text, None if text == "good" else "parse", [] if text == "good" else [ErrorInfo("parse", f"bad {text}")]

    outputs = iter(["bad2", "good"])
    outcome = repair_loop("bad1", check, lambda prev, errs: next(outputs), rounds=2)
    assert outcome.converged and outcome.repairs == 2 and seen == ["bad1", "bad2", "good"]
    assert [r.ok for r in outcome.rounds] == [False, False, True]
    assert [s.ok for s in outcome.steps()] == [False, True]
    data = json.loads(json.dumps(outcome.to_dict()))
    assert [RepairRound.from_dict(r).text for r in data["rounds"]] == ["bad1", "bad2", "good"]

    outputs = iter(["bad2", "bad3", "good"])
    stopped = repair_loop("bad1", check, lambda prev, errs: next(outputs), rounds=1)
    assert not stopped.converged and stopped.repairs == 1 and stopped.stopped == "no rounds left"


def test_unrepairable_stages_and_translators_are_not_retried() -> None:
    calls: list[int] = []
    outcome = repair_loop("x", lambda t: (t, "empty", [ErrorInfo("empty", "no answer")]),
                          lambda p, e: calls.append(1) or "y")
    assert isinstance(outcome, RepairOutcome) and outcome.stopped == "not repairable" and calls == []
    outcome = repair_loop("x", lambda t: (t, "parse", [ErrorInfo("parse", "bad")]), None)
    assert outcome.stopped == "no repair" and outcome.repairs == 0


def test_qcompiler_leaf_is_repaired_through_the_translator(engine: Engine) -> None:
    backend = ScriptedBackend([RIGHT, "ATOMIC CONSTRAINTS\nAC1: nothing", LEAVES["Where was {director} born?"]])
    translator = ModelTranslator(backend)
    # leaves run one at a time here so the scripted outputs meet them in order
    result = parse_qcompiler("Who directed Titanic? * Where was {director} born?", leaf_translator(translator),
                             repair=leaf_repairer(translator), max_workers=1)
    assert result.ok, result.errors
    assert [leaf.calls for leaf in result.leaves] == [1, 2]
    assert [r["ok"] for r in result.leaves[1].repairs] == [False, True]
    out = engine.assembler.assemble(result.plan)
    assert out.status in ("ok", "empty")
