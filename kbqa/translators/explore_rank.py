"""Ranking of `explore` candidates: a linear score over named features, with weights kept as plain JSON.

The default weights ship in `explore_weights.json` (set by hand first, then fitted by `kbqa train --ranker`
on development knowledge graphs, leave-one-KG-out when reported). Weights are data: loading them reads
numbers, never code (no pickle).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbqa.translators.explore_graphs import Graph

WEIGHTS_FORMAT = "explore-ranker/1"
DEFAULT_WEIGHTS_PATH = Path(__file__).with_name("explore_weights.json")
# The features every candidate gets (missing ones are 0); `bias` is the constant term.
FEATURES = ("coverage", "cond_score", "focus", "cue_ok", "cue_miss", "cmp", "neg", "joins", "n_conds", "size",
            "has_rows", "log_rows", "one_row", "rel_sim", "rel_lex", "case_vote", "case_entity", "hop", "vsim", "lex_p",
            "lex_r", "name_filter", "struct_prior")


@dataclass
class Ranker:
    weights: dict[str, float] = field(default_factory=dict)
    bias: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)

    def features(self, g: Graph) -> dict[str, float]:
        f = {k: float(v) for k, v in g.features.items() if k in FEATURES}
        f["size"] = float(g.size())
        if g.rows is not None:
            f["has_rows"] = 1.0 if g.rows > 0 else 0.0
            f["log_rows"] = math.log1p(g.rows)
            f["one_row"] = 1.0 if g.rows == 1 else 0.0
        f["hop"] = 1.0 if g.family == "hop" else 0.0
        return f

    def score(self, g: Graph) -> float:
        f = self.features(g)
        return self.bias + sum(self.weights.get(k, 0.0) * v for k, v in f.items())

    def to_dict(self) -> dict[str, Any]:
        return {"format": WEIGHTS_FORMAT, "bias": self.bias, "weights": self.weights, "meta": self.meta}

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n", encoding="utf-8")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Ranker:
        if d.get("format") != WEIGHTS_FORMAT:
            raise ValueError(f"not explore ranker weights (format {d.get('format')!r}, expected {WEIGHTS_FORMAT})")
        weights = {str(k): float(v) for k, v in d.get("weights", {}).items()}
        unknown = set(weights) - set(FEATURES)
        if unknown:
            raise ValueError(f"unknown ranker features {sorted(unknown)}; known: {', '.join(FEATURES)}")
        return cls(weights, float(d.get("bias", 0.0)), dict(d.get("meta", {})))

    @classmethod
    def load(cls, path: str | Path | None = None) -> Ranker:
        p = Path(path) if path else DEFAULT_WEIGHTS_PATH
        try:
            return cls.from_dict(json.loads(p.read_text(encoding="utf-8")))
        except (OSError, json.JSONDecodeError) as e:
            raise ValueError(f"cannot read ranker weights {p}: {e}") from e
