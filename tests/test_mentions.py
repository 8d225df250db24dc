"""Entity mentions (kbqa/translators/mentions.py) over a real store's label memory and lexical index: a name matched
exactly, a long name matched whole, and (where the caller asks for it) a misspelt name beside an exact one found
fuzzily as a weaker guess.
A small KG of people and prizes written for these tests; questions, paraphrases and negatives written for it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kb_dumps.label_memory import LabelMemory
from kb_dumps.layout import StoreLayout
from kbqa.translators.mentions import FUZZY_BESIDE_EXACT_PRIOR, Mention, MentionDetector, choose, open_lexicon

NS = "http://example.org/prizes/"
PRIZES = f"""@prefix p: <{NS}> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
p:person a rdfs:Class ; rdfs:label "person" .
p:prize a rdfs:Class ; rdfs:label "prize" .
p:city a rdfs:Class ; rdfs:label "city" .
p:wendelin a p:person ; rdfs:label "Wendelin Marchetti" ; p:born p:harwick ; p:won p:lantern .
p:harwick a p:city ; rdfs:label "Harwick" .
p:lantern a p:prize ; rdfs:label "Golden Lantern Prize for the Best Translation of a Northern Epic Poem" .
p:orsolya a p:person ; rdfs:label "Orsolya Brandvold" ; p:born p:harwick .
"""
LONG_NAME = "Golden Lantern Prize for the Best Translation of a Northern Epic Poem"  # 12 words


@pytest.fixture(scope="module")
def detector(ingest_turtle: Callable[[str, str], Path]) -> Iterator[MentionDetector]:
    store = ingest_turtle(PRIZES, "prizes")
    memory = LabelMemory(StoreLayout.of(store).labels, readonly=True)
    try:
        yield MentionDetector(open_lexicon(store), memory, fuzzy_beside_exact=True)
    finally:
        memory.close()


def _found(mentions: list[Mention], iri: str) -> list[Mention]:
    return [m for m in mentions if any(c.id == NS + iri for c in m.candidates)]


@pytest.mark.parametrize("question", ["Was Wendelin Marchetti born in Harwick?",
                                      "Is Harwick the birthplace of Wendelin Marchetti?"])
def test_exact_names_are_found_with_their_prior(detector: MentionDetector, question: str) -> None:
    mentions = detector.detect(question)
    for iri in ("wendelin", "harwick"):
        hit = _found(mentions, iri)
        assert hit and not hit[0].fuzzy and hit[0].prior == 0.5


@pytest.mark.parametrize("question", [f"Who won the {LONG_NAME}?", f"Which translator received the {LONG_NAME}?"])
def test_a_long_name_is_matched_whole(detector: MentionDetector, question: str) -> None:
    hit = _found(detector.detect(question), "lantern")
    assert hit and question[hit[0].start:hit[0].end] == LONG_NAME and not hit[0].fuzzy


@pytest.mark.parametrize("question", ["Was Wendelin Marchetti born in Harwik?",      # the city misspelt
                                      "Is Harwick the birthplace of Wendlin Marchetti?"])  # the person misspelt
def test_a_misspelt_name_beside_an_exact_one_is_a_weaker_guess(detector: MentionDetector, question: str) -> None:
    mentions = detector.detect(question, max_candidates=5)
    exact = [m for m in mentions if not m.fuzzy]
    fuzzy = [m for m in mentions if m.fuzzy]
    assert exact and all(m.prior >= 0.3 for m in exact)
    misspelt = "harwick" if "Harwik" in question else "wendelin"
    hit = _found(fuzzy, misspelt)
    assert hit and hit[0].prior == FUZZY_BESIDE_EXACT_PRIOR < 0.2  # under the structure chooser's entity count
    assert not any(m.overlaps(e) for m in fuzzy for e in exact if e.prior >= 0.3)  # only words no exact name covers
    # a skeleton that wants two entities gets both
    assert {c.candidates[0].id for c in choose(mentions, 2)} == {NS + "wendelin", NS + "harwick"}


def test_by_default_no_fuzzy_search_beside_a_likely_exact_name(detector: MentionDetector) -> None:
    # explore links names its own way (link/names.py) and keeps the detector's default
    plain = MentionDetector(detector.lexicon, detector.memory)
    assert [m.text for m in plain.detect("Was Wendelin Marchetti born in Harwik?") if m.fuzzy] == []
    assert _found(plain.detect("What is the birthplace of Orsolya Brandvol?"), "orsolya")  # none likely: searched


def test_a_misspelt_name_alone_keeps_the_fuzzy_prior(detector: MentionDetector) -> None:
    hit = _found(detector.detect("What is the birthplace of Orsolya Brandvol?"), "orsolya")
    assert hit and hit[0].fuzzy and hit[0].prior == 0.5


@pytest.mark.parametrize("question", ["Was Wendelin Marchetti born in a large town?",
                                      "Did Wendelin Marchetti win anything?"])
def test_no_fuzzy_guess_where_no_name_is_misspelt(detector: MentionDetector, question: str) -> None:
    assert [m.text for m in detector.detect(question) if m.fuzzy] == []
