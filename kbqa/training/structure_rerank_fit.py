"""The `structure` translator's skeleton re-ranker: logistic regression over the chooser's top skeletons of train
questions, stacked (each fold's questions are filled by parts fitted on the other folds; kbqa/training/structure_fit.py
says how it is run)."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from grounding.embedder import get_embedder
from kbqa.training.structure_data import TRAIN_SETS, Example
from kbqa.training.structure_parts_fit import fit_all_parts, write
from kbqa.translators.structure.answer import PROPERTIES_PATH

RERANK_FOLDS = 3
RERANK_SAMPLE = 2100  # held-out questions filled, over all folds
RERANK_C = (0.1, 1.0, 10.0)  # the re-ranker's inverse regularisation, chosen by k-fold over its questions


def examples_key(examples: list[Example]) -> str:
    """A digest of which questions a fit saw (a cached part model is reused only for the same questions)."""
    import hashlib

    return hashlib.sha256("\n".join(sorted(e.id for e in examples)).encode()).hexdigest()[:16]


def read_part_cache(path: Path | None) -> dict[str, Any]:
    """Fold choosers kept by an earlier run: examples key -> chooser (the one-chooser layout of earlier runs too)."""
    if not path or not path.is_file():
        return {}
    with gzip.open(path, "rt", encoding="utf-8") as f:
        cached = json.load(f)
    if "examples_key" in cached:
        return {cached["examples_key"]: cached["skeleton"]}
    return dict(cached.get("choosers") or {})


def reranker_rows(examples: list[Example], store_dir: Path, c: float, say: Any, folds: int = RERANK_FOLDS,
                  part_cache: Path | None = None) -> tuple[list[dict[str, float]], list[int], list[int]]:
    """Stacking: for each fold (by question), chooser, bank and property scorer are fitted on the other folds and a
    sample of the fold's questions is filled by them, so every feature (the chooser's p above all) is what a
    question the models never saw gets. Returns the candidates' features, whether each is the gold skeleton, and
    which question each belongs to."""
    from kb_dumps.label_memory import LabelMemory
    from kb_dumps.layout import StoreLayout
    from kbqa.translators.mentions import MentionDetector, open_lexicon
    from kbqa.translators.structure.answer import MENTION_CANDIDATES, SKELETONS_TRIED, StructureModel

    embedder = get_embedder(None)
    choosers = read_part_cache(part_cache)
    with gzip.open(PROPERTIES_PATH, "rt", encoding="utf-8") as f:
        props = json.load(f)
    rows: list[dict[str, float]] = []
    ys: list[int] = []
    groups: list[int] = []
    per_fold = max(1, RERANK_SAMPLE // folds)
    n_questions = 0
    for k in range(folds):
        rest = [e for i, e in enumerate(examples) if i % folds != k]
        held = [e for i, e in enumerate(examples) if i % folds == k]
        held = held[::max(1, len(held) // per_fold)]
        key = examples_key(rest)
        if key in choosers:
            say(f"fold {k}: skeleton chooser from {part_cache}")
        part = fit_all_parts(rest, store_dir, c, embedder, say, choosers.get(key))
        if part_cache and key not in choosers:
            choosers[key] = part["skeleton"]
            write({"choosers": choosers}, part_cache)
        model = StructureModel(part, props, embedder)
        memory = LabelMemory(StoreLayout.of(store_dir).labels, readonly=True)
        try:
            detector = MentionDetector(open_lexicon(store_dir), memory, model.mention_prior, fuzzy_beside_exact=True)
            for e in held:
                mentions = detector.detect(e.question, max_candidates=MENTION_CANDIDATES)
                for cand in model.candidates(e.question, mentions, SKELETONS_TRIED):
                    if cand.sparql is None:
                        continue
                    rows.append(cand.features)
                    ys.append(int(cand.skeleton == e.skeleton.text))
                    groups.append(n_questions)
                n_questions += 1
        finally:
            memory.close()
        say(f"fold {k}: {len(held)} questions filled, {len(ys)} candidates so far")
    return rows, ys, groups


def pick_first(scores: np.ndarray, ys: np.ndarray, groups: np.ndarray) -> float:
    """Share of questions whose best-scored candidate is the gold skeleton (a question without it counts wrong)."""
    best: dict[int, tuple[float, int]] = {}
    for s, y, g in zip(scores, ys, groups, strict=True):
        if g not in best or s > best[g][0]:
            best[g] = (float(s), int(y))
    return sum(y for _, y in best.values()) / max(len(best), 1)


def fit_reranker(examples: list[Example], store_dir: Path, c: float, log: Any = None,
                 part_cache: Path | None = None, folds: int = RERANK_FOLDS,
                 rows_cache: Path | None = None) -> dict[str, Any]:
    """The skeleton re-ranker: logistic regression over the chooser's top skeletons, each filled, labelled by
    whether it is the gold skeleton, on out-of-fold fills (`reranker_rows`). Its C is chosen by k-fold over those
    questions (grouped by question); the chooser's own first choice on the same questions is printed beside it.
    Features are standardised for the fit and the scale folded back into the weights, so answering reads raw
    values. `part_cache`: where the fold choosers (the slow part) are kept for the next run on the same questions;
    `rows_cache`: where the out-of-fold fills are kept (a later run on the same questions fits from them alone)."""
    from sklearn.linear_model import LogisticRegression

    say = log or (lambda m: print(m, file=sys.stderr, flush=True))
    key = examples_key(examples)
    if rows_cache and rows_cache.is_file():
        with gzip.open(rows_cache, "rt", encoding="utf-8") as f:
            cached = json.load(f)
        if cached.get("examples_key") != key or cached.get("folds") != folds:
            raise ValueError(f"{rows_cache} holds the fills of other questions or folds")
        rows, ys_list, group_list = cached["rows"], cached["gold"], cached["question"]
        say(f"out-of-fold fills from {rows_cache}")
    else:
        rows, ys_list, group_list = reranker_rows(examples, store_dir, c, say, folds, part_cache)
        if rows_cache:
            write({"examples_key": key, "folds": folds, "rows": rows, "gold": ys_list, "question": group_list},
                  rows_cache)
    names = sorted(rows[0]) if rows else []
    x = np.array([[r.get(k, 0.0) for k in names] for r in rows])
    ys, groups = np.array(ys_list), np.array(group_list)
    mu, sd = x.mean(axis=0), x.std(axis=0)
    sd[sd < 1e-9] = 1.0
    xs = (x - mu) / sd
    uniq = sorted(set(group_list))
    fold_of = {g: i % folds for i, g in enumerate(uniq)}
    fold = np.array([fold_of[g] for g in group_list])
    chooser_first = pick_first(-x[:, names.index("rank")], ys, groups)
    cv: dict[float, float] = {}
    for cc in RERANK_C:
        scores = np.zeros(len(ys))
        for k in range(folds):
            clf = LogisticRegression(C=cc, max_iter=3000).fit(xs[fold != k], ys[fold != k])
            scores[fold == k] = clf.decision_function(xs[fold == k])
        cv[cc] = round(pick_first(scores, ys, groups), 4)
    best_c = max(RERANK_C, key=lambda cc: (cv[cc], -cc))
    say(f"re-ranker k-fold skeleton accuracy {cv} vs the chooser's first choice {chooser_first:.4f} "
        f"({len(uniq)} questions); C={best_c}")
    clf = LogisticRegression(C=best_c, max_iter=3000)
    clf.fit(xs, ys)
    w = clf.coef_[0] / sd
    bias = float(clf.intercept_[0] - (clf.coef_[0] * mu / sd).sum())
    weights = {k: round(float(v), 5) for k, v in zip(names, w, strict=True)}
    out = {"weights": weights, "bias": round(bias, 5), "questions": len(uniq), "candidates": len(ys),
           "folds": folds, "c": best_c, "kfold_skeleton_accuracy": cv[best_c],
           "kfold_chooser_first": round(chooser_first, 4),
           "excluded_sets": sorted({e.dataset for e in examples} ^ set(TRAIN_SETS))}
    say(f"skeleton re-ranker: {out}")
    return out
