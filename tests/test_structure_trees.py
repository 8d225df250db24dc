"""The structure translator's fitted parts read as data: LightGBM trees written as JSON and applied with numpy give
LightGBM's own scores; the word-property associations learned from a bank; the re-ranker's question cues."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kbqa.translators.structure.features import cue_shape_features, question_cues
from kbqa.translators.structure.trees import Trees, trees_to_json


def test_json_trees_reproduce_lightgbm_scores() -> None:
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(3)
    x = rng.normal(size=(400, 4))
    y = ((x[:, 0] > 0.2) & (x[:, 2] < 0.5) | (x[:, 1] > 1.0)).astype(int)
    clf = lgb.LGBMClassifier(n_estimators=30, num_leaves=7, min_child_samples=5, verbose=-1, n_jobs=1).fit(x, y)
    data = json.loads(json.dumps(trees_to_json(clf.booster_.dump_model(), ["a", "b", "c", "d"])))  # plain JSON
    trees = Trees(data)
    assert np.allclose(trees.score_matrix(x), clf.predict(x, raw_score=True), atol=1e-4)
    rows = [{"a": float(r[0]), "b": float(r[1]), "c": float(r[2]), "d": float(r[3])} for r in x[:5]]
    assert np.allclose(trees.score(rows), clf.predict(x[:5], raw_score=True), atol=1e-4)


def test_a_malformed_trees_file_is_refused() -> None:
    good = {"format": "structure-trees/1", "features": ["a"], "base": 0.0, "depth": 1, "feature": [[0, 0, 0]],
            "threshold": [[0.5, 1e308, 1e308]], "left": [[1, 1, 2]], "right": [[2, 1, 2]], "value": [[0, -1.0, 1.0]]}
    assert list(Trees(good).score([{"a": 0.0}, {"a": 1.0}])) == [-1.0, 1.0]
    with pytest.raises(ValueError, match="not there"):
        Trees({**good, "left": [[7, 1, 2]]})
    with pytest.raises(ValueError, match="not a structure-trees"):
        Trees({**good, "format": "pickle"})


def test_words_of_train_questions_vote_for_the_properties_they_asked_for() -> None:
    from grounding.embedder import get_embedder
    from kbqa.translators.structure.slots import Bank, associations, row_stems, stem

    sk = "SELECT DISTINCT ?v0 WHERE { E1 wdt:R1 ?v0 }"
    rows = [{"id": f"t:{i}", "masked": f"Which team does something play for? {i}", "skeleton": sk,
             "slots": {"R1": "P54"}} for i in range(4)]
    rows += [{"id": f"u:{i}", "masked": "Who wrote the lyrics of something?", "skeleton": sk, "slots": {"R1": "P676"}}
             for i in range(3)]
    bank = Bank(rows, get_embedder(None))
    best, _mean = associations({stem("team"), stem("player")}, bank)
    assert best["P54"] > 0.5 and best.get("P676", 0.0) == 0.0
    best_lyrics, _ = associations(row_stems("The lyrics of something were written by whom?"), bank)
    assert max(best_lyrics, key=lambda p: best_lyrics[p]) == "P676"
    # a question's own row does not vote for itself
    alone, _ = associations({stem("team")}, bank, leave_out=rows[0])
    assert alone["P54"] < best["P54"]


def test_question_cues_meet_the_skeleton_shape() -> None:
    ask = "ASK WHERE { E1 wdt:R1 E2 }"
    count = "SELECT (COUNT(?v0) AS ?v1) WHERE { E1 wdt:R1 ?v0 }"
    assert question_cues("Is the Vistula longer than the Oder?")["q_ask"] == 1.0
    assert question_cues("Did Ravel write a piano concerto?")["q_ask"] == 1.0  # a paraphrase of the form
    assert question_cues("Which river is longer, the Vistula or the Oder?")["q_ask"] == 0.0
    assert cue_shape_features("Does Kelso lie on the Tweed?", ask)["x_q_ask_k_ask"] == 1.0
    assert cue_shape_features("Does Kelso lie on the Tweed?", count)["x_q_ask_k_ask"] == 0.0
    assert cue_shape_features("How many bridges cross the Tweed?", count)["x_q_howmany_k_count"] == 1.0
