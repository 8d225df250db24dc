"""The fitted skeleton chooser applied with numpy: scores = W_emb · embedding + Σ word weights + bias, softmax."""

from __future__ import annotations

from typing import Any

import numpy as np

from kbqa.translators.structure.features import sparse_features


class SkeletonModel:
    """A `structure-skeleton/1` model (kbqa/training/structure_skeleton_fit.py) over the static embedder."""

    def __init__(self, data: dict[str, Any], embedder: Any):
        if data.get("format") != "structure-skeleton/1":
            raise ValueError(f"not a structure-skeleton/1 model: {data.get('format')!r}")
        self.classes: list[str] = list(data["classes"])
        self.counts: list[int] = list(data.get("counts") or [0] * len(self.classes))
        self.bias = np.asarray(data["bias"], dtype=np.float32)
        self.w_emb = np.asarray(data["w_emb"], dtype=np.float32)
        self.words = {f: np.asarray(v, dtype=np.float32) for f, v in data["words"].items()}
        self.embedder = embedder

    def scores(self, question: str, vector: np.ndarray | None = None, extra: tuple[str, ...] = ()) -> np.ndarray:
        """Class probabilities for one question (`vector`: its embedding when already computed; `extra`: its
        mention features)."""
        v = self.embedder.encode_one(question) if vector is None else vector
        z = self.w_emb @ v + self.bias
        for f in sparse_features(question, extra):
            w = self.words.get(f)
            if w is not None:
                z = z + w
        z = z - z.max()
        p = np.exp(z)
        return p / p.sum()

    def predict(self, question: str, top: int = 5, vector: np.ndarray | None = None,
                extra: tuple[str, ...] = ()) -> list[tuple[str, float]]:
        p = self.scores(question, vector, extra)
        order = np.argsort(-p)[:top]
        return [(self.classes[i], float(p[i])) for i in order]

    def predict_many(self, questions: list[str], top: int = 5,
                     extras: list[tuple[str, ...]] | None = None) -> list[list[tuple[str, float]]]:
        vectors = self.embedder.encode(questions)
        extras = extras or [()] * len(questions)
        return [self.predict(q, top, v, x) for q, v, x in zip(questions, vectors, extras, strict=True)]
