"""`explore`'s first fallback on a Wikidata store that lacks the facts: the learned query structure (the `structure`
translator's shipped model) instead of the nearest case; never on a store of another KB, and the case fallback (or
the search) where the question does not fill the learned skeleton's slots. Questions written for the tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval.query_metrics import score_query
from kb_dumps.ingest import ingest
from kbqa.pipeline import Engine
from kbqa.result import translation_detail
from kbqa.translators.explore import ExploreTranslator

ZOO = Path(__file__).resolve().parent / "fixtures" / "explore" / "zoo.ttl"


@pytest.fixture(scope="module")
def always(wikidata_mini_store: Path):
    """`explore_fallback` = always: the fallback answers first, as for a sample store standing in for Wikidata."""
    tr = ExploreTranslator(wikidata_mini_store, fallback="always")
    yield tr
    tr.close()


def test_a_wikidata_store_takes_the_learned_structure(always: ExploreTranslator) -> None:
    res = always.translate("In which city was Sally Field born?")
    assert res.details["fallback"]["kind"] == "structure"
    structure = res.details["structure"]
    assert structure["skeleton"] and 0.0 < structure["confidence"] <= 1.0
    assert any(s["value"] == "wd:Q187033" for s in structure["slots"])  # Sally Field, from the label memory
    assert "structure fallback" in translation_detail(res)


def test_a_paraphrase_gets_the_same_query(always: ExploreTranslator, wikidata_mini_store: Path) -> None:
    a = always.translate("In which city was Sally Field born?")
    b = always.translate("What is Sally Field's place of birth?")
    assert b.details["fallback"]["kind"] == "structure"
    with Engine(store=wikidata_mini_store) as engine:
        qa, qb = (engine.compile(t.text, execute=False).sparql for t in (a, b))
    assert qa and qb and score_query(qb, qa).exact_match


def test_a_question_naming_nothing_the_store_knows_is_not_answered_by_the_structure(always: ExploreTranslator) -> None:
    try:
        res = always.translate("Where was Xqzzvv Plorbnik born?")
    except Exception as e:  # nothing linked, no case: explore's own error naming what it linked
        assert "explore found no query graph" in str(e)
    else:
        assert (res.details.get("fallback") or {}).get("kind") != "structure"


def test_a_store_of_another_kb_never_takes_it(tmp_path: Path) -> None:
    store = tmp_path / "zoo"
    ingest([ZOO], store, profile="generic", progress=False)
    tr = ExploreTranslator(store, fallback="always")
    try:
        assert not tr.structure_fallback.applies
        res = tr.translate("Which animals weigh more than 100?")
        assert (res.details.get("fallback") or {}).get("kind") != "structure"
    finally:
        tr.close()


@pytest.fixture(scope="module")
def auto(wikidata_mini_store: Path):
    """The default mode: the search first, the fallback when the store's evidence says it lacks the facts."""
    tr = ExploreTranslator(wikidata_mini_store)
    yield tr
    tr.close()


def test_the_hand_rule_decides_in_the_default_mode(auto: ExploreTranslator) -> None:
    sf = auto.structure_fallback
    assert sf.decision is None  # "auto": the hand rule; "fitted": decision.json
    for question in ("Who owns the Eiffel Tower?", "Who is the Eiffel Tower's owner?"):
        reason = sf.lacking(question, set())  # the search's best uses no entity the structure leaves out
        assert reason and "no fact of wd:Q243 beyond names" in reason, question
        # the search read another entity (one with facts): its reading stays
        assert sf.lacking(question, {"http://www.wikidata.org/entity/Q187033"}) is None
    res = auto.translate("How tall is the Eiffel Tower?")  # the search finds nothing: the learned structure answers
    assert res.details["fallback"]["kind"] == "structure"


@pytest.fixture(scope="module")
def fitted(wikidata_mini_store: Path):
    """`explore_fallback` = fitted: the fitted fact-lack decision instead of the hand rule."""
    tr = ExploreTranslator(wikidata_mini_store, fallback="fitted")
    yield tr
    tr.close()


def test_the_fitted_decision_reads_the_stores_evidence(fitted: ExploreTranslator) -> None:
    sf = fitted.structure_fallback
    assert sf.decision is not None and sf.decision.meta["fitted_on"]  # shipped, with what it was fitted on
    for question in ("Who owns the Eiffel Tower?", "Who is the Eiffel Tower's owner?"):
        reason = sf.lacking(question, set())  # an entity with only names, nothing found by the search
        assert reason and "likely lacks the facts" in reason, question
        assert sf.last_decision and sf.last_decision["features"]["bare_entities"] >= 1
        assert sf.last_decision["p_lacks"] >= 0.5
    # an entity whose facts the store holds, the search's own best candidate: the store can answer
    for question in ("In which city was Sally Field born?", "Where was Sally Field born?"):
        _, ranked, _ = fitted.search(question)
        ev = sf.evidence_for(question, fitted.entities_used(ranked[0]), ranked[0], None)
        assert ev is not None and ev.facts and min(ev.facts) > 0, question
        assert sf.decision.p_lacks(ev.features()) < 0.5, (question, sf.decision.explain(ev.features()))


def test_an_entity_with_facts_in_the_store_keeps_the_search(auto: ExploreTranslator) -> None:
    res = auto.translate("In which city was Sally Field born?")
    assert "fallback" not in res.details  # the store holds her facts: the search answers from them
    assert res.details["search"]["kept"] > 0


def test_the_fitted_mode_answers_with_the_structure_and_says_why(fitted: ExploreTranslator) -> None:
    res = fitted.translate("How tall is the Eiffel Tower?")  # nothing found: the confident learned structure
    assert res.details["fallback"]["kind"] == "structure"
    res = fitted.translate("Where was Sally Field born?")  # the store holds her facts: the search answers
    assert "fallback" not in res.details
