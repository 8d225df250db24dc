"""Fit `explore`'s tree ranker from a candidates file (ranker_data.py) with LightGBM, and score it k-fold by KG.

LambdaRank over each question's candidate list: relevance 2 when the candidate's answers equal the gold
answers (F1 = 1), 1 when they overlap well (F1 ≥ 0.5), else 0. Questions whose candidates are all equally
right or wrong teach nothing and are left out of fitting (they still count when scoring). The vocabulary of
question words is learned too: a word enters as a feature only when at least `min_word_count` train questions
use it. The model is converted to the plain-JSON trees of `kbqa/translators/explore/rank/trees.py`, so answering
needs numpy only; LightGBM is needed for fitting (the `train` extra).

`struct_prior` and `prior_<part>`, the structure prior's P(the candidate's shape / columns / DISTINCT / order /
aggregate | the question), come from a prior itself fitted on the Spider train questions: given the prior's train
pairs (`prior_examples`), each question's values are set out of fold by KG (ranker_prior.py) and the trees read
them; without them they are left out (in-sample they would read their own labels).
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np

from kb_dumps.json_types import JsonObject
from kb_dumps.stage_errors import KBQAError
from kbqa.training.ranker_data import iter_groups
from kbqa.training.ranker_prior import fold_of_kgs, has_shapes, out_of_fold, with_prior
from kbqa.training.structure_prior import Example, fit_all
from kbqa.translators.explore.features.parts import PARTS
from kbqa.translators.explore.features.roles import ROLE_PREFIXES
from kbqa.translators.explore.rank.rankers import AnyRanker
from kbqa.translators.explore.rank.trees import Tree, TreeRanker

LEFT_OUT = ("struct_prior", *(f"prior_{part}" for part in PARTS))
LgbParams: TypeAlias = dict[str, str | int | float | bool]  # LightGBM training parameters
# chosen by 5-fold by KG on 3,492 train-KG questions (BENCHMARKS.md, issue 22): 31 leaves / 50 a leaf / 500 rounds
# 0.585, against 0.568 for 15 / 20 / 300, 0.583 for 63 leaves, 0.580 with truncation 60, 0.542 for rank_xendcg;
# checked again on the sixteenth pass's candidates (`bench.explore_train --param`): feature fraction 0.3 / 0.5, 1,000
# rounds, truncation 50 all within the seed's own spread (0.695 / 0.7005 for seeds 7 / 8), so unchanged
DEFAULT_PARAMS: LgbParams = {
    "objective": "lambdarank", "learning_rate": 0.05, "num_leaves": 31, "min_data_in_leaf": 50,
    "feature_fraction": 0.8, "bagging_fraction": 0.8, "bagging_freq": 1, "lambda_l2": 1.0,
    "lambdarank_truncation_level": 20, "verbosity": -1, "num_threads": 2, "seed": 7, "deterministic": True,
}
DEFAULT_ROUNDS = 500
DEFAULT_SEEDS = 1  # boosters averaged (`fit(seeds=)`)
WORD_PREFIXES = ("qw:", "q0:", "q1:", *ROLE_PREFIXES)  # features named by a word: kept when enough questions have them
PRIOR_FOLDS = 5  # folds by KG for the out-of-fold structure prior


def relevance(f1: float) -> int:
    return 2 if f1 >= 0.999 else 1 if f1 >= 0.5 else 0


@dataclass
class Dataset:
    names: list[str]
    x: np.ndarray
    y: np.ndarray
    groups: list[int]  # candidates per question, in row order
    rows: list[JsonObject]  # the questions (with or without candidates)
    kgs: list[str]  # each group's KG


def vocabulary(rows: list[JsonObject], min_word_count: int, left_out: tuple[str, ...] = LEFT_OUT) -> list[str]:
    """Feature names: every non-word feature seen but `left_out`, and the word features (the question's words,
    the role words of features/roles.py) of words at least `min_word_count` questions have."""
    words: Counter[str] = Counter()
    other: set[str] = set()
    for _r, feats, _f1 in iter_groups(rows):
        seen: set[str] = set()
        for f in feats:
            for k in f:
                if k.startswith(WORD_PREFIXES):
                    seen.add(k)
                elif k not in left_out:
                    other.add(k)
        words.update(seen)
    return sorted(other) + sorted(k for k, n in words.items() if n >= min_word_count)


def make_dataset(rows: list[JsonObject], names: list[str]) -> Dataset:
    """The feature matrix of every question's candidates, float32 and filled in place: 5,352 train questions with
    ~140 candidates each and a few thousand word features no longer need the float64 blocks and their stacked copy
    (a fit on all train KGs went past 24 GB)."""
    index = {n: i for i, n in enumerate(names)}
    total = sum(len(feats) for _row, feats, _f1s in iter_groups(rows))
    x = np.zeros((total, len(names)), dtype=np.float32)
    ys, groups, kgs = [], [], []
    at = 0
    for row, feats, f1s in iter_groups(rows):
        if not feats:
            continue
        kgs.append(str(row.get("kg", "")))
        for r, f in enumerate(feats):
            for k, v in f.items():
                i = index.get(k)
                if i is not None:
                    x[at + r, i] = v
        at += len(feats)
        ys.append(np.array([relevance(v) for v in f1s]))
        groups.append(len(feats))
    if not groups:
        return Dataset(names, np.zeros((0, len(names)), dtype=np.float32), np.zeros(0), [], rows, [])
    return Dataset(names, x, np.concatenate(ys), groups, rows, kgs)


def _informative(d: Dataset) -> Dataset:
    """Only the questions whose candidates differ in relevance."""
    keep_x, keep_y, keep_g, keep_k = [], [], [], []
    start = 0
    for n, kg in zip(d.groups, d.kgs, strict=True):
        y = d.y[start:start + n]
        if y.max() > y.min():
            keep_x.append(d.x[start:start + n])
            keep_y.append(y)
            keep_g.append(n)
            keep_k.append(kg)
        start += n
    if not keep_x:
        raise KBQAError("no train question has both a right and a wrong candidate: nothing to learn from",
                        stage="usage")
    return Dataset(d.names, np.vstack(keep_x), np.concatenate(keep_y), keep_g, d.rows, keep_k)


def kg_weights(d: Dataset, cap: int | None, by_kg: dict[str, float] | None = None) -> np.ndarray:
    """Per-candidate weights under which a KG with more than `cap` informative questions weighs as `cap` of them
    (each of its questions `cap / n`): a few large KGs do not decide what the trees learn; and each question of a
    KG or set named in `by_kg` weighs that much more (a question style the train KGs hardly hold, SimpleQuestions'
    one-hop questions, is not outvoted by them)."""
    per_kg = Counter(d.kgs)
    by_kg = by_kg or {}
    return np.concatenate([np.full(n, (min(1.0, cap / per_kg[kg]) if cap else 1.0) * by_kg.get(kg, 1.0))
                           for n, kg in zip(d.groups, d.kgs, strict=True)])


def fit(rows: list[JsonObject], *, rounds: int = DEFAULT_ROUNDS, min_word_count: int = 20,
        params: LgbParams | None = None, meta: JsonObject | None = None,
        prior_examples: list[Example] | None = None, kg_cap: int | None = None,
        weights: dict[str, float] | None = None, seeds: int = DEFAULT_SEEDS) -> TreeRanker:
    """The fitted trees (`kg_cap`: a KG's questions beyond that many weigh together as that many; `weights`: what
    each question of a KG or set weighs; `kg_weights`). With `seeds` > 1, that many boosters differing only in
    LightGBM's seed (which rows and features each tree's bagging samples) are fitted and their scores averaged:
    one ranker whose trees are all of theirs, each leaf divided by `seeds`."""
    try:
        import lightgbm as lgb
    except ImportError:
        raise KBQAError("fitting the tree ranker needs LightGBM: pip install 'kbqa[train]'", stage="usage") from None
    left_out = LEFT_OUT
    prior_note = "left out (no prior train pairs, or candidates without shape labels)"
    if prior_examples and has_shapes(rows):
        rows, left_out = out_of_fold(rows, prior_examples, PRIOR_FOLDS), ()
        prior_note = f"out of fold ({PRIOR_FOLDS} folds by KG, {len(prior_examples)} prior train pairs)"
    names = vocabulary(rows, min_word_count, left_out)
    data = _informative(make_dataset(rows, names))
    p = {**DEFAULT_PARAMS, **(params or {})}
    p["min_data_in_leaf"] = max(1, min(int(p["min_data_in_leaf"]), len(data.y) // 10 or 1))
    unknown = sorted(set(weights or {}) - {str(r.get("kg", "")) for r in rows})
    if unknown:
        raise KBQAError(f"--weight names {', '.join(unknown)}: no candidates file holds questions of it", stage="usage")
    weight = kg_weights(data, kg_cap, weights) if kg_cap or weights else None
    dataset = lgb.Dataset(data.x, data.y, group=data.groups, weight=weight, feature_name=_safe(names),
                          free_raw_data=False)
    first_seed = int(p["seed"])
    trees: list[Tree] = []
    for s in range(seeds):
        booster = lgb.train({**p, "seed": first_seed + s}, dataset, num_boost_round=rounds)
        trees += from_lightgbm(booster.dump_model(), names, {}).trees
    info = {"fitted_on": {"questions": len(rows), "informative": len(data.groups), "candidates": int(len(data.y)),
                          "kgs": len({r["kg"] for r in rows})},
            "learner": f"lightgbm {lgb.__version__} lambdarank", "rounds": rounds, "min_word_count": min_word_count,
            "params": {k: v for k, v in p.items() if k not in ("verbosity", "num_threads", "seed")},
            "seeds": list(range(first_seed, first_seed + seeds)),
            **({"kg_cap": kg_cap} if kg_cap else {}), **({"weights": dict(weights)} if weights else {}),
            "struct_prior": prior_note,
            **(meta or {})}
    if seeds > 1:
        for t in trees:
            t.value = t.value / seeds
    return TreeRanker(list(names), trees, 0.0, info)


def _safe(names: list[str]) -> list[str]:
    """LightGBM refuses some characters in feature names; the JSON keeps the real ones by position."""
    return [f"f{i}" for i in range(len(names))]


def from_lightgbm(model: JsonObject, names: list[str], meta: JsonObject) -> TreeRanker:
    """LightGBM's `dump_model()` JSON as flat node arrays (children after parents)."""
    trees = []
    for info in model.get("tree_info", []):
        split: list[int] = []
        thr: list[float] = []
        left: list[int] = []
        right: list[int] = []
        value: list[float] = []

        def add(node: JsonObject, split: list[int] = split, thr: list[float] = thr, left: list[int] = left,
                right: list[int] = right, value: list[float] = value) -> int:
            i = len(split)
            split.append(-1)
            thr.append(0.0)
            left.append(-1)
            right.append(-1)
            if "leaf_value" in node:
                value.append(float(node["leaf_value"]))
                return i
            if node.get("decision_type", "<=") != "<=":
                raise KBQAError(f"tree split {node.get('decision_type')!r} is not supported", stage="internal")
            value.append(float(node.get("internal_value", 0.0)))
            split[i] = int(node["split_feature"])
            thr[i] = float(node["threshold"])
            left[i] = add(node["left_child"])
            right[i] = add(node["right_child"])
            return i

        add(info["tree_structure"])
        trees.append(Tree(*(np.asarray(a) for a in (split, thr, left, right, value))))
    return TreeRanker(list(names), trees, 0.0, meta)


def _scores(ranker: AnyRanker, feats: list[dict[str, float]]) -> np.ndarray:
    if isinstance(ranker, TreeRanker):
        return ranker.score_dicts(feats)
    # the linear ranker of explore/rank/rankers.py
    return np.array([ranker.bias + sum(ranker.weights.get(k, 0.0) * v for k, v in f.items()) for f in feats])


def orders(ranker: AnyRanker, rows: list[JsonObject]) -> list[list[int]]:
    """Each question's candidate indices, the ranker's best first (ties in the file's order)."""
    return [np.argsort(-_scores(ranker, feats), kind="stable").tolist() if feats else []
            for _r, feats, _f1 in iter_groups(rows)]


def picks(ranker: AnyRanker, rows: list[JsonObject]) -> list[int]:
    """The index of each question's top candidate (−1: it has none)."""
    return [o[0] if o else -1 for o in orders(ranker, rows)]


def top1(ranker: AnyRanker, rows: list[JsonObject], k: int = 50) -> dict[str, float]:
    """Share of questions whose top candidate's answers equal the gold (no candidate: wrong), mean F1 of the top
    candidate, the oracle over the first `k` candidates in the file's order, in the ranker's order and over all,
    and mean candidates."""
    ranked = orders(ranker, rows)
    return summarise(rows, [o[0] if o else -1 for o in ranked], k, ranked=ranked)


def summarise(rows: list[JsonObject], chosen: list[int], k: int = 50,
              ranked: list[list[int]] | None = None) -> dict[str, float]:
    """Accuracy and F1 of the chosen candidates, the oracle over the first `k` in the file's order (the order the
    search checked them in) and over all; with `ranked` (each question's order by a ranker), also over the
    ranker's first `k` (`ranked_oracle@k`: a right answer the ranker keeps within reach)."""
    hits, f1s, oracle_k, oracle, ranked_k = [], [], [], [], []
    for i, (r, pick) in enumerate(zip(rows, chosen, strict=True)):
        f1 = [float(c["f1"]) for c in r["candidates"]]
        hits.append(1.0 if pick >= 0 and f1[pick] >= 0.999 else 0.0)
        f1s.append(f1[pick] if pick >= 0 else 0.0)
        oracle_k.append(1.0 if any(v >= 0.999 for v in f1[:k]) else 0.0)
        oracle.append(1.0 if any(v >= 0.999 for v in f1) else 0.0)
        if ranked is not None:
            ranked_k.append(1.0 if any(f1[j] >= 0.999 for j in ranked[i][:k]) else 0.0)
    n = len(rows) or 1
    out = {"n": len(rows), "accuracy": round(sum(hits) / n, 4), "f1": round(sum(f1s) / n, 4),
           f"oracle@{k}": round(sum(oracle_k) / n, 4), "oracle": round(sum(oracle) / n, 4),
           "mean_candidates": round(statistics.fmean(len(r["candidates"]) for r in rows), 2) if rows else 0.0}
    if ranked is not None:
        out[f"ranked_oracle@{k}"] = round(sum(ranked_k) / n, 4)
    return out


def first_per_kg(rows: list[JsonObject], n: int | None) -> list[int]:
    """Indices of each KG's first `n` rows in file order (all rows when `n` is None)."""
    seen: Counter[str] = Counter()
    out = []
    for i, r in enumerate(rows):
        seen[r["kg"]] += 1
        if n is None or seen[r["kg"]] <= n:
            out.append(i)
    return out


def kfold_by_kg(rows: list[JsonObject], folds: int = 5, seed: int = 0,
                prior_examples: list[Example] | None = None, score_first: int | None = None,
                **fit_kw: int | LgbParams | dict[str, float] | None) -> JsonObject:
    """Fit on the KGs of k−1 folds, pick on the held-out fold's KGs; the pooled figures and each fold's.
    With `prior_examples`, no prior a fold's questions read was fitted on that fold's KGs (the fit's own
    out-of-fold prior is nested inside the k−1 folds). With `score_first`, every question of the train folds' KGs
    is fitted on but only each held-out KG's first `score_first` questions are scored (the pooled figures are over
    those; picks of the others stay −1): whether more questions a KG help, judged on the same scored questions."""
    fold_of = fold_of_kgs([r["kg"] for r in rows], folds, seed)
    prior_examples = prior_examples if prior_examples and has_shapes(rows) else None
    scored = set(first_per_kg(rows, score_first))
    chosen = [-1] * len(rows)
    ranked: list[list[int]] = [[] for _ in rows]
    per_fold = []
    for k in range(folds):
        test = [i for i, r in enumerate(rows) if fold_of[r["kg"]] == k and i in scored]
        train = [r for r in rows if fold_of[r["kg"]] != k]
        if not test or not train:
            continue
        test_rows = [rows[i] for i in test]
        examples = None
        if prior_examples:
            held = {kg for kg, f in fold_of.items() if f == k}
            examples = [e for e in prior_examples if e[0] not in held]
            test_rows = with_prior(test_rows, fit_all(examples))
        ranker = fit(train, meta={"fold": k}, prior_examples=examples, **fit_kw)
        order = orders(ranker, test_rows)
        got = [o[0] if o else -1 for o in order]
        for i, pick, o in zip(test, got, order, strict=True):
            chosen[i], ranked[i] = pick, o
        per_fold.append(summarise(test_rows, got, ranked=order))
    kept = sorted(scored)
    return {"folds": folds, "kgs": len(fold_of), "struct_prior": "out of fold" if prior_examples else "left out",
            **summarise([rows[i] for i in kept], [chosen[i] for i in kept], ranked=[ranked[i] for i in kept]),
            "per_fold": per_fold, "picks": chosen}
