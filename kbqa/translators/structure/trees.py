"""Gradient-boosted trees kept as plain JSON and applied with numpy (the structure translator's fitted scorers).

kbqa/training/structure_fit.py fits them with LightGBM and writes them with `trees_to_json` in this format:

    {"format": "structure-trees/1", "features": [name, ...], "base": float, "depth": int,
     "feature": [[int, ...], ...], "threshold": [[float, ...], ...], "left": [[int, ...], ...],
     "right": [[int, ...], ...], "value": [[float, ...], ...]}

one row per tree, nodes numbered from the root (0). A leaf is a node whose `left` and `right` are itself with an
infinite threshold, so every row walks exactly `depth` steps: all trees and rows move together, one numpy step per
level (a few milliseconds for a slot's candidates). A row goes left when its `features[feature]` value is
`<= threshold`. The file is data: reading it reads numbers and names, never code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from kb_dumps.json_types import JsonObject, JsonValue

TREES_FORMAT = "structure-trees/1"


def _list(v: JsonValue) -> list[JsonValue]:
    if not isinstance(v, list):
        raise ValueError(f"expected a JSON list, got {type(v).__name__}")
    return v


def _obj(v: JsonValue) -> JsonObject:
    if not isinstance(v, dict):
        raise ValueError(f"expected a JSON object, got {type(v).__name__}")
    return v


def _num(v: JsonValue) -> float:
    if not isinstance(v, int | float) or isinstance(v, bool):
        raise ValueError(f"expected a number, got {v!r}")
    return float(v)


class Trees:
    """A sum of regression trees over named features (`score(rows)` -> one raw score per row)."""

    def __init__(self, data: JsonObject):
        if data.get("format") != TREES_FORMAT:
            raise ValueError(f"not a {TREES_FORMAT} model: {data.get('format')!r}")
        self.features = [str(f) for f in _list(data["features"])]
        self.base = _num(data["base"])
        self.depth = int(_num(data["depth"]))
        self.feature = np.asarray(data["feature"], dtype=np.int64)
        self.threshold = np.asarray(data["threshold"], dtype=np.float64)
        self.left = np.asarray(data["left"], dtype=np.int64)
        self.right = np.asarray(data["right"], dtype=np.int64)
        self.value = np.asarray(data["value"], dtype=np.float64)
        shape = self.feature.shape
        if any(a.shape != shape for a in (self.threshold, self.left, self.right, self.value)) or len(shape) != 2:
            raise ValueError("the trees' node arrays differ in shape")
        if (self.feature < 0).any() or (self.feature >= max(len(self.features), 1)).any() \
                or (self.left < 0).any() or (self.left >= shape[1]).any() \
                or (self.right < 0).any() or (self.right >= shape[1]).any():
            raise ValueError("a tree names a feature or node that is not there")
        # flat copies (node i of tree t at t * width + i; children as flat indices): one 1-D gather per step
        width = shape[1]
        offset = (np.arange(shape[0]) * width)[:, None]
        self._feature = self.feature.ravel()
        self._threshold = self.threshold.ravel()
        self._left = (self.left + offset).ravel()
        self._right = (self.right + offset).ravel()
        self._value = self.value.ravel()
        self._roots = offset.ravel()

    def score(self, rows: Sequence[Mapping[str, float]]) -> np.ndarray:
        """Raw scores (the sum of the trees' leaves plus the base) of feature dicts; a missing feature is 0."""
        x = np.array([[r.get(f, 0.0) for f in self.features] for r in rows], dtype=np.float64)
        return self.score_matrix(x)

    def score_matrix(self, x: np.ndarray) -> np.ndarray:
        if not len(x):
            return np.zeros(0)
        n_features = x.shape[1]
        flat_x = np.ascontiguousarray(x, dtype=np.float64).ravel()
        row_base = (np.arange(len(x)) * n_features)[:, None]
        node = np.broadcast_to(self._roots, (len(x), len(self._roots))).copy()
        for _ in range(self.depth):
            go_left = flat_x[row_base + self._feature[node]] <= self._threshold[node]
            nxt = np.where(go_left, self._left[node], self._right[node])
            if np.array_equal(nxt, node):  # every row is at a leaf
                break
            node = nxt
        return self._value[node].sum(axis=1) + self.base


NEVER = 1e308  # a leaf's threshold: every finite value goes "left", back to the leaf itself


Table = tuple[list[int], list[float], list[int], list[int], list[float]]  # feature, threshold, left, right, value


def _flatten(node: JsonObject, table: Table, level: int = 0) -> int:
    """Append `node` and its subtree to `table` (pre-order); returns the node's index and records the depth."""
    f, th, lo, hi, va = table
    i = len(f)
    f.append(0)
    th.append(NEVER)
    lo.append(i)
    hi.append(i)
    va.append(_num(node.get("leaf_value", node.get("internal_value", 0.0))))
    if "split_feature" in node:
        if node.get("decision_type", "<=") != "<=":
            raise ValueError(f"unsupported split {node.get('decision_type')!r}")
        f[i] = int(_num(node["split_feature"]))
        th[i] = _num(node["threshold"])
        lo[i] = _flatten(_obj(node["left_child"]), table, level + 1)
        hi[i] = _flatten(_obj(node["right_child"]), table, level + 1)
    return i


def _depth(node: JsonObject) -> int:
    if "split_feature" not in node:
        return 0
    return 1 + max(_depth(_obj(node["left_child"])), _depth(_obj(node["right_child"])))


def trees_to_json(dump: JsonObject, features: list[str]) -> JsonObject:
    """LightGBM's `Booster.dump_model()` as a `structure-trees/1` dict (numerical `<=` splits only)."""
    tables: list[Table] = []
    depth = 0
    for info in _list(dump["tree_info"]):
        root = _obj(_obj(info)["tree_structure"])
        table: Table = ([], [], [], [], [])
        _flatten(root, table)
        tables.append(table)
        depth = max(depth, _depth(root))
    width = max((len(t[0]) for t in tables), default=1)
    extra = [list(range(len(t[0]), width)) for t in tables]  # padding nodes point at themselves, like leaves
    pairs = list(zip(tables, extra, strict=True))
    return {"format": TREES_FORMAT, "features": list(features), "base": 0.0, "depth": depth,
            "feature": [t[0] + [0] * len(e) for t, e in pairs],
            "threshold": [t[1] + [NEVER] * len(e) for t, e in pairs],
            "left": [t[2] + e for t, e in pairs],
            "right": [t[3] + e for t, e in pairs],
            "value": [[round(v, 6) for v in t[4]] + [0.0] * len(e) for t, e in pairs]}
