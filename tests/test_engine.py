"""Engine (the Python API) and `kbqa compile` (the CLI): results as plain data, exit codes, time budgets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kb_dumps.stage_errors import KBQAError, StoreError
from kbqa.pipeline import Engine, Result

FIXTURES = Path(__file__).parent / "fixtures" / "desq_real"

# The capital of Atlantis, the shared DeSQ example over assemble_kb.nt (the tiny store).
CAPITAL = (Path(__file__).parent / "fixtures" / "desq_real" / "capital_atlantis.desq").read_text(encoding="utf-8")

NO_POPULATION = """ATOMIC CONSTRAINTS
AC1: we need the population of the capital of Smallia
AC2: Smallia has a capital
AC3: the capital has a population above a billion
FRAGMENTS
AC1 => SELECT ?var2
AC2 => [smallia] [capital] ?var1 .
AC3 => ?var1 [population] ?var2 . FILTER(?var2 > 1000000000)
GROUNDING
[smallia] entity | Smallia | a small country | wd:Q3
[capital] property | capital | seat of government | wdt:P36
[population] property | population | number of inhabitants | wdt:P1082
"""

# A DeSQ text that fails validation: a placeholder with no grounding line, a grounding line no fragment uses.
BROKEN = (Path(__file__).parent / "fixtures" / "desq_invalid" / "unknown_placeholder.desq").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def engine(tiny_store: Path):
    with Engine(tiny_store) as e:
        yield e


def test_compile_returns_one_plain_data_result(engine: Engine) -> None:
    result = engine.compile(CAPITAL)
    assert result.status == "ok" and result.exit_code == 0
    assert [s.stage for s in result.steps] == ["parse", "validate", "ground", "assemble", "execute"]
    assert all(s.ok and s.seconds >= 0 for s in result.steps)
    assert result.plan is not None and result.plan["node"] == "query"
    assert [c["id"] for c in result.constraints] == ["AC1", "AC2"]
    assert result.answers.rows[0][0].label == "Poseidonia"
    assert {g.name for g in result.grounding} == {"atlantis", "capital"}
    data = json.loads(json.dumps(result.to_dict()))
    assert Result.from_dict(data).to_dict() == result.to_dict()
    assert engine.answer(CAPITAL).answers.to_dict() == result.answers.to_dict()


def test_parse_and_validate_errors_are_all_reported(engine: Engine) -> None:
    result = engine.compile(BROKEN)
    assert result.status == "error" and result.failed_stage == "validate" and result.exit_code == 3
    messages = " ".join(e.message for e in result.errors)
    assert "[unknown]" in messages and "[unused]" in messages and "AC2" in messages
    assert result.sparql is None and result.answers is None
    garbage = engine.compile("x" * 100_000)
    assert garbage.status == "error" and garbage.failed_stage == "parse"
    assert engine.compile(CAPITAL, frontend="klingon").failed_stage == "parse"


def test_empty_answer_carries_the_diagnosis(engine: Engine) -> None:
    result = engine.compile(NO_POPULATION)
    assert result.status == "empty" and result.exit_code == 1
    assert result.diagnosis is not None and result.diagnosis.ac == "AC3"
    assert result.steps[-1].stage == "empty" and not result.steps[-1].ok


def test_generate_only_without_a_store() -> None:
    text = CAPITAL.replace("legendary island country", "island | wd:Q1").replace(
        "seat of government of a country", "seat | wdt:P36")
    result = Engine(None).compile(text, execute=False)
    assert result.status == "generated" and result.exit_code == 0
    assert "wd:Q1 wdt:P36" in result.sparql and result.answers is None


def test_missing_store_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError):
        Engine(tmp_path / "nowhere")
    with pytest.raises(KBQAError):
        Engine(None).ask("What is the capital of Atlantis?")


SLOW = """ATOMIC CONSTRAINTS
AC1: we need the number of pairs of statements
AC2: a thing has a value
AC3: another thing has a value
AC4: the first value sorts before the second
FRAGMENTS
AC1 => SELECT (COUNT(?var1) AS ?n)
AC2 => ?var1 ?var2 ?var3 .
AC3 => ?var4 ?var5 ?var6 .
AC4 => FILTER(STR(?var3) < STR(?var6))
GROUNDING
"""

FAST = """ATOMIC CONSTRAINTS
AC1: we need the languages
AC2: Pakistan has an official language
FRAGMENTS
AC1 => SELECT DISTINCT ?var1
AC2 => [pakistan] [official_language] ?var1 .
GROUNDING
[pakistan] entity | Pakistan | country in South Asia | wd:Q843
[official_language] property | official language | language officially designated by a country | wdt:P37
"""


def test_a_slow_query_is_stopped_and_the_next_one_answers(wikidata_mini_store: Path) -> None:
    # wikidata-mini has no grounding index here: guessed URIs are confirmed by the label memory.
    with Engine(wikidata_mini_store, timeout_s=1.0) as engine:
        slow = engine.compile(SLOW)
        assert slow.status == "error" and slow.failed_stage == "execute" and slow.timed_out
        assert slow.exit_code == 4
        assert any("time budget" in e.message for e in slow.errors)
        fast = engine.compile(FAST)
        assert fast.status == "ok", fast.errors
        assert sorted(v.label for r in fast.answers.rows for v in r) == ["English", "Urdu"]


# ---- the CLI ---------------------------------------------------------------------------------------


def test_cli_compile_exit_codes(run_cli, tiny_store: Path, tmp_path: Path) -> None:  # noqa: ANN001
    ok = tmp_path / "ok.desq"
    ok.write_text(CAPITAL, encoding="utf-8")
    code, out, _ = run_cli("compile", ok, "--store", tiny_store)
    assert code == 0 and "wd:Q1 wdt:P36 ?var1" in out and "Poseidonia" in out and "steps:" in out
    code, out, _ = run_cli("compile", ok, "--store", tiny_store, "--format", "json")
    assert code == 0 and json.loads(out)["answers"]["rows"][0][0]["label"] == "Poseidonia"

    empty = tmp_path / "empty.desq"
    empty.write_text(NO_POPULATION, encoding="utf-8")
    code, out, err = run_cli("compile", empty, "--store", tiny_store)
    assert code == 1 and "diagnosis:" in out and "AC3" in err

    broken = tmp_path / "broken.desq"
    broken.write_text(BROKEN, encoding="utf-8")
    code, _, err = run_cli("compile", broken, "--store", tiny_store)
    lines = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert code == 3 and len(lines) >= 3 and any("AC2" in ln for ln in lines)
    assert any(f"{broken}:" in ln for ln in lines)  # file:line where the parser knows the line

    code, _, _ = run_cli("compile", tmp_path / "missing.desq", "--store", tiny_store)
    assert code == 3
    code, _, err = run_cli("compile", ok, "--store", tmp_path / "no-store")
    assert code == 4 and "no store" in err


def test_cli_no_execute_prints_a_query(run_cli, tmp_path: Path) -> None:  # noqa: ANN001
    text = CAPITAL.replace("legendary island country", "island | wd:Q1").replace(
        "seat of government of a country", "seat | wdt:P36")
    f = tmp_path / "q.desq"
    f.write_text(text, encoding="utf-8")
    code, out, _ = run_cli("compile", f, "--no-execute", "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["status"] == "generated" and "wd:Q1 wdt:P36" in data["sparql"]
