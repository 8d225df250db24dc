"""The structure prior of the `explore` ranker: shape labels of gold SPARQL and of candidate graphs, the
shipped classifier (plain JSON round trip, what it says on typical questions) and feature `struct_prior` on
the zoo fixture's candidates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kb_dumps.ingest import ingest
from kbqa.training.structure_prior import fit, prune
from kbqa.translators.explore import ExploreTranslator
from kbqa.translators.explore.features.parts import PARTS
from kbqa.translators.explore.features.prior import (
    DEFAULT_PRIOR_PATH,
    StructurePrior,
    add_struct_prior,
    graph_shape,
    load_prior,
    sparql_shape,
    tokens,
)
from kbqa.translators.explore.query import Cond, Graph, Step, Term
from kbqa.translators.explore.rank.rankers import FEATURES, Ranker

ROOT = Path(__file__).resolve().parents[1]
ZOO = ROOT / "tests" / "fixtures" / "explore" / "zoo.ttl"
W = Step("http://example.org/zoo/weight")


@pytest.fixture(scope="module")
def shipped() -> StructurePrior:
    prior = load_prior()
    assert prior is not None, f"missing {DEFAULT_PRIOR_PATH}; build it with python -m kbqa.training.structure_prior"
    return prior


@pytest.mark.parametrize(("sparql", "shape"), [
    ("SELECT (count(*) as ?n) WHERE { ?T1 a :singer . }", "count"),
    ("SELECT (avg(?a) as ?x) WHERE { ?T1 :singer\\#age ?a . }", "aggregate"),
    ("SELECT ?c (count(*) as ?n) WHERE { ?T1 :singer\\#country ?c } GROUP BY ?c", "group"),
    ("SELECT ?c WHERE { ?T1 :x ?c } GROUP BY ?c ORDER BY DESC(count(*)) LIMIT 1", "group-top"),
    ("SELECT ?c WHERE { ?T1 :x ?c } GROUP BY ?c HAVING (count(*) > 1)", "having"),
    ("SELECT ?n WHERE { ?T1 :x ?n . ?T1 :age ?a } ORDER BY DESC(?a) LIMIT 1", "top"),
    ("SELECT ?n WHERE { ?T1 :x ?n . ?T1 :a ?a . FILTER(?a = (?m)) . {SELECT (max(?b) as ?m) WHERE { ?T2 :a ?b }} }",
     "top"),
    ("SELECT ?n WHERE { ?T1 :x ?n . ?T1 :a ?a . FILTER(?a > (?m)) . {SELECT (avg(?b) as ?m) WHERE { ?T2 :a ?b }} }",
     "compare"),
    ("SELECT ?n WHERE { ?T1 :x ?n . ?T1 :age ?a . FILTER(?a > 30) }", "compare"),
    ("SELECT ?n WHERE { {SELECT ?n WHERE { ?T1 :x ?n }} MINUS {SELECT ?n WHERE { ?T2 :y ?n }} }", "negation"),
    ("SELECT ?n WHERE { ?T1 :x ?n . FILTER(?n = 'France') }", "list"),
    ("ASK { ?x a :singer }", "ask"),
])
def test_sparql_shape(sparql: str, shape: str) -> None:
    assert sparql_shape(sparql) == shape


def test_graph_shape() -> None:
    assert graph_shape(Graph("class", focus_class="c", aggs=[("COUNT", None)])) == "count"
    assert graph_shape(Graph("class", focus_class="c", aggs=[("AVG", (W,))])) == "aggregate"
    assert graph_shape(Graph("class", focus_class="c", aggs=[("COUNT", None)], group=True, order=(None, True),
                             limit=1)) == "group-top"
    assert graph_shape(Graph("class", focus_class="c", order=((W,), True), limit=1)) == "top"
    assert graph_shape(Graph("class", conds=[Cond((W,), ">", Term("number", "100"))])) == "compare"
    assert graph_shape(Graph("class", conds=[Cond((W,), "exists", negated=True)])) == "negation"
    assert graph_shape(Graph("compare", form="ask")) == "ask"
    assert graph_shape(Graph("hop", conds=[Cond((W,), "=", Term("iri", "x"))])) == "list"


def test_tokens_hide_quoted_names_and_numbers() -> None:
    t = tokens("How many singers from 'New York' are older than 30?")
    assert "<q>" in t and "<num>" in t and "how many" in t and "new" not in t


def test_shipped_prior_json_round_trip(shipped: StructurePrior, tmp_path: Path) -> None:
    path = tmp_path / "prior.json"
    shipped.save(path)
    again = StructurePrior.load(path)
    assert again.labels == shipped.labels and again.weights == shipped.weights and again.bias == shipped.bias
    assert set(again.parts) == set(PARTS) and all(again.parts[n].weights == m.weights for n, m in shipped.parts.items())
    q = "Which country has the most singers?"
    assert again.predict(q) == shipped.predict(q)
    assert again.parts["agg"].predict(q) == shipped.parts["agg"].predict(q)
    assert DEFAULT_PRIOR_PATH.stat().st_size < 800_000  # small: pruned features (3,000 a model), rounded weights
    with pytest.raises(ValueError, match="not a structure prior"):
        StructurePrior.from_dict({"format": "pickle", "labels": [], "bias": []})
    bad = json.loads(path.read_text())
    bad["bias"] = bad["bias"][:-1]
    with pytest.raises(ValueError, match="one number per label"):
        StructurePrior.from_dict(bad)


@pytest.mark.parametrize(("question", "shape"), [
    ("How many keepers do we have?", "count"),
    ("How many dogs are older than 3?", "count"),
    ("Which stadium has the most concerts?", "group-top"),
    ("Which country has the most singers?", "group-top"),
    ("What is the average age of all dogs?", "aggregate"),
    ("Show the name of each enclosure and the number of animals in it.", "group"),
])
def test_shipped_prior_on_typical_questions(shipped: StructurePrior, question: str, shape: str) -> None:
    probs = shipped.predict(question)
    assert abs(sum(probs.values()) - 1.0) < 1e-6
    assert max(probs, key=probs.get) == shape


def test_fit_learns_cue_words() -> None:
    qs = ["how many cats", "how many dogs are there", "list the cats", "show the dogs", "which cat is oldest"] * 4
    ys = ["count", "count", "list", "list", "top"] * 4
    prior = prune(fit(qs, ys, min_count=1, steps=100), 50)
    assert max(prior.predict("how many birds"), key=prior.predict("how many birds").get) == "count"
    assert len(prior.weights) <= 50


def test_struct_prior_feature_on_zoo_candidates(tmp_path: Path, shipped: StructurePrior) -> None:
    store = tmp_path / "zoo"
    ingest([ZOO], store, profile="generic", progress=False)
    tr = ExploreTranslator(store)
    try:
        question = "How many animals have the species 'lion'?"
        _a, ranked, _info = tr.search(question)
        assert ranked and all("struct_prior" in g.features for g in ranked)
        assert "struct_prior" in FEATURES and "struct_prior" in Ranker.load().weights
        counts = [g for g in ranked if graph_shape(g) == "count"]
        lists = [g for g in ranked if graph_shape(g) == "list"]
        assert counts and lists
        assert min(g.features["struct_prior"] for g in counts) > max(g.features["struct_prior"] for g in lists)
        assert tr.ranker.features(counts[0])["struct_prior"] == counts[0].features["struct_prior"]
    finally:
        tr.close()


def test_no_prior_file_no_feature(monkeypatch: pytest.MonkeyPatch) -> None:
    import kbqa.translators.explore.features.prior as explore_prior

    assert load_prior("/nonexistent/prior.json") is None
    monkeypatch.setattr(explore_prior, "load_prior", lambda path=None: None)
    g = Graph("class", focus_class="c", aggs=[("COUNT", None)])
    add_struct_prior("How many animals?", [g])
    assert "struct_prior" not in g.features
    assert Ranker({"struct_prior": 1.0}).features(g).get("struct_prior", 0.0) == 0.0


def test_kbqa_train_ranker_learns_its_weight() -> None:
    """`kbqa train --ranker` fits `struct_prior` like any other feature."""
    from kbqa.training.ranker import Candidate, Question, evaluate
    from kbqa.training.ranker import fit as fit_ranker

    qs = [Question(f"q{i}", "kg", "?", [Candidate({"coverage": 0.6, "struct_prior": 0.1}, 0.0),
                                        Candidate({"coverage": 0.5, "struct_prior": 0.9}, 1.0)]) for i in range(20)]
    prior = Ranker({k: 0.0 for k in FEATURES}, 0.0)
    prior.weights["coverage"] = 5.0
    fitted = fit_ranker(qs, prior=prior, l2=0.1, steps=300)
    assert fitted.weights["struct_prior"] > 0 and evaluate(fitted, qs)["f1"] == 1.0


def test_silent_on_yes_no_questions(shipped: StructurePrior) -> None:
    """The training questions have no yes/no question: the prior gives no candidate of one a feature."""
    g = Graph("class", focus_class="c", aggs=[("COUNT", None)])
    add_struct_prior("Is the number of dragons greater than the number of elves?", [g], shipped)
    assert "struct_prior" not in g.features
    add_struct_prior("How many dragons are there?", [g], shipped)
    assert g.features["struct_prior"] > 0.5


def test_parts_features_on_candidates(shipped: StructurePrior) -> None:
    """Each part's feature is P(the candidate's own label of it): two columns asked for, two columns favoured; a
    count asked for, the COUNT favoured over the average; the sort direction a superlative word implies."""
    one = Graph("class", focus_class="c", answer=[(W,)])
    two = Graph("class", focus_class="c", answer=[(W,), ("age",)])
    add_struct_prior("List the titles and the release years of all films.", [one, two], shipped)
    assert two.features["prior_columns"] > one.features["prior_columns"]
    count = Graph("class", focus_class="c", aggs=[("COUNT", None)])
    mean = Graph("class", focus_class="c", aggs=[("AVG", (W,))])
    add_struct_prior("How many films were released after 1990?", [count, mean], shipped)
    assert count.features["prior_agg"] > 0.5 > mean.features["prior_agg"]
    desc = Graph("class", focus_class="c", answer=[(W,)], order=((W,), True), limit=1)
    asc = Graph("class", focus_class="c", answer=[(W,)], order=((W,), False), limit=1)
    add_struct_prior("Which film has the longest running time?", [desc, asc], shipped)
    assert desc.features["prior_order"] > asc.features["prior_order"]
    for paraphrase in ("Give every film's title and year of release.",):
        add_struct_prior(paraphrase, [one, two], shipped)
        assert two.features["prior_columns"] > one.features["prior_columns"]
