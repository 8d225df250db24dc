"""The fitted tree ranker of `explore`: LightGBM's trees read back as plain JSON give LightGBM's own scores, the
per-feature contributions add up to the score, bad files are refused, and `kbqa train --ranker --train-kgs`
fits one from train KGs (a few copied into tests/fixtures/train_kgs) that `kbqa ask --explain` then names."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kb_dumps.ingest import ingest
from kb_dumps.layout import StoreLayout
from kb_dumps.stage_errors import KBQAError
from kbqa.training.ranker_data import read_candidates
from kbqa.training.ranker_fit import (
    DEFAULT_PARAMS,
    Dataset,
    first_per_kg,
    fit,
    from_lightgbm,
    kfold_by_kg,
    kg_weights,
    relevance,
    top1,
)
from kbqa.training.train_kgs import is_trivial, list_kgs, read_questions
from kbqa.translators.explore.features.structure import question_features
from kbqa.translators.explore.rank.rankers import load_ranker
from kbqa.translators.explore.rank.trees import TreeRanker

ROOT = Path(__file__).resolve().parents[1]
TRAIN_KGS = ROOT / "tests" / "fixtures" / "train_kgs"
ENV = {**os.environ, "HF_HUB_OFFLINE": "1"}


def _synthetic(n_questions: int = 60, seed: int = 0) -> tuple[np.ndarray, np.ndarray, list[int]]:
    rng = np.random.default_rng(seed)
    xs, ys, groups = [], [], []
    for _ in range(n_questions):
        k = int(rng.integers(3, 9))
        x = rng.normal(size=(k, 4))
        x[:, 3] = rng.integers(0, 2, size=k)  # a one-hot-like feature
        y = (x[:, 0] + 0.5 * x[:, 3] > 0.6).astype(int)
        xs.append(x)
        ys.append(y)
        groups.append(k)
    return np.vstack(xs), np.concatenate(ys), groups


def test_trees_read_back_from_json_score_as_lightgbm_does() -> None:
    lgb = pytest.importorskip("lightgbm")
    x, y, groups = _synthetic()
    booster = lgb.train({**DEFAULT_PARAMS, "min_data_in_leaf": 5}, lgb.Dataset(x, y, group=groups),
                        num_boost_round=25)
    names = ["a", "b", "c", "flag"]
    ranker = from_lightgbm(booster.dump_model(), names, {"fitted_on": "synthetic"})
    again = TreeRanker.from_dict(json.loads(json.dumps(ranker.to_dict())))
    feats = [dict(zip(names, row, strict=True)) for row in x]
    assert np.allclose(again.score_dicts(feats), booster.predict(x), atol=1e-9)


def test_contributions_add_up_to_the_score() -> None:
    lgb = pytest.importorskip("lightgbm")
    x, y, groups = _synthetic(seed=1)
    booster = lgb.train({**DEFAULT_PARAMS, "min_data_in_leaf": 5}, lgb.Dataset(x, y, group=groups),
                        num_boost_round=10)
    ranker = from_lightgbm(booster.dump_model(), ["a", "b", "c", "flag"], {})
    row = dict(zip(ranker.names, x[3], strict=True))
    out = np.zeros(len(ranker.names))
    for t in ranker.trees:
        t.path_contributions(ranker.matrix([row])[0], out)
    roots = sum(t.value[0] for t in ranker.trees)
    assert out.sum() + roots == pytest.approx(float(ranker.score_dicts([row])[0]))


@pytest.mark.parametrize("bad", [
    {"format": "explore-ranker/2", "features": ["a"], "trees": [{"split": [0], "threshold": [0.5], "left": [5],
                                                                 "right": [6], "value": [0.0]}]},
    {"format": "explore-ranker/2", "features": ["a"], "trees": [{"split": [3, -1, -1], "threshold": [0, 0, 0],
                                                                 "left": [1, -1, -1], "right": [2, -1, -1],
                                                                 "value": [0, 1, 2]}]},
    {"format": "explore-ranker/2", "features": ["a"], "trees": [{"split": [-1]}]},
    {"format": "pickle"},
    [1, 2, 3],
])
def test_a_bad_ranker_file_is_refused_naming_it(tmp_path: Path, bad: object) -> None:
    path = tmp_path / "ranker.json"
    path.write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(ValueError, match=r"ranker|tree|format"):
        load_ranker(path)


def test_question_words_are_features_of_any_language() -> None:
    f = question_features("Wie viele Schüler, und welche?")
    assert f["qw:wie"] == f["q0:wie"] == f["q1:viele"] == 1.0 and f["qw:schüler"] == 1.0
    assert f["q_commas"] == 1.0 and f["q_len"] == 5.0


def test_train_kg_folder_reading() -> None:
    kgs = list_kgs(TRAIN_KGS)
    assert len(kgs) == 4
    per_kg = read_questions(TRAIN_KGS)
    assert all(per_kg[kg] for kg in kgs)
    assert not any(q.trivial for qs in per_kg.values() for q in qs)
    assert is_trivial({"head": {"vars": ["n"]}, "results": {"bindings": [{"n": {"type": "literal", "value": "0"}}]}})
    assert not is_trivial({"boolean": False})


def test_relevance_levels() -> None:
    assert (relevance(1.0), relevance(0.6), relevance(0.1)) == (2, 1, 0)


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict]:
    pytest.importorskip("lightgbm")
    work = tmp_path_factory.mktemp("train-kgs")
    out = work / "ranker.json"
    proc = subprocess.run([sys.executable, "-m", "kbqa.cli", "train", "--ranker", "--train-kgs", str(TRAIN_KGS),
                           "--per-kg", "6", "--work", str(work), "--out", str(out), "--folds", "2",
                           "--rounds", "40", "--format", "json"], capture_output=True, text=True, env=ENV,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return work, out, json.loads(proc.stdout)


def test_kbqa_train_ranker_fits_trees_from_train_kgs(fitted: tuple[Path, Path, dict]) -> None:
    work, out, report = fitted
    assert report["questions"] == 24 and report["kgs"] == 4
    assert report["kfold"]["folds"] == 2 and 0.0 <= report["kfold"]["accuracy"] <= report["kfold"]["oracle"]
    ranker = load_ranker(out)
    assert isinstance(ranker, TreeRanker) and len(ranker.trees) == 40
    assert "train-kgs" in ranker.meta["command"] and ranker.meta["fitted_on"]["kgs"] == 4
    rows = read_candidates(work / "candidates.jsonl")
    # every candidate carries its shape, so the structure prior enters the trees set out of fold by KG
    assert all(c["shape"] for r in rows for c in r["candidates"])
    assert ranker.meta["struct_prior"].startswith("out of fold") and report["kfold"]["struct_prior"] == "out of fold"
    assert report["struct_prior"] == ranker.meta["struct_prior"]
    assert len(rows) == 24 and top1(ranker, rows)["accuracy"] <= top1(ranker, rows)["oracle"]
    # a rerun finds every question in the candidates file and generates nothing again
    before = (work / "candidates.jsonl").stat().st_size
    again = kfold_by_kg(rows, folds=2, rounds=10)
    assert again["n"] == 24 and (work / "candidates.jsonl").stat().st_size == before
    # fitted on every question, scored on each held-out KG's first 2: 4 KGs x 2 questions, the others unpicked
    first = kfold_by_kg(rows, folds=2, rounds=10, score_first=2)
    scored = set(first_per_kg(rows, 2))
    assert first["n"] == 8 and len(scored) == 8
    assert all((p >= 0) == (i in scored and bool(rows[i]["candidates"])) for i, p in enumerate(first["picks"]))
    assert len(first_per_kg(rows, None)) == 24


def test_some_questions_searched_again_are_spliced_into_the_candidates(fitted: tuple[Path, Path, dict]) -> None:
    work, _out, _report = fitted
    base = read_candidates(work / "candidates.jsonl")
    ids = [base[0]["id"], base[-1]["id"]]
    (work / "ids.json").write_text(json.dumps(ids), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "bench.explore_resample", "--train-kgs", str(TRAIN_KGS), "--work",
                           str(work), "--ids", str(work / "ids.json"), "--out", str(work / "again.jsonl"),
                           "--base", str(work / "candidates.jsonl"), "--spliced", str(work / "spliced.jsonl")],
                          capture_output=True, text=True, env=ENV, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads(proc.stdout)
    assert summary["searched"] == 2 and summary["replaced_in_base"] == 2
    again = {r["id"]: r for r in read_candidates(work / "again.jsonl")}
    spliced = read_candidates(work / "spliced.jsonl")
    assert [r["id"] for r in spliced] == [r["id"] for r in base]  # same questions, same order
    assert all(r == again[r["id"]] for r in spliced if r["id"] in again)
    assert all(r == b for r, b in zip(spliced, base, strict=True) if r["id"] not in again)
    # a bad id list is a usage error, with no traceback
    (work / "bad.json").write_text("{", encoding="utf-8")
    bad = subprocess.run([sys.executable, "-m", "bench.explore_resample", "--train-kgs", str(TRAIN_KGS), "--ids",
                          str(work / "bad.json"), "--out", str(work / "x.jsonl")], capture_output=True, text=True,
                         env=ENV, timeout=120, cwd=ROOT)
    assert bad.returncode == 2 and "not a JSON list" in bad.stderr and "Traceback" not in bad.stderr


def test_the_oracle_in_the_rankers_order_reads_its_first_k() -> None:
    from kbqa.training.ranker_fit import summarise

    rows = [{"candidates": [{"f1": 0.0}, {"f1": 0.0}, {"f1": 1.0}]},  # right one third in the file, first ranked
            {"candidates": [{"f1": 1.0}, {"f1": 0.0}, {"f1": 0.0}]},  # right one first in the file, last ranked
            {"candidates": []}]
    got = summarise(rows, [2, 1, -1], k=2, ranked=[[2, 1, 0], [1, 2, 0], []])
    assert got["accuracy"] == pytest.approx(1 / 3, abs=1e-4) and got["oracle"] == pytest.approx(2 / 3, abs=1e-4)
    assert got["oracle@2"] == pytest.approx(1 / 3, abs=1e-4) and got["ranked_oracle@2"] == pytest.approx(1 / 3, abs=1e-4)
    assert "ranked_oracle@2" not in summarise(rows, [2, 1, -1], k=2)  # no order given: not reported


def test_a_large_kg_weighs_as_the_cap() -> None:
    d = Dataset(["f"], np.zeros((9, 1)), np.zeros(9), [2, 3, 2, 2], [], ["big", "big", "big", "small"])
    w = kg_weights(d, 2)
    assert w.shape == (9,)
    assert np.allclose(w[:7], 2 / 3) and np.allclose(w[7:], 1.0)  # 3 questions of "big" weigh as 2
    assert np.allclose(kg_weights(d, 3), 1.0)  # no KG above the cap: every question weighs 1


def test_a_named_kg_or_set_weighs_what_it_is_given() -> None:
    d = Dataset(["f"], np.zeros((9, 1)), np.zeros(9), [2, 3, 2, 2], [], ["big", "big", "big", "small"])
    w = kg_weights(d, None, {"small": 3.0})
    assert np.allclose(w[:7], 1.0) and np.allclose(w[7:], 3.0)
    both = kg_weights(d, 2, {"big": 0.5})  # the cap and the weight multiply
    assert np.allclose(both[:7], 1 / 3) and np.allclose(both[7:], 1.0)


def test_a_weight_of_one_fits_the_same_trees_and_an_unknown_name_is_refused(fitted: tuple[Path, Path, dict]) -> None:
    work, _out, _report = fitted
    rows = read_candidates(work / "candidates.jsonl")
    kg = rows[0]["kg"]
    plain, weighed = fit(rows, rounds=10), fit(rows, rounds=10, weights={kg: 1.0})
    assert weighed.meta["weights"] == {kg: 1.0} and "weights" not in plain.meta
    feats = [c["features"] for r in rows for c in r["candidates"]]
    assert np.allclose(plain.score_dicts(feats), weighed.score_dicts(feats))
    with pytest.raises(KBQAError, match="no-such-set"):
        fit(rows, rounds=10, weights={"no-such-set": 2.0})


def test_a_cap_above_every_kg_fits_the_same_trees(fitted: tuple[Path, Path, dict]) -> None:
    work, _out, _report = fitted
    rows = read_candidates(work / "candidates.jsonl")
    plain, capped = fit(rows, rounds=10), fit(rows, rounds=10, kg_cap=100)
    assert capped.meta["kg_cap"] == 100 and "kg_cap" not in plain.meta
    feats = [c["features"] for r in rows for c in r["candidates"]]
    assert np.allclose(plain.score_dicts(feats), capped.score_dicts(feats))
    small = fit(rows, rounds=10, kg_cap=1)  # each KG weighs as one question: another fit
    assert not np.allclose(plain.score_dicts(feats), small.score_dicts(feats))


def test_several_seeds_score_as_the_mean_of_each_seeds_fit(fitted: tuple[Path, Path, dict]) -> None:
    work, _out, _report = fitted
    rows = read_candidates(work / "candidates.jsonl")
    feats = [c["features"] for r in rows for c in r["candidates"]]
    first = DEFAULT_PARAMS["seed"]
    singles = [fit(rows, rounds=10, params={"seed": first + s}) for s in range(3)]
    averaged = fit(rows, rounds=10, seeds=3)
    assert len(averaged.trees) == 30 and averaged.meta["seeds"] == [first, first + 1, first + 2]
    assert singles[0].meta["seeds"] == [first]
    mean = np.mean([r.score_dicts(feats) for r in singles], axis=0)
    assert np.allclose(averaged.score_dicts(feats), mean)
    # the seeds differ in what each tree's bagging sampled: the single fits are not one fit thrice
    assert not np.allclose(singles[0].score_dicts(feats), singles[1].score_dicts(feats))
    # kept as one plain trees file: read back, it scores the same
    again = TreeRanker.from_dict(json.loads(json.dumps(averaged.to_dict())))
    assert np.allclose(again.score_dicts(feats), averaged.score_dicts(feats))


def test_a_store_ranker_wins_and_explain_names_it(fitted: tuple[Path, Path, dict], tmp_path: Path) -> None:
    _work, out, _report = fitted
    store = tmp_path / "loan"
    ingest([TRAIN_KGS / "loan_1.nt.gz"], store, profile="generic", progress=False)
    own = StoreLayout.of(store).current / "ranker.json"
    own.write_bytes(out.read_bytes())
    proc = subprocess.run([sys.executable, "-m", "kbqa.cli", "ask", "How many customers are there?", "--store",
                           str(store), "--backend", "explore", "--explain"], capture_output=True, text=True, env=ENV,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"ranker: trees, {own}" in proc.stdout
    assert "== candidates" in proc.stdout


def test_the_shipped_ranker_is_fitted_trees_that_say_what_they_were_fitted_on() -> None:
    ranker = load_ranker()
    assert isinstance(ranker, TreeRanker) and ranker.source.endswith("explore/rank/ranker.json")
    assert ranker.meta["learner"].startswith("lightgbm") and "--train-kgs" in ranker.meta["command"]
    assert ranker.meta["fitted_on"]["kgs"] > 100 and len(ranker.trees) >= 100
    # the LightGBM settings it was fitted with are the fit's defaults, written down (a refit reproduces it)
    assert ranker.meta["params"] == {k: v for k, v in DEFAULT_PARAMS.items()
                                     if k not in ("verbosity", "num_threads", "seed")}
    # question words are learned features, and the structure prior is one, read out of fold by KG when fitted (the
    # prior is fitted on the same questions)
    assert any(n.startswith("qw:") for n in ranker.names) and "struct_prior" in ranker.names
    assert ranker.meta["struct_prior"].startswith("out of fold") and "prior_columns" in ranker.names
