"""Fitting the structure models on questions written for the test: the chooser learns skeletons from words, the
numpy model reads the JSON it wrote, masking and entity order read the question."""

from __future__ import annotations

import json

from eval.skeleton import skeleton
from kbqa.training.structure_data import Example
from kbqa.training.structure_fit import entity_order, masked_question
from kbqa.training.structure_skeleton_fit import fit_skeleton_model
from kbqa.translators.structure.model import SkeletonModel

ASK = "ASK WHERE { wd:Q%d wdt:P%d wd:Q%d }"
COUNT = "SELECT (COUNT(?x) AS ?n) WHERE { wd:Q%d wdt:P%d ?x }"
ONE = "SELECT DISTINCT ?x WHERE { wd:Q%d wdt:P%d ?x }"
NAMES = ["Arlo Venn", "Bexley Park", "the Corvin river", "Dunmore Hall", "Elsa Quist", "Fenwick Bay", "Garrow Street",
         "Hollin Moor", "Ivel Bridge", "Juno Marsh", "Kestrel Lane", "Lyle Tower"]


def examples() -> list[Example]:
    out = []
    for i, name in enumerate(NAMES):
        other = NAMES[(i + 3) % len(NAMES)]
        rows = [(f"Is {name} a part of {other}?", ASK % (i + 1, 361, i + 50)),
                (f"Does {name} border {other}?", ASK % (i + 1, 47, i + 50)),
                (f"How many rivers flow through {name}?", COUNT % (i + 1, 200)),
                (f"How many awards did {name} receive?", COUNT % (i + 1, 166)),
                (f"What is the official language of {name}?", ONE % (i + 1, 37)),
                (f"Who founded {name}?", ONE % (i + 1, 112))]
        for j, (q, s) in enumerate(rows):
            out.append(Example(f"t:{i}-{j}", "t", q, s, skeleton(s)))
    return out


def test_the_chooser_learns_skeletons_from_words_and_round_trips_as_json() -> None:
    from grounding.embedder import get_embedder

    emb = get_embedder(None)
    data = json.loads(json.dumps(fit_skeleton_model(examples(), 4.0, emb)))  # plain JSON, nothing else
    model = SkeletonModel(data, emb)
    assert len(model.classes) == 3
    # paraphrases never seen in training, names never seen either
    assert model.predict("Is Quill Harbour located in Mossgate?")[0][0] == skeleton(ASK % (1, 2, 3)).text
    assert model.predict("How many bridges cross Wendle?")[0][0] == skeleton(COUNT % (1, 2)).text
    assert model.predict("What is the currency of Tarnby?")[0][0] == skeleton(ONE % (1, 2)).text


def test_a_model_of_another_format_is_refused() -> None:
    import pytest

    with pytest.raises(ValueError):
        SkeletonModel({"format": "explore-ranker/2"}, None)


def test_masked_question_replaces_labels_whatever_their_case_and_accents() -> None:
    assert masked_question("Who founded Bexley Park?", ["Bexley Park"]) == "Who founded something?"
    assert masked_question("where did sasa vujacic play", ["Saša Vujačić"]) == "where did something play"
    assert masked_question("Who founded it?", ["Bexley Park"]) == "Who founded it?"  # absent: unchanged


def test_entity_order_says_which_mention_fills_which_slot() -> None:
    q = "Is Elsa Quist a sibling of Arlo Venn?"
    assert entity_order(q, ["Elsa Quist", "Arlo Venn"]) == "0,1"
    assert entity_order(q, ["Arlo Venn", "Elsa Quist"]) == "1,0"
    assert entity_order(q, ["Arlo Venn", "Juno Marsh"]) is None  # one is not in the question
    assert entity_order(q, ["Arlo Venn"]) is None  # one slot: no order to learn
