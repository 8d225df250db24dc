"""A fitted ranker for `explore`'s candidates: gradient-boosted regression trees kept as plain JSON.

`kbqa train --ranker` fits the trees with LightGBM (LambdaRank, grouped by question) on the train KGs'
candidate lists and writes them in the format below; answering reads them with numpy alone, so the query path
needs no learner installed. A file is data: loading it reads numbers and names, never code.

    {"format": "explore-ranker/2", "features": [name, ...], "base": float,
     "trees": [{"split": [int], "threshold": [float], "left": [int], "right": [int], "value": [float]}, ...],
     "meta": {what it was fitted on, with which command}}

Node `i` of a tree is a leaf when `split[i] < 0` (its score `value[i]`); otherwise a candidate goes to
`left[i]` when its feature `features[split[i]]` is `<= threshold[i]`, else to `right[i]`. An inner node's
`value` is the mean score below it, so a candidate's path through a tree splits its score into per-feature
contributions (the change at each split is credited to the split's feature), which `--explain` shows.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kb_dumps.json_types import JsonObject
from kbqa.translators.explore.features.listwise import with_list_features
from kbqa.translators.explore.features.structure import graph_features
from kbqa.translators.explore.query import Graph

TREES_FORMAT = "explore-ranker/2"


@dataclass
class Tree:
    split: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray

    @classmethod
    def from_dict(cls, d: JsonObject, n_features: int) -> Tree:
        t = cls(np.asarray(d["split"], dtype=np.int64), np.asarray(d["threshold"], dtype=np.float64),
                np.asarray(d["left"], dtype=np.int64), np.asarray(d["right"], dtype=np.int64),
                np.asarray(d["value"], dtype=np.float64))
        n = len(t.split)
        if not n or any(len(a) != n for a in (t.threshold, t.left, t.right, t.value)):
            raise ValueError("a tree's node arrays differ in length")
        inner = t.split >= 0
        if (t.split[inner] >= n_features).any() or (t.left[inner] >= n).any() or (t.right[inner] >= n).any() \
                or (t.left[inner] <= np.flatnonzero(inner)).any() or (t.right[inner] <= np.flatnonzero(inner)).any():
            raise ValueError("a tree names a feature or node that is not there (children must come after parents)")
        return t

    def to_dict(self) -> dict[str, list[int] | list[float]]:
        return {"split": self.split.tolist(), "threshold": self.threshold.tolist(), "left": self.left.tolist(),
                "right": self.right.tolist(), "value": self.value.tolist()}

    def path_contributions(self, x: np.ndarray, out: np.ndarray) -> None:
        node = 0
        while self.split[node] >= 0:
            f = self.split[node]
            child = self.left[node] if x[f] <= self.threshold[node] else self.right[node]
            out[f] += self.value[child] - self.value[node]
            node = child


@dataclass
class TreeRanker:
    """Scores candidates with the trees; `features(g)` is the named feature dict the trees read."""

    names: list[str]
    trees: list[Tree]
    base: float = 0.0
    meta: JsonObject = field(default_factory=dict)
    source: str = ""  # the file it was read from ("": built in memory)

    def __post_init__(self) -> None:
        self._index = {n: i for i, n in enumerate(self.names)}
        self._pack()

    def _pack(self) -> None:
        """All trees' nodes in one set of arrays (children shifted to absolute indices), so scoring walks every tree
        for every candidate at once: one numpy step per tree level instead of one per level of each tree."""
        sizes = [len(t.split) for t in self.trees]
        offsets = np.cumsum([0, *sizes[:-1]]).astype(np.int64)
        self._roots = offsets
        if not self.trees:
            return
        self._split = np.concatenate([t.split for t in self.trees])
        self._threshold = np.concatenate([t.threshold for t in self.trees])
        self._value = np.concatenate([t.value for t in self.trees])
        self._left = np.concatenate([np.where(t.split >= 0, t.left + o, -1) for t, o in zip(self.trees, offsets,
                                                                                             strict=True)])
        self._right = np.concatenate([np.where(t.split >= 0, t.right + o, -1) for t, o in zip(self.trees, offsets,
                                                                                               strict=True)])

    def features(self, g: Graph) -> dict[str, float]:
        return graph_features(g)

    def matrix(self, feats: list[dict[str, float]]) -> np.ndarray:
        x = np.zeros((len(feats), len(self.names)))
        for r, f in enumerate(feats):
            for k, v in f.items():
                i = self._index.get(k)
                if i is not None:
                    x[r, i] = v
        return x

    def score_dicts(self, feats: list[dict[str, float]]) -> np.ndarray:
        """Scores of one question's candidates given as named feature dicts (features the trees do not use are
        ignored; the listwise `d:*` are added here, read against these candidates)."""
        x = self.matrix(with_list_features(feats))
        if not self.trees or not feats:
            return np.full(len(feats), self.base)
        node = np.repeat(self._roots[:, None], len(feats), axis=1)  # (trees, candidates)
        rows = np.arange(len(feats))[None, :]
        while True:
            feat = self._split[node]
            inner = feat >= 0
            if not inner.any():
                break
            go_left = x[rows, np.where(inner, feat, 0)] <= self._threshold[node]
            node = np.where(inner, np.where(go_left, self._left[node], self._right[node]), node)
        return self.base + self._value[node].sum(axis=0)

    def score_all(self, graphs: list[Graph]) -> list[float]:
        return self.score_dicts([self.features(g) for g in graphs]).tolist() if graphs else []

    def score(self, g: Graph) -> float:
        return self.score_all([g])[0]

    def contributions(self, g: Graph, top: int = 5, among: list[Graph] | None = None) -> dict[str, float]:
        """The features that moved this candidate's score most (signed), largest first; `among`: the candidates it
        was ranked with (the listwise `d:*` read it against them; alone, it is its own best)."""
        return self.explainer([g] + [h for h in among or [] if h is not g], top)(g)

    def explainer(self, graphs: list[Graph], top: int = 5) -> Callable[[Graph], dict[str, float]]:
        """`contributions` for each of `graphs` (one question's candidates), their features computed once."""
        feats = with_list_features([self.features(h) for h in graphs])
        rows = {id(h): x for h, x in zip(graphs, self.matrix(feats), strict=True)}

        def contributions(g: Graph) -> dict[str, float]:
            x = rows[id(g)] if id(g) in rows else self.matrix(with_list_features([self.features(g)]))[0]
            out = np.zeros(len(self.names))
            for t in self.trees:
                t.path_contributions(x, out)
            order = np.argsort(-np.abs(out))[:top]
            return {self.names[i]: round(float(out[i]), 4) for i in order if out[i] != 0.0}

        return contributions

    def to_dict(self) -> JsonObject:
        return {"format": TREES_FORMAT, "features": self.names, "base": self.base,
                "trees": [t.to_dict() for t in self.trees], "meta": self.meta}

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), separators=(",", ":")) + "\n", encoding="utf-8")

    @classmethod
    def from_dict(cls, d: JsonObject) -> TreeRanker:
        if d.get("format") != TREES_FORMAT:
            raise ValueError(f"not explore ranker trees (format {d.get('format')!r}, expected {TREES_FORMAT})")
        names = [str(n) for n in d.get("features", [])]
        try:
            trees = [Tree.from_dict(t, len(names)) for t in d.get("trees", [])]
        except (KeyError, TypeError) as e:
            raise ValueError(f"a tree lacks a field: {e}") from None
        return cls(names, trees, float(d.get("base", 0.0)), dict(d.get("meta", {})))
