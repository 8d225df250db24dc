"""The structure prior as a tree-ranker feature, set out of fold: a train question's candidates read a prior fitted
without its KG, by the query path's own rule (silent on yes/no questions), and the k-fold keeps every prior a
held-out fold reads away from that fold's KGs."""

from __future__ import annotations

import pytest

from kbqa.training.ranker_prior import (
    FEATURE,
    FEATURES,
    fold_of_kgs,
    has_shapes,
    out_of_fold,
    with_prior,
)
from kbqa.training.structure_prior import Example, fit_all
from kbqa.translators.explore.features.parts import feature_parts, sparql_parts
from kbqa.translators.explore.features.prior import StructurePrior, prior_values, sparql_shape
from kbqa.translators.explore.features.structure import structure_features
from kbqa.translators.explore.query import Graph

COUNT = "SELECT (COUNT(?s) AS ?n) WHERE { ?s a :ship }"
LIST = "SELECT ?name WHERE { ?h a :harbour . ?h :name ?name }"
PAIRS = "SELECT DISTINCT ?name ?age WHERE { ?p a :pilot . ?p :name ?name . ?p :age ?age }"
TOP = "SELECT ?name WHERE { ?p a :pilot . ?p :name ?name . ?p :age ?age } ORDER BY DESC(?age) LIMIT 1"


def _examples() -> list[Example]:
    """Ten KGs; "tally" is a count word only on kg0's questions, "how many" one on every KG."""
    out = []
    for k in range(10):
        out += [(f"kg{k}", f"how many ships does fleet {k} have", COUNT),
                (f"kg{k}", f"list the harbours of coast {k}", LIST),
                (f"kg{k}", f"which pilot is the oldest in crew {k}", TOP),
                (f"kg{k}", f"give the names and ages of the pilots of wing {k}", PAIRS)]
        if k == 0:
            out += [("kg0", f"tally the barges of dock {i}", COUNT) for i in range(6)]
    return [(kg, q, {"shape": sparql_shape(query), **sparql_parts(query)}) for kg, q, query in out]


def _row(kg: str, text: str, shapes: list[str]) -> dict:
    return {"id": f"{kg}-1", "kg": kg, "text": text,
            "candidates": [{"features": {"coverage": 0.5, FEATURE: 0.123}, "f1": float(i == 0), "shape": s}
                           for i, s in enumerate(shapes)]}


def _count_share(row: dict) -> float:
    return next(c["features"][FEATURE] for c in row["candidates"] if c["shape"] == "count")


def test_gold_and_candidate_parts_agree() -> None:
    """One labelling for a gold query and for a candidate's structure features."""
    assert sparql_parts(PAIRS) == {"columns": "2", "distinct": "1", "order": "none", "agg": "none"}
    assert sparql_parts(TOP)["order"] == "desc" and sparql_parts(COUNT)["agg"] == "count"
    assert sparql_parts("SELECT * WHERE { ?s a :ship }")["columns"] == "3" and sparql_parts("ASK { ?s a :x }") == {}
    grouped = Graph("group", focus_class="c", answer=[("p",)], aggs=[("COUNT", None)], group=True)
    counted = Graph("class", focus_class="c", aggs=[("COUNT", None)])
    ordered = Graph("class", focus_class="c", answer=[(), ("a",)], order=(("a",), False), limit=3, distinct=True)
    assert feature_parts(structure_features(grouped)) == {"columns": "2", "distinct": "0", "order": "none",
                                                          "agg": "count"}
    assert feature_parts(structure_features(counted))["columns"] == "1"
    assert feature_parts(structure_features(ordered)) == {"columns": "2", "distinct": "1", "order": "asc",
                                                          "agg": "none"}
    assert feature_parts(structure_features(Graph("class", focus_class="c", form="ask"))) == {}


def test_prior_values_follow_the_query_paths_rule() -> None:
    prior = fit_all(_examples())
    got = prior_values("how many boats does the navy have", ["count", "list", "ask"], prior)
    assert got is not None and set(got) == {FEATURE}  # the parts only where the candidates' parts are given
    assert got[FEATURE][0] > got[FEATURE][1]
    assert got[FEATURE][2] == pytest.approx(1.0 / len(prior.labels))  # a shape train never had: the uniform share
    assert prior_values("Is the fleet larger than the navy?", ["count"], prior) is None  # yes/no: silent
    one, two = {"columns": "1", "distinct": "0"}, {"columns": "2", "distinct": "1"}
    parts = prior_values("give the names and ages of the pilots of squadron 7", ["list", "list"], prior,
                         parts=[one, two])
    assert parts is not None and set(parts) == set(FEATURES)
    assert parts["prior_columns"][1] > parts["prior_columns"][0] and parts["prior_distinct"][1] > 0.5
    assert parts["prior_order"] == [pytest.approx(1 / 3)] * 2  # a candidate without that part: the uniform share


def test_with_prior_replaces_the_files_value_and_drops_it_where_silent() -> None:
    prior = fit_all(_examples())
    asked, yes_no = with_prior([_row("kg3", "how many boats are there", ["count", "list"]),
                                _row("kg3", "Does any fleet have boats?", ["ask", "list"])], prior)
    assert _count_share(asked) > asked["candidates"][1]["features"][FEATURE] and _count_share(asked) != 0.123
    assert all(FEATURE not in c["features"] for c in yes_no["candidates"])
    assert all(c["features"]["coverage"] == 0.5 for c in asked["candidates"] + yes_no["candidates"])


def test_out_of_fold_never_reads_its_own_kgs_words() -> None:
    """A word only kg0's pairs tie to a shape is known to the in-sample prior, not to kg0's out-of-fold one."""
    examples = _examples()
    rows = [_row("kg0", "tally the canoes of lake 9", ["count", "list"]),
            _row("kg5", "tally the canoes of lake 9", ["count", "list"])]
    in_sample = with_prior(rows, fit_all(examples))
    oof = out_of_fold(rows, examples, folds=5, seed=1)
    assert [r["kg"] for r in oof] == ["kg0", "kg5"]  # the rows' order is kept
    assert _count_share(oof[0]) < _count_share(in_sample[0]) - 0.1
    # kg5's fold keeps kg0 (a different fold) in its prior's train pairs unless the split put them together
    fold_of = fold_of_kgs([r["kg"] for r in rows], 5, 1)
    if fold_of["kg0"] != fold_of["kg5"]:
        assert _count_share(oof[1]) > _count_share(oof[0])


def test_files_without_shapes_are_recognised() -> None:
    rows = [_row("kg1", "how many ships", ["count"])]
    assert has_shapes(rows)
    del rows[0]["candidates"][0]["shape"]
    assert not has_shapes(rows)


def test_fit_prior_is_pruned_to_the_shipped_size() -> None:
    prior = fit_all(_examples())
    assert isinstance(prior, StructurePrior) and 0 < len(prior.weights) <= 3000
    assert max(prior.predict("how many ships"), key=prior.predict("how many ships").get) == "count"


def test_the_fit_reads_the_prior_only_out_of_fold() -> None:
    pytest.importorskip("lightgbm")
    from kbqa.training.ranker_fit import fit, kfold_by_kg

    rows = []
    for k in range(6):
        for i in range(8):
            count_right = i % 2 == 0
            text = f"how many ships does fleet {i} have" if count_right else f"list the harbours of coast {i}"
            row = _row(f"kg{k}", text, ["count", "list"])
            row["id"] = f"kg{k}-{i}"
            for c, right in zip(row["candidates"], (count_right, not count_right), strict=True):
                c["f1"] = 1.0 if right else 0.0
            rows.append(row)
    with_it = fit(rows, rounds=5, prior_examples=_examples())
    without = fit(rows, rounds=5)
    assert FEATURE in with_it.names and with_it.meta["struct_prior"].startswith("out of fold")
    assert FEATURE not in without.names and without.meta["struct_prior"].startswith("left out")
    folds = kfold_by_kg(rows, folds=3, rounds=5, prior_examples=_examples())
    assert folds["struct_prior"] == "out of fold" and folds["n"] == len(rows)
    for c in rows[0]["candidates"]:  # the caller's rows are not changed: the fit works on copies
        assert c["features"][FEATURE] == 0.123
