"""Does the store hold this question's facts? A logistic regression over the store's own evidence, fitted on train.

On a Wikidata store (a sample of Wikidata) the search always finds *some* query that runs near a linked name; when
the store lacks the question's facts that query is a partial match and the learned structure (fallback/structure.py)
writes the better query. The evidence (`FEATURES`), all read from the store and the search, never from the
question's words:
- the entities the learned structure names (not in a class position): how many, and how many have no fact beyond
  their names (in number and share);
- the search: whether it found a candidate, its best candidate's ranker score and answer rows (log), whether that
  candidate uses an entity the structure does not name (it read the question another way), how many entities it
  uses;
- the case bank: whether one about this store was consulted, and the similarity-weighted share of the nearest solved
  questions whose facts the store holds (fallback/facts.py; missing without a bank).
The label of a train question is whether its gold query has an answer on the store (`kbqa.training.facts_decision`
fits it on LC-QuAD 2.0, WikiWebQuestions and SimpleQuestions train questions over wikidata-mini, with and without a
case bank, so that both kinds of store are seen; the dev sets are never read). The weights are data (`decision.json`: the standardisation, the coefficients, what it was fitted on and
the command); the query path is a dot product. In mode `explore_fallback = fitted`, P(lacks) >= 0.5, the
probability's own boundary, sends the question to the learned structure. Not the default: on the store that holds
SimpleQuestions' facts it takes a few questions the search answers (BENCHMARKS.md "A fitted fact-lack decision").
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from kb_dumps.json_types import JsonObject

DECISION_PATH = Path(__file__).with_name("decision.json")
# How many facts an entity has is left out on purpose: on a sample store it says which benchmark the store was
# sampled for (SimpleQuestions' long-tail subjects have few facts, LC-QuAD's famous ones many), not whether this
# question's facts are there (5-fold accuracy on train 0.909 with it, 0.902 without).
FEATURES = ("structure_entities", "bare_entities", "bare_share", "search_found", "search_score", "search_rows_log",
            "search_other_entity", "search_entities", "bank_consulted", "bank_held_share")
THRESHOLD = 0.5  # P(the store lacks the facts) at which the learned structure answers: the probability's boundary


@dataclass
class Evidence:
    """What the store and the search say about one question (the raw parts of `FEATURES`)."""

    facts: list[int]  # per entity the structure names: its predicate groups beyond names (-1: unknown to the store)
    search_found: bool
    search_score: float
    search_rows: int
    search_other_entity: bool  # the search's best uses an entity the structure does not name
    search_entities: int
    bank_held_share: float | None  # None: no bank about this store

    def features(self) -> dict[str, float]:
        bare = sum(f == 0 for f in self.facts)
        return {
            "structure_entities": float(len(self.facts)),
            "bare_entities": float(bare),
            "bare_share": bare / len(self.facts) if self.facts else 0.0,
            "search_found": float(self.search_found),
            "search_score": self.search_score if self.search_found else 0.0,
            "search_rows_log": math.log1p(max(self.search_rows, 0)),
            "search_other_entity": float(self.search_other_entity),
            "search_entities": float(self.search_entities),
            # without a bank about this store (or a near case) the search's score lacks the bank's votes: the flag
            # says so, and the share is missing (it then adds nothing to the log-odds)
            "bank_consulted": float(self.bank_held_share is not None),
            "bank_held_share": math.nan if self.bank_held_share is None else self.bank_held_share,
        }


class FactsDecision:
    """The fitted logistic regression of `decision.json`: P(the store lacks the question's facts)."""

    def __init__(self, data: JsonObject):
        names = list(data["features"])  # type: ignore[arg-type]
        if names != list(FEATURES):
            raise ValueError(f"the decision file's features {names} are not this code's {list(FEATURES)}: refit it "
                             "(python -m kbqa.training.facts_decision)")
        self.mean = [float(v) for v in data["mean"]]  # type: ignore[union-attr]
        self.scale = [float(v) or 1.0 for v in data["scale"]]  # type: ignore[union-attr]
        self.coef = [float(v) for v in data["coef"]]  # type: ignore[union-attr]
        self.intercept = float(data["intercept"])  # type: ignore[arg-type]
        self.meta = data.get("meta") or {}

    @classmethod
    def load(cls, path: Path = DECISION_PATH) -> FactsDecision | None:
        """The shipped decision, or None where none ships (then the hand rule of fallback/structure.py decides)."""
        # a file that does not match FEATURES is our bug, not the user's: ValueError says to refit it
        if not path.is_file():
            return None
        return cls(json.loads(path.read_text(encoding="utf-8")))

    def contributions(self, feats: dict[str, float]) -> dict[str, float]:
        """Each feature's term of the log-odds (standardised value times its coefficient; a missing value: 0, as
        the fit imputes it with the mean)."""
        return {n: 0.0 if math.isnan(feats[n]) else (feats[n] - m) / s * c
                for n, m, s, c in zip(FEATURES, self.mean, self.scale, self.coef, strict=True)}

    def p_lacks(self, feats: dict[str, float]) -> float:
        z = self.intercept + sum(self.contributions(feats).values())
        return 1.0 / (1.0 + math.exp(-max(min(z, 40.0), -40.0)))

    def explain(self, feats: dict[str, float], top: int = 3) -> str:
        contrib = sorted(self.contributions(feats).items(), key=lambda kv: -abs(kv[1]))[:top]
        return ", ".join(f"{n}={feats[n]:.2g} ({c:+.2f})" for n, c in contrib)
