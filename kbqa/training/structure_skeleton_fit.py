"""Fit the skeleton chooser: multinomial logistic regression over the question's static embedding + words/bigrams.

Fitted with scikit-learn (training only) and written as plain JSON (`structure-skeleton/1`): the class list, the
vocabulary, the embedding weights and the word weights, which kbqa/translators/structure/model.py applies with numpy.
A skeleton seen fewer than MIN_COUNT times is not a class (it cannot be learned; its questions are left out).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from grounding.embedder import get_embedder
from kbqa.training.structure_data import Example
from kbqa.translators.structure.features import sparse_features

MIN_COUNT = 3
MIN_FEATURE_COUNT = 2
EMB_SCALE = 4.0  # unit vectors spread over 256 dims: scaled so their weights need no larger steps than words'


def design(questions: list[str], vocab: dict[str, int], emb: np.ndarray, extras: list[tuple[str, ...]]) -> Any:
    from scipy import sparse

    rows, cols = [], []
    for i, (q, extra) in enumerate(zip(questions, extras, strict=True)):
        for f in sparse_features(q, extra):
            j = vocab.get(f)
            if j is not None:
                rows.append(i)
                cols.append(j)
    bow = sparse.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)), shape=(len(questions), len(vocab)))
    return sparse.hstack([sparse.csr_matrix(emb * EMB_SCALE), bow]).tocsr()


def fit_skeleton_model(examples: list[Example], c: float = 2.0, embedder: Any = None,
                       extras: dict[str, tuple[str, ...]] | None = None) -> dict[str, Any]:
    """The fitted chooser as a JSON-ready dict (`extras`: example id -> its mention features)."""
    from sklearn.linear_model import LogisticRegression

    embedder = embedder or get_embedder(None)
    counts = Counter(e.skeleton.text for e in examples)
    classes = sorted(s for s, n in counts.items() if n >= MIN_COUNT)
    index = {s: i for i, s in enumerate(classes)}
    train = [e for e in examples if e.skeleton.text in index]
    ex_feats = [(extras or {}).get(e.id, ()) for e in train]
    feat_counts = Counter(f for e, x in zip(train, ex_feats, strict=True) for f in sparse_features(e.question, x))
    vocab = {f: i for i, f in enumerate(sorted(f for f, n in feat_counts.items() if n >= MIN_FEATURE_COUNT))}
    questions = [e.question for e in train]
    emb = embedder.encode(questions)
    x = design(questions, vocab, emb, ex_feats)
    y = np.array([index[e.skeleton.text] for e in train])
    clf = LogisticRegression(C=c, max_iter=150)
    clf.fit(x, y)
    coef = clf.coef_.astype(np.float64)
    if len(classes) == 2:  # sklearn's binary case: one row; make it two (scores for both classes)
        coef = np.vstack([-coef[0] / 2, coef[0] / 2])
        intercept = np.array([-clf.intercept_[0] / 2, clf.intercept_[0] / 2])
    else:
        intercept = clf.intercept_
    dim = emb.shape[1]
    w_emb = coef[:, :dim] * EMB_SCALE
    w_bow = coef[:, dim:]
    keep = np.abs(w_bow).max(axis=0) >= 1e-3  # words with no weight on any class are dropped
    feats = [f for f, j in sorted(vocab.items(), key=lambda kv: kv[1]) if keep[j]]
    return {
        "format": "structure-skeleton/1",
        "embedder": embedder.name,
        "c": c,
        "classes": classes,
        "counts": [counts[s] for s in classes],
        "bias": [round(float(v), 4) for v in intercept],
        "w_emb": [[round(float(v), 4) for v in row] for row in w_emb],
        "words": {f: [round(float(v), 4) for v in w_bow[:, vocab[f]]] for f in feats},
    }


def kfold_accuracy(examples: list[Example], c: float, folds: int = 3, embedder: Any = None,
                   score_on: set[str] | None = None, extras: dict[str, tuple[str, ...]] | None = None) -> float:
    """Skeleton accuracy of a fit with `c`, by k-fold over the examples (by question; `score_on`: datasets scored)."""
    from kbqa.translators.structure.model import SkeletonModel

    embedder = embedder or get_embedder(None)
    hits = total = 0
    for k in range(folds):
        train = [e for i, e in enumerate(examples) if i % folds != k]
        test = [e for i, e in enumerate(examples) if i % folds == k and (score_on is None or e.dataset in score_on)]
        model = SkeletonModel(fit_skeleton_model(train, c, embedder, extras), embedder)
        preds = model.predict_many([e.question for e in test], extras=[(extras or {}).get(e.id, ()) for e in test])
        hits += sum(p[0][0] == e.skeleton.text for p, e in zip(preds, test, strict=True))
        total += len(test)
    return hits / total if total else 0.0
