"""Ranking of `explore` candidates, with the ranker kept as plain JSON: `load_ranker` reads either format.

- `explore-ranker/2`: gradient-boosted trees fitted on the train KGs by `kbqa train --ranker --train-kgs`
  (rank/trees.py); the shipped default, `rank/ranker.json`, says in its `meta` what it was fitted on and
  with which command.
- `explore-ranker/1`: a linear score over named features (`Ranker` below), the earlier hand-set format, still read.

A ranker file is data: loading it reads numbers and names, never code (no pickle).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kb_dumps.json_types import JsonObject
from kbqa.translators.explore.query import Graph
from kbqa.translators.explore.rank.trees import TREES_FORMAT, TreeRanker

WEIGHTS_FORMAT = "explore-ranker/1"
DEFAULT_WEIGHTS_PATH = Path(__file__).with_name("weights.json")
DEFAULT_RANKER_PATH = Path(__file__).with_name("ranker.json")
# The features every candidate gets (missing ones are 0); `bias` is the constant term.
FEATURES = ("coverage", "cond_score", "focus", "cue_ok", "cue_miss", "cmp", "neg", "joins", "n_conds", "size",
            "has_rows", "log_rows", "one_row", "rel_sim", "rel_lex", "case_vote", "case_entity", "hop", "vsim", "lex_p",
            "lex_r", "name_filter", "struct_prior", "ungated", "display")


@dataclass
class Ranker:
    weights: dict[str, float] = field(default_factory=dict)
    bias: float = 0.0
    meta: JsonObject = field(default_factory=dict)
    source: str = ""  # the file it was read from ("": built in memory)

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

    def score_all(self, graphs: list[Graph]) -> list[float]:
        return [self.score(g) for g in graphs]

    def contributions(self, g: Graph, top: int = 5, among: list[Graph] | None = None) -> dict[str, float]:
        """The weighted features that moved this candidate's score most (signed), largest first (`among`: unused,
        a linear score reads no other candidate)."""
        parts = {k: self.weights.get(k, 0.0) * v for k, v in self.features(g).items()}
        ranked = sorted(parts.items(), key=lambda kv: -abs(kv[1]))[:top]
        return {k: round(v, 4) for k, v in ranked if v != 0.0}

    def explainer(self, graphs: list[Graph], top: int = 5) -> Callable[[Graph], dict[str, float]]:
        """`contributions` for one question's candidates (a linear score reads each alone)."""
        return lambda g: self.contributions(g, top)

    def to_dict(self) -> JsonObject:
        return {"format": WEIGHTS_FORMAT, "bias": self.bias, "weights": self.weights, "meta": self.meta}

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n", encoding="utf-8")

    @classmethod
    def from_dict(cls, d: JsonObject) -> Ranker:
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


AnyRanker = Ranker | TreeRanker


def load_ranker(path: str | Path | None = None) -> AnyRanker:
    """The ranker in `path` (either format), or the shipped one; ValueError names a file that is not one."""
    p = Path(path) if path else (DEFAULT_RANKER_PATH if DEFAULT_RANKER_PATH.is_file() else DEFAULT_WEIGHTS_PATH)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"cannot read ranker {p}: {e}") from e
    if not isinstance(data, dict):
        raise ValueError(f"{p} is not an explore ranker (a JSON object with a format field)")
    ranker = TreeRanker.from_dict(data) if data.get("format") == TREES_FORMAT else Ranker.from_dict(data)
    ranker.source = str(p)
    return ranker


def ranker_info(ranker: AnyRanker) -> JsonObject:
    """Which ranker chose (the step report and `--explain` say it): its file, kind and what it was fitted on."""
    kind = "trees" if hasattr(ranker, "trees") else "linear"
    info: JsonObject = {"file": ranker.source or "(given in code)", "kind": kind}
    for key in ("fitted_on", "command", "source"):
        if key in ranker.meta:
            info[key] = ranker.meta[key]
    return info
