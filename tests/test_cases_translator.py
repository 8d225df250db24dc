"""The `cases` translator and the case bank on the real wikidata-mini store, with a small bank built here."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from eval.loaders import load_benchmark
from grounding.context import TripleChecker
from kbqa.frontends.desq import parse_desq
from kbqa.translators.base import TranslateError
from kbqa.translators.casebank import Case, CaseBank, bank_dir, question_key
from kbqa.translators.casebank_build import build_case_bank
from kbqa.translators.cases import CasesTranslator

WD, WDT = "http://www.wikidata.org/entity/", "http://www.wikidata.org/prop/direct/"
# Validation questions (never in the bank: it is built from train) whose relation the first 300 train
# questions hold: "Where was victor basa born" (P19), "Name a film directed by phil joanou" (P57).
# The two are read from the bundled validation file (never typed here: validation questions are for measuring).
VALID = Path(__file__).resolve().parents[1] / "eval" / "benchmarks" / "simplequestions-wikidata" / \
    "valid_answerable.txt.gz"


def _valid_question(subject: str) -> str:
    """The validation question about `subject` (the first column of the SimpleQuestions file)."""
    with gzip.open(VALID, "rt", encoding="utf-8") as f:
        return next(line.rstrip("\n").split("\t")[3] for line in f if line.startswith(subject + "\t"))


KNOWN = [(_valid_question("Q318926"), "Q318926", "P19"), (_valid_question("Q2568216"), "Q2568216", "P57")]
BORN = KNOWN[0][0]  # a "where was <person> born" question
EXCLUDED = "Where was victor basa born"


@pytest.fixture(scope="module")
def bank_folder(wikidata_mini_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bank") / "cases"
    stats = build_case_bank(wikidata_mini_store, ["simplequestions-train"], limit_per_set=300, folder=folder,
                            exclude_questions=["who is a musician born in detroit"], progress=False)
    assert stats.cases == 299 and stats.excluded == 1
    return folder


@pytest.fixture(scope="module")
def translator(wikidata_mini_store: Path, bank_folder: Path):
    tr = CasesTranslator(wikidata_mini_store, bank=CaseBank.load(bank_folder))
    yield tr
    tr.close()


def _grounding(text: str) -> dict[str, str | None]:
    parsed = parse_desq(text)
    assert parsed.ok, parsed.errors
    return {g.kind + ":" + g.name: g.uri for g in parsed.grounding}


@pytest.mark.parametrize("question,entity,prop", KNOWN)
def test_known_questions_get_the_gold_entity_and_property(translator, question, entity, prop):
    res = translator.translate(question)
    uris = set(_grounding(res.text).values())
    assert WD + entity in uris and WDT + prop in uris
    assert res.backend == "cases" and res.tokens_in == 0 and res.seconds > 0
    # the slot was re-filled and re-labelled: the case's own entity is gone from the text
    assert res.details["case_question"].lower() not in res.text.lower()
    assert all(f["kb"] for f in res.details["fills"].values())


def test_the_mention_is_masked_before_the_structure_vote(translator):
    res = translator.translate(BORN)
    assert "where was something born" in res.details["masked"]


def test_an_excluded_question_is_never_in_the_bank(bank_folder):
    bank = CaseBank.load(bank_folder)
    assert question_key("who is a musician born in detroit") not in {question_key(c.question) for c in bank.cases}
    hits = bank.search(EXCLUDED, 3, exclude_questions={question_key(EXCLUDED)})
    assert hits and all(question_key(h.case.question) != question_key(EXCLUDED) for h in hits)


def test_bank_is_plain_data_and_round_trips(bank_folder):
    lines = (bank_folder / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    first = Case.from_dict(json.loads(lines[0]))
    assert Case.from_dict(json.loads(json.dumps(first.to_dict()))) == first
    assert parse_desq(first.desq).ok and first.masked != first.question
    meta = json.loads((bank_folder / "meta.json").read_text(encoding="utf-8"))
    assert meta["count"] == len(lines) and meta["sets"] == ["simplequestions-train"]
    assert not list(bank_folder.glob("*.pkl")) and not list(bank_folder.glob("*.pickle"))


def test_triple_checker_confirms_only_what_the_store_has(wikidata_mini_store):
    checker = TripleChecker(wikidata_mini_store)
    try:
        wanted = {(WD + "Q318926", WDT + "P19", "subject"), (WD + "Q318926", WDT + "P57", "subject"),
                  (WD + "Q1010", WDT + "P19", "object")}
        assert checker.check(wanted) == {(WD + "Q318926", WDT + "P19", "subject"), (WD + "Q1010", WDT + "P19", "object")}
    finally:
        checker.close()


def test_missing_bank_is_a_clear_translate_error(wikidata_mini_store, tmp_path):
    with pytest.raises(TranslateError) as e:
        CasesTranslator(wikidata_mini_store, bank=CaseBank.load(tmp_path / "nothing"))
    assert e.value.info.stage == "translate" and "kbqa cases build" in e.value.info.message


def test_ask_puts_the_translation_step_first(wikidata_mini_store, translator):
    from kbqa.pipeline import Engine

    with Engine(wikidata_mini_store, translator=translator) as engine:
        result = engine.ask(BORN)
    assert result.ok and result.steps[0].stage == "translate" and result.steps[0].ok
    assert "sasha" in result.steps[0].detail.lower()
    assert WD + "Q1010" in {v.value for row in result.answers.rows for v in row if v}


@pytest.fixture(scope="module")
def bestiary_copy(bestiary_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private copy of the bestiary store: `kbqa cases build` writes its bank next to the store."""
    dest = tmp_path_factory.mktemp("bestiary-copy") / "bestiary"
    shutil.copytree(bestiary_store, dest, symlinks=True)
    return dest


def test_cli_cases_build_search_and_ask(run_cli, bestiary_copy, tmp_path):
    records = load_benchmark("bestiary", check_syntax=False)
    held_out = records[0].question
    excl = tmp_path / "exclude.txt"
    excl.write_text(held_out + "\n", encoding="utf-8")
    # BESTIARY named explicitly: the generic profile's default bank is Spider4SPARQL train (test_casebank_generic.py)
    code, out, err = run_cli("cases", "build", "--store", bestiary_copy, "--sets", "bestiary", "--exclude-questions",
                             excl, "--no-progress", "--format", "json")
    assert code == 0, err
    stats = json.loads(out)
    assert stats["sets"] == ["bestiary"] and stats["excluded"] == 1 and stats["cases"] > 50
    assert CaseBank.exists(bank_dir(bestiary_copy))
    code, out, _ = run_cli("cases", "search", held_out, "--store", bestiary_copy, "--format", "json")
    assert code == 0 and question_key(held_out) not in {question_key(h["question"]) for h in json.loads(out)}
    code, out, err = run_cli("ask", "how many creatures have chaotic good alignment?", "--store", bestiary_copy,
                             "--format", "json")
    result = json.loads(out)
    assert result["steps"][0]["stage"] == "translate" and result["steps"][0]["ok"], err
    assert "chaoticGood" in result["text"] and code == result["exit_code"]
