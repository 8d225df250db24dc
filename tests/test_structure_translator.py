"""The `structure` translator with the shipped model on the bundled wikidata-mini store: a question written for the
test, a paraphrase and a negative case; the DeSQ it writes compiles to the query; the registry and the plain function."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval.query_metrics import score_query
from eval.skeleton import skeleton
from kbqa.translators.base import TranslateError

ONE_HOP = "SELECT DISTINCT ?v0 WHERE { E1 wdt:R1 ?v0 }"


@pytest.fixture(scope="module")
def translator(wikidata_mini_store: Path):
    from kbqa.translators.structure.translator import StructureTranslator

    tr = StructureTranslator(wikidata_mini_store)
    yield tr
    tr.close()


def test_a_one_hop_question_gets_its_entity_and_property(translator) -> None:
    ans = translator.answer("Where was Sally Field born?")
    assert ans.sparql is not None
    sk = skeleton(ans.sparql)
    assert sk.slot("E1").value == "wd:Q187033"  # Sally Field, from the label memory
    assert "P19" in {s.value for s in sk.slots}  # place of birth
    assert 0.0 < ans.confidence <= 1.0
    slots = {s.name: s for s in ans.slots}
    assert slots["E1"].alternatives and slots["R1"].alternatives  # each slot keeps its top alternatives


def test_a_paraphrase_gets_the_same_query(translator) -> None:
    a = translator.answer("Where was Sally Field born?")
    b = translator.answer("What is the birthplace of Sally Field?")
    assert score_query(b.sparql, a.sparql).exact_match


def test_a_count_question_gets_a_count_skeleton(translator) -> None:
    ans = translator.answer("How many children did Sally Field have?")
    assert "COUNT" in ans.skeleton
    assert ans.skeleton != ONE_HOP


def test_a_question_naming_nothing_the_store_knows_is_a_translate_error(translator) -> None:
    with pytest.raises(TranslateError) as e:
        translator.translate("Where was Xqzzvv Plorbnik born?")
    assert "slots" in str(e.value)


def test_the_desq_compiles_to_the_same_query_and_the_report_names_skeleton_and_slots(translator,
                                                                                      wikidata_mini_store) -> None:
    from kbqa.pipeline import Engine

    tr = translator.translate("Where was Sally Field born?")
    info = tr.details["structure"]
    assert info["skeleton"] and info["why"] and all("alternatives" in s for s in info["slots"])
    with Engine(store=wikidata_mini_store) as engine:
        res = engine.compile(tr.text, execute=False)
    assert res.sparql and score_query(res.sparql, info["sparql"]).exact_match


def test_registry_and_plain_function(wikidata_mini_store) -> None:
    from kbqa.translators import TRANSLATORS
    from kbqa.translators.structure.translator import structured_answer

    assert "structure" in TRANSLATORS.names()
    ans = structured_answer("Where was Sally Field born?", wikidata_mini_store)
    assert ans.sparql and ans.to_dict()["slots"]


def _mention(question: str, name: str, prior: float = 0.9):
    from kbqa.translators.mentions import Mention

    start = question.index(name)
    return Mention(start, start + len(name), name, name.lower(), 1.0, prior)


def test_the_chooser_reads_the_words_around_the_entities_as_one_form() -> None:
    from kbqa.translators.structure.features import mention_features

    def masked(question: str, *names: str, prior: float = 0.9) -> set[str]:
        feats = mention_features([_mention(question, n, prior) for n in names], question)
        return {f for f in feats if f.split(":")[0] in ("mb", "mt", "mf3", "ml2")}

    a = masked("Who composed the score of Blue Harbour Nights?", "Blue Harbour Nights")
    b = masked("Who composed the score of Ode?", "Ode")  # another name, the same form
    assert a == b and "mt:score_of_ent" in a and "ml2:of_ent" in a and "mf3:who_composed_the" in a
    other = masked("Which river flows through Ode?", "Ode")  # another form
    assert not other & {"mt:score_of_ent", "mf3:who_composed_the"} and "ml2:through_ent" in other
    # a mention whose prior is too low to count as an entity stays a word
    assert "ml2:of_ent" not in masked("Who composed the score of Ode?", "Ode", prior=0.1)
    # no question: the entity counts alone, as the model before these features read them
    plain = mention_features([_mention("Who composed the score of Ode?", "Ode")])
    assert plain == ["e2:1", "e5:1"]
