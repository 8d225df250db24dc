"""The fact-lack decision's file format and fit (kbqa/training/facts_decision.py): weights as JSON, read back with
plain arithmetic (no learner at query time) that agrees with scikit-learn's own probabilities; a file of other features is refused."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from kbqa.training.facts_decision import fit
from kbqa.translators.explore.fallback.decision import FEATURES, Evidence, FactsDecision


def rows(n: int = 300, seed: int = 3) -> list[dict]:
    """Synthetic evidence: entities with no facts beyond names mostly mean the store lacks the facts."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        facts = [rng.choice([0, 0, 3, 12]) for _ in range(rng.randint(1, 2))]
        lacks = (min(facts) == 0) != (rng.random() < 0.1)  # 10% label noise
        ev = Evidence(facts=facts, search_found=rng.random() < 0.7, search_score=rng.uniform(-5, 0),
                      search_rows=rng.randint(0, 30), search_other_entity=rng.random() < 0.2,
                      search_entities=rng.randint(0, 2), bank_held_share=None if i % 3 else rng.random())
        out.append({"set": "synthetic", "id": str(i), "lacks": lacks, "features": ev.features()})
    return out


def test_fit_writes_json_that_reads_back_as_sklearn_predicts() -> None:
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    data = rows()
    fitted = json.loads(json.dumps(fit(data, "test")))  # plain JSON, no pickle
    decision = FactsDecision(fitted)
    assert fitted["meta"]["fitted_on"] == {"synthetic": 300} and fitted["meta"]["command"] == "test"
    assert max(fitted["meta"]["cv5_accuracy_by_C"].values()) > 0.8  # the signal is learnt through the noise
    x = np.array([[r["features"][n] for n in FEATURES] for r in data])
    assert np.isnan(x).any()  # rows without a bank: the share is missing, imputed with the mean
    scaler = StandardScaler().fit(x)
    xs = np.nan_to_num(scaler.transform(x), nan=0.0)
    ref = LogisticRegression(C=fitted["meta"]["C"], max_iter=2000).fit(xs, [r["lacks"] for r in data])
    expected = ref.predict_proba(xs)[:, 1]
    got = [decision.p_lacks(r["features"]) for r in data]
    assert max(abs(a - b) for a, b in zip(got, expected, strict=True)) < 1e-6
    bare = Evidence([0], False, 0.0, 0, False, 0, None).features()
    held = Evidence([12], True, -1.0, 3, False, 1, None).features()
    assert decision.p_lacks(bare) > 0.5 > decision.p_lacks(held)
    assert "bare" in decision.explain(bare) or "facts" in decision.explain(bare)


def test_a_file_of_other_features_is_refused_with_what_to_do() -> None:
    data = fit(rows(60), "test")
    data["features"] = [*FEATURES[:-1], "something_else"]
    with pytest.raises(ValueError, match="refit it"):
        FactsDecision(data)
