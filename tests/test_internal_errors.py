"""A bug of ours is stage `internal`: never repaired, never charged to the model, exit 4, one line on stderr.

The bug is injected by monkeypatching a piece of the DeSQ parser to raise, as a real bug would; the model is
a scripted backend that would repair anything it is sent back.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import kbqa.frontends.desq as desq
from eval.attribution import attribute
from kb_dumps.stage_errors import EXIT_BACKEND, REPAIRABLE, Stage
from kbqa.backends.base import Backend, GenerateResult
from kbqa.frontends.desq import parse_desq
from kbqa.pipeline import Engine
from kbqa.translators.model import ModelTranslator

ATLANTIS = (Path(__file__).parent / "fixtures" / "desq_real" / "capital_atlantis.desq").read_text(encoding="utf-8")


class CountingBackend(Backend):
    """Always answers the same DeSQ text; counts the calls (a repair round would be a second call)."""

    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    def generate(self, prompt: str | list[dict[str, str]], grammar: str | None = None, max_tokens: int = 512,
                 temperature: float = 0.0, stop: list[str] | None = None) -> GenerateResult:
        self.calls += 1
        return GenerateResult(ATLANTIS, backend=self.name)


@pytest.fixture
def parser_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kw: object) -> None:
        raise ZeroDivisionError("injected bug")

    monkeypatch.setattr(desq, "_build", broken)


def test_the_atlantis_text_parses_without_the_bug() -> None:
    assert parse_desq(ATLANTIS).ok


@pytest.mark.usefixtures("parser_bug")
def test_a_parser_bug_is_internal_and_never_sent_back_to_the_model(caplog: pytest.LogCaptureFixture) -> None:
    backend = CountingBackend()
    with Engine(None, translator=ModelTranslator(backend)) as engine, caplog.at_level("INFO", logger="kbqa"):
        result = engine.ask("What is the capital of Atlantis?", execute=False)
    assert result.failed_stage == Stage.INTERNAL and result.status == "error"
    assert backend.calls == 1  # no repair round
    assert result.repairs is not None and result.repairs["stopped"] == "not repairable"
    assert [e.stage for e in result.errors] == ["internal"]
    assert "ZeroDivisionError: injected bug" in result.errors[0].message and "report" in result.errors[0].message
    assert result.exit_code == EXIT_BACKEND == 4
    assert Stage.INTERNAL not in REPAIRABLE and not Stage.INTERNAL.repairable
    # the traceback is logged (shown under `kbqa -v`), not put in the Result
    assert any(r.exc_info and r.exc_info[0] is ZeroDivisionError for r in caplog.records)
    assert "Traceback" not in str(result.to_dict())
    # attribution charges it to `internal`, not to a stage of the model's
    got = attribute(correct=False, stage_errors=[e.to_dict() for e in result.errors])
    assert got is not None and got.stage == "internal"


@pytest.mark.usefixtures("parser_bug")
def test_cli_prints_one_line_and_exits_4(run_cli, tmp_path: Path) -> None:  # noqa: ANN001 - the conftest fixture
    source = tmp_path / "atlantis.desq"
    source.write_text(ATLANTIS, encoding="utf-8")
    code, out, err = run_cli("compile", source, "--no-execute")
    assert code == 4
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: [internal] ") and "please report it" in lines[0]
    assert "status: error (stage internal)" in out


def test_a_front_end_that_raises_is_internal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the parsers' own guard: a front-end factory whose parser raises is caught by the engine."""
    import kbqa.frontends.desq as module

    def raising(engine: Engine):  # noqa: ANN202 - the factory's parser
        def parse(text: str) -> None:
            raise KeyError("boom")

        return parse

    monkeypatch.setattr(module, "frontend", raising)
    with Engine(None) as engine:
        result = engine.compile(ATLANTIS, execute=False)
    assert result.failed_stage == "internal" and result.exit_code == 4
    assert result.steps[0].stage == "parse" and not result.steps[0].ok


def test_an_exception_escaping_any_verb_is_one_internal_line(run_cli, monkeypatch: pytest.MonkeyPatch,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    """cli.main's catch-all: not a traceback, not a KBQAError of the input: stage internal, the hint, exit 4;
    the traceback is logged (shown under -v)."""
    import kbqa.commands.sparql as sparql_verb

    def broken(args: object) -> int:
        raise KeyError("injected bug in a verb")

    monkeypatch.setattr(sparql_verb, "run", broken)
    code, out, err = run_cli("sparql", "ASK {}")
    assert code == EXIT_BACKEND and out == ""
    assert err.count("\n") == 1 and err.startswith("error: [internal] internal error in kbqa sparql (KeyError: ")
    assert "please report it" in err and "kbqa -v shows the traceback" in err and "Traceback" not in err
    with caplog.at_level("INFO", logger="kbqa"):
        code, _, err = run_cli("-v", "sparql", "ASK {}")
    assert code == EXIT_BACKEND and "[internal]" in err
    assert any(r.exc_info and r.exc_info[0] is KeyError for r in caplog.records)
