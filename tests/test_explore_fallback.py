"""`explore`'s case fallback where the store lacks the facts: the nearest case's structure with every slot —
property, sort direction, entity — re-grounded from the question, a clear `details` mark, and no fallback when
the search finds an answer. A tiny people KG (tests/fixtures/explore_fallback/) and a three-question bank."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grounding.build import build_index
from kb_dumps.stage_errors import KBQAError
from kbqa.frontends.desq import parse_desq
from kbqa.pipeline import Engine
from kbqa.settings import get_translator_settings
from kbqa.translators.base import TranslateError
from kbqa.translators.casebank import bank_dir
from kbqa.translators.casebank_build import DEFAULT_SETS, build_case_bank
from kbqa.translators.explore import ExploreTranslator
from kbqa.translators.explore.fallback import facts as explore_facts
from kbqa.translators.explore.fallback.cases import weak
from kbqa.translators.explore.query import Cond, Graph, Step

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "explore_fallback"
EX = "http://example.org/people/"


@pytest.fixture(scope="module")
def people(ingest_dumps) -> Path:
    store = ingest_dumps([FIXTURES / "people.ttl"], "people")
    build_index(store, progress=False)
    stats = build_case_bank(store, [str(FIXTURES / "cases.json")], folder=bank_dir(store), progress=False)
    assert stats.cases == 3
    return store


@pytest.fixture(scope="module")
def translator(people: Path):
    tr = ExploreTranslator(people)
    yield tr
    tr.close()


def _grounding(text: str) -> dict[str, str | None]:
    parsed = parse_desq(text)
    assert parsed.ok, parsed.errors
    return {g.label: g.uri for g in parsed.grounding}


def test_a_superlative_gets_the_questions_property_and_direction(translator: ExploreTranslator) -> None:
    # the nearest case is "Who is the tallest person?" (height, descending): neither may be copied
    out = translator.case_fallback.translate("Who is the lightest person?", "test", {})
    assert out is not None and out.details["fallback"]["case_question"] == "Who is the tallest person?"
    uris = set(_grounding(out.text).values())
    assert EX + "mass" in uris and EX + "height" not in uris and EX + "Person" in uris
    assert "ORDER BY ASC" in out.text.replace("ORDER BY ?", "ORDER BY ASC ?") and "DESC" not in out.text
    how = {s["how"] for s in out.details["fallback"]["slots"]}
    assert {"regrounded", "direction"} <= how


def test_a_property_named_differently_is_regrounded_and_a_shared_one_kept(translator: ExploreTranslator) -> None:
    out = translator.case_fallback.translate("Who is the sibling of Dora Moss?", "test", {})
    assert out is not None
    assert set(_grounding(out.text).values()) == {EX + "sibling", EX + "dora"}
    kept = translator.case_fallback.translate("Who is the spouse of Erin Lake?", "test", {})
    assert kept is not None and set(_grounding(kept.text).values()) == {EX + "spouse", EX + "erin"}
    assert all(s["how"] == "kept" for s in kept.details["fallback"]["slots"])


def test_a_store_without_the_facts_gets_the_fallback_with_a_mark(people: Path, translator: ExploreTranslator) -> None:
    # Ada has a name and nothing else: the only graph that executes lists every person ("who"), which leaves
    # the question's entity unused; the case's structure is re-grounded instead
    out = translator.translate("Who is the employer of Ada Quill?")
    mark = out.details["fallback"]
    assert mark["reason"] == "bare class" and mark["case_question"] == "Who is the employer of Dora Moss?"
    assert set(_grounding(out.text).values()) == {EX + "employer", EX + "ada"}
    assert out.backend == "explore" and "search" in out.details
    with Engine(store=people) as engine:
        engine.translator = translator
        res = engine.ask("Who is the employer of Ada Quill?", execute=False)
        assert res.ok and f"<{EX}ada> <{EX}employer>" in res.sparql.replace("\n", " ")


def test_no_fallback_when_the_search_answers(translator: ExploreTranslator) -> None:
    out = translator.translate("Who is the employer of Carl Moss?")
    assert "fallback" not in out.details and out.details["candidates"]
    assert EX + "acme" not in out.text or EX + "employer" in out.text


def test_weak_rule() -> None:
    hop = Graph("hop", conds=[Cond((Step(EX + "employer"),), "exists")], score=1.0)
    assert weak([]) == "no candidate"
    assert weak([hop], threshold=2.0) == "weak" and weak([hop], threshold=0.5) is None and weak([hop]) is None
    assert weak([Graph("class", focus_class=EX + "Person", features={"coverage": 0.5})]) == "bare class"
    assert weak([Graph("class", focus_class=EX + "Person", features={"coverage": 1.0})]) is None
    # a class ordered by an attribute under no constraint: a bare class list when the question names an entity
    # the graph leaves out, kept when it names none ("who is the tallest person?")
    tallest = Graph("class", focus_class=EX + "Person", features={"coverage": 0.5}, order=((Step(EX + "height"),), True),
                    limit=1)
    assert weak([tallest], names_entity=True) == "bare class"
    assert weak([tallest]) is None
    named = Graph("class", focus_class=EX + "Person", conds=[Cond((Step(EX + "employer"),), "exists")],
                  features={"coverage": 0.5}, order=((Step(EX + "height"),), True))
    assert weak([named], names_entity=True) is None


def test_the_default_bank_holds_every_wikidata_development_set() -> None:
    assert {"lcquad2-dev", "wwq-dev", "wwq-train", "qald9plus-train"} <= set(DEFAULT_SETS["wikidata"])


def test_fallback_modes(people: Path) -> None:
    # "always" (a sample store): the case's structure even where the search answers; "never": the search's
    # bare class list stays; an unknown mode is refused by the translator and by the settings
    always = ExploreTranslator(people, fallback="always")
    never = ExploreTranslator(people, fallback="never")
    try:
        out = always.translate("Who is the employer of Carl Moss?")
        assert out.details["fallback"]["reason"].startswith("always")
        out = never.translate("Who is the employer of Ada Quill?")
        assert "fallback" not in out.details and out.details["candidates"]
    finally:
        always.close()
        never.close()
    with pytest.raises(TranslateError, match="unknown explore fallback"):
        ExploreTranslator(people, fallback="sometimes")
    with pytest.raises(KBQAError, match="explore_fallback"):
        get_translator_settings(explore_fallback="sometimes")
    assert get_translator_settings(explore_fallback="always").explore_fallback == "always"


def test_the_bank_says_whether_the_store_holds_the_facts(translator: ExploreTranslator,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # case 3 ("employer of Dora Moss") needs a triple the store lacks; case 2 ("spouse of Carl Moss") has it;
    # case 1 ("the tallest person") names no entity: nothing to check
    by_question = {c.question: c for c in translator.ctx.cases.bank().cases}
    facts = translator.facts
    assert facts.holds(by_question["Who is the spouse of Carl Moss?"])
    assert not facts.holds(by_question["Who is the employer of Dora Moss?"])
    assert facts.holds(by_question["Who is the tallest person?"])
    # the reason follows the similarity-weighted share of nearest cases whose facts are held
    question = "Who is the employer of Bob Tern?"
    span = (question.index("Bob"), len(question) - 1)
    hits = translator.ctx.cases.bank().search("Who is the employer of something?", k=5)
    share = sum(h.similarity for h in hits if facts.holds(h.case)) / sum(h.similarity for h in hits)
    reason = facts.lacking(question, [span])
    assert (reason is not None) == (share < 0.5)
    # consulting the nearest case alone: the employer case, whose facts are missing
    monkeypatch.setattr(explore_facts, "NEAREST", 1)
    reason = facts.lacking(question, [span])
    assert reason is not None and "lacks the facts" in reason and "held for 0% of 1" in reason
    spouse = "Who is the spouse of Bob Tern?"
    assert facts.lacking(spouse, [(spouse.index("Bob"), len(spouse) - 1)]) is None  # the spouse case: held


def test_the_step_report_names_the_fallback_and_its_case(translator: ExploreTranslator) -> None:
    from kbqa.result import translation_detail

    out = translator.translate("Who is the employer of Ada Quill?")
    line = translation_detail(out)
    assert "case fallback: bare class" in line
    assert "'Who is the employer of Dora Moss?'" in line and "similarity 0.00" not in line


FOREIGN_CASES = {"dataset": {"id": "shop-cases"}, "questions": [
    {"id": f"s{i}", "question": [{"language": "en", "string": q}],
     "query": {"sparql": "SELECT ?x WHERE { ?x <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> "
                         f"<http://example.org/shop/{cls}> }}"}}
    for i, (q, cls) in enumerate([("Which products are there?", "Product"), ("List every customer.", "Customer"),
                                  ("Show all the invoices.", "Invoice"), ("Which employers exist?", "Employer")])]}


def test_a_bank_of_another_kg_says_nothing_about_this_stores_facts(ingest_dumps, tmp_path: Path,
                                                                    translator: ExploreTranslator) -> None:
    # the people bank names people the store knows: its facts check is on (see the test above)
    assert translator.facts.bank_is_about_this_kg()
    # a bank of a shop KG's questions on the same people data: none of its classes is in the store, so none of its
    # facts is held; that says the bank is another KG's, not that this store lacks the question's facts
    store = ingest_dumps([FIXTURES / "people.ttl"], "people-foreign-bank")
    build_index(store, progress=False)
    cases = tmp_path / "shop_cases.json"
    cases.write_text(json.dumps(FOREIGN_CASES), encoding="utf-8")
    stats = build_case_bank(store, [str(cases)], folder=bank_dir(store), progress=False)
    assert stats.cases >= 3
    foreign = ExploreTranslator(store)
    try:
        assert not any(foreign.facts.holds(c) for c in foreign.ctx.cases.bank().cases if c.checks)
        assert not foreign.facts.bank_is_about_this_kg()
        question = "Which employers are there?"
        assert foreign.facts.lacking(question, []) is None
    finally:
        foreign.close()
