"""Fitting the structure models on questions written for the test: the chooser learns skeletons from words, the
numpy model reads the JSON it wrote, masking and entity order read the question."""

from __future__ import annotations

import json

from eval.skeleton import skeleton
from kbqa.training.structure_data import Example
from kbqa.training.structure_parts_fit import entity_order, masked_question
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


OUT = "SELECT DISTINCT ?v0 WHERE { E1 wdt:R1 ?v0 }"
IN = "SELECT DISTINCT ?v0 WHERE { ?v0 wdt:R1 E1 }"


def bank_of(rows: list[tuple[str, str, str]]):
    from grounding.embedder import get_embedder
    from kbqa.translators.structure.slots import Bank

    return Bank([{"id": f"t:{i}", "masked": q, "skeleton": sk, "slots": {"R1": pid}}
                 for i, (q, sk, pid) in enumerate(rows)], get_embedder(None))


def test_skeleton_fit_says_which_direction_a_property_is_asked_in() -> None:
    bank = bank_of([("Who founded something?", IN, "P112")] * 4 + [("Who did something found?", OUT, "P112")]
                   + [("Where was something born?", OUT, "P19")] * 3)
    # a founder is mostly asked for from the founded thing: the incoming skeleton fits P112 better
    assert bank.skeleton_fit(IN, "P112") > bank.skeleton_fit(OUT, "P112")
    # a birthplace is asked for outgoing only
    assert bank.skeleton_fit(OUT, "P19") > bank.skeleton_fit(IN, "P19")
    # a property the bank never saw fits no skeleton better than another
    assert bank.skeleton_fit(OUT, "P999") == bank.skeleton_fit(IN, "P999")


def test_asked_property_is_the_neighbours_weighted_vote() -> None:
    bank = bank_of([("Who founded something?", IN, "P112"), ("Where was something born?", OUT, "P19"),
                    ("Where was something born?", OUT, "P19")])
    assert bank.asked_property([(0, 0.9), (1, 0.5), (2, 0.5)]) == "P112"  # 0.9⁴ > 2 x 0.5⁴
    assert bank.asked_property([(0, 0.5), (1, 0.9), (2, 0.9)]) == "P19"
    assert bank.asked_property([]) is None


def test_pick_first_scores_each_question_by_its_best_candidate() -> None:
    import numpy as np

    from kbqa.training.structure_rerank_fit import pick_first

    scores = np.array([0.2, 0.9, 0.5, 0.1, 0.3])
    gold = np.array([0, 1, 0, 0, 1])  # question 0: its best (0.9) is gold; question 1: its best (0.5) is not
    groups = np.array([0, 0, 1, 1, 1])
    assert pick_first(scores, gold, groups) == 0.5
    assert pick_first(-scores, gold, groups) == 0.0


def test_part_cache_reads_fold_choosers_and_the_earlier_one_chooser_layout(tmp_path) -> None:
    from kbqa.training.structure_parts_fit import write
    from kbqa.training.structure_rerank_fit import read_part_cache

    write({"choosers": {"k1": {"classes": ["a"]}, "k2": {"classes": ["b"]}}}, tmp_path / "folds.json.gz")
    write({"examples_key": "k3", "skeleton": {"classes": ["c"]}}, tmp_path / "one.json.gz")
    assert set(read_part_cache(tmp_path / "folds.json.gz")) == {"k1", "k2"}
    assert read_part_cache(tmp_path / "one.json.gz") == {"k3": {"classes": ["c"]}}
    assert read_part_cache(tmp_path / "missing.json.gz") == {}
