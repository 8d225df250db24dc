"""Weak entity links for names a question writes differently from the KG (explore/link/names.py): the name without
its apostrophe, a short form, a title without its subtitle — and the search then answers through them."""

from __future__ import annotations

from pathlib import Path

import pytest

from kb_dumps.label_memory import LabelMemory
from kb_dumps.layout import StoreLayout
from kbqa.pipeline import Engine
from kbqa.translators.explore import ExploreTranslator
from kbqa.translators.explore.link.names import name_variants
from kbqa.translators.explore.link.words import Link
from kbqa.translators.mentions import open_lexicon

ROOT = Path(__file__).resolve().parents[1]
NAMES = ROOT / "tests" / "fixtures" / "explore" / "names.ttl"
EX = "http://example.org/names/"


@pytest.fixture(scope="module")
def store(ingest_dumps) -> Path:
    return ingest_dumps([NAMES], "names")


@pytest.fixture(scope="module")
def linked(store: Path):
    memory = LabelMemory(StoreLayout.of(store).labels, readonly=True)
    part = open_lexicon(store).parts["entity"]
    yield lambda question, found=(): {lk.iri: lk for lk in name_variants(question, list(found), part, memory)}
    memory.close()


@pytest.mark.parametrize(("question", "item"), [
    ("what kind of film is sparrows dont weep", "sparrows"),  # the apostrophe left out
    ("which film genre is sparrows dont weep", "sparrows"),
    ("where was harriet osterman buried", "osterman"),  # a short form: the name's words in order
    ("where is harriet osterman's grave", "osterman"),
    ("what genre is quiet harbour", "harbour"),  # a title without its subtitle
    ("quiet harbour is a film of which genre", "harbour"),
])
def test_a_name_written_differently_is_a_weak_variant_link(linked, question: str, item: str) -> None:
    links = linked(question)
    assert EX + item in links
    lk = links[EX + item]
    assert lk.variant and lk.kind == "entity"
    assert 0 < lk.score < 0.5  # weaker than an exact mention: the KG has to confirm it
    assert question[lk.span[0]:lk.span[1]] == lk.text


def test_words_out_of_order_or_an_already_linked_item_are_not_variants(linked) -> None:
    assert EX + "osterman" not in linked("where was osterman harriet buried")
    already = Link("entity", EX + "osterman", 0.9, (10, 26), "harriet osterman")
    assert EX + "osterman" not in linked("where was harriet osterman buried", [already])
    assert EX + "harbour" not in linked("what genre is harbour quiet")


@pytest.mark.parametrize(("question", "answer"), [
    ("where was harriet osterman buried", EX + "greyfield"),
    ("what genre is sparrows dont weep", EX + "drama"),
    ("what genre is quiet harbour", EX + "documentary"),
])
def test_the_search_answers_through_a_variant(store: Path, question: str, answer: str) -> None:
    with Engine(store=store) as engine:
        engine.translator = ExploreTranslator(store, store=engine.store)
        result = engine.ask(question)
    assert result.ok, [e.message for e in result.errors]
    assert {c.value for row in result.answers.rows for c in row if c is not None} == {answer}
