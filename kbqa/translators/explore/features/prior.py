"""The structure prior of the `explore` ranker: P(query shape | question words), from a small linear text
classifier kept as plain JSON (`structure_prior.json` beside it, built by `python -m kbqa.training.structure_prior`),
and the shape of a candidate Graph in the same labels, so that `struct_prior` = P(the candidate's own shape); the
file also holds one model per part of the structure (parts.py: answer columns, DISTINCT, order, first aggregate),
read as `prior_<part>` = P(the candidate's own label of it).

The shapes, first match wins (one order for gold SPARQL and candidate graphs):
ask, negation, having, group-top (GROUP BY + ORDER + LIMIT), group, count, aggregate (AVG/MIN/MAX/SUM),
top (ORDER + LIMIT, or "= the MIN/MAX of a sub-query"), compare (<, >, "than the average"), list (the rest).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from kb_dumps.json_types import JsonObject
from kbqa.translators.explore.features.parts import feature_parts
from kbqa.translators.explore.features.structure import structure_features
from kbqa.translators.explore.link.words import read_cues
from kbqa.translators.explore.query import Graph
from kbqa.translators.language import ENGLISH, LanguageProfile

PRIOR_FORMAT = "structure-prior/1"
DEFAULT_PRIOR_PATH = Path(__file__).with_name("structure_prior.json")
SHAPES = ("ask", "negation", "having", "group-top", "group", "count", "aggregate", "top", "compare", "list")
_CMP_OPS = {"<", ">", "<=", ">=", "either"}
_QUOTED = re.compile(r"""["“‘][^"”’]{1,80}["”’]|(?<![A-Za-z])'[^']{1,80}'(?![A-Za-z])""")


def tokens(question: str) -> list[str]:
    """Lower-cased words and word bigrams; quoted values become `<q>`, numbers `<num>` (the words that carry
    the shape are the question's own, not the names it quotes)."""
    text = _QUOTED.sub(" <q> ", question.lower())
    words = [("<num>" if w[0].isdigit() else w) for w in re.findall(r"<q>|[a-z]+(?:'[a-z]+)?|\d[\d.,]*", text)]
    return words + [f"{a} {b}" for a, b in zip(["<s>", *words], [*words, "</s>"], strict=True)]


def graph_shape(g: Graph) -> str:
    """The shape label of a candidate query graph."""
    if g.form == "ask":
        return "ask"
    if any(c.negated for c in g.flat_conds()):
        return "negation"
    if g.having is not None:
        return "having"
    if g.group:
        return "group-top" if g.order is not None and g.limit is not None else "group"
    if g.aggs:
        return "count" if g.aggs[0][0].startswith("COUNT") else "aggregate"
    if g.order is not None and g.limit is not None:
        return "top"
    if any(c.op in _CMP_OPS for c in g.flat_conds()):
        return "compare"
    return "list"


def sparql_shape(sparql: str) -> str:
    """The shape label of a gold SPARQL query (Spider4SPARQL style: sub-queries for "the largest" and "more
    than the average", MINUS / NOT IN for negation)."""
    q = " ".join(sparql.lower().split())
    head = q.split("where", 1)[0]
    if re.match(r"\s*(prefix[^>]*>\s*)*ask\b", q):
        return "ask"
    if re.search(r"not exists|\bminus\b|not in\s*\(", q):
        return "negation"
    if "having" in q:
        return "having"
    if "group by" in q:
        return "group-top" if "order by" in q and "limit" in q else "group"
    if re.search(r"\bcount\s*\(", head):
        return "count"
    if re.search(r"\b(avg|min|max|sum)\s*\(", head):
        return "aggregate"
    if "order by" in q and "limit" in q:
        return "top"
    sub = re.search(r"filter\s*\([^)]*?(=|<=|>=|<|>)\s*\(\s*\?\w+\s*\)", q)  # compared with a sub-query's value
    if sub:
        return "top" if sub.group(1) == "=" and re.search(r"\b(min|max)\s*\(", q) else "compare"
    if re.search(r"filter\s*\([^)]*\?\w+\s*(<=|>=|<|>)", q):
        return "compare"
    return "list"


@dataclass
class StructurePrior:
    """A multinomial logistic model over `tokens`: per label a bias and sparse word weights."""

    labels: list[str]
    bias: list[float]
    weights: dict[str, list[float]] = field(default_factory=dict)
    meta: JsonObject = field(default_factory=dict)
    # one model of the same kind per part of the structure (features/parts.py), for feature `prior_<part>`
    parts: dict[str, StructurePrior] = field(default_factory=dict)

    def predict(self, question: str) -> dict[str, float]:
        z = list(self.bias)
        for t in set(tokens(question)):
            w = self.weights.get(t)
            if w:
                z = [a + b for a, b in zip(z, w, strict=True)]
        m = max(z)
        e = [math.exp(v - m) for v in z]
        s = sum(e)
        return {lab: v / s for lab, v in zip(self.labels, e, strict=True)}

    def to_dict(self) -> JsonObject:
        out: JsonObject = {"format": PRIOR_FORMAT, "labels": self.labels, "bias": self.bias, "weights": self.weights,
                           "meta": self.meta}
        if self.parts:
            out["parts"] = {name: {"labels": m.labels, "bias": m.bias, "weights": m.weights}
                            for name, m in self.parts.items()}
        return out

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":")) + "\n",
                              encoding="utf-8")

    @classmethod
    def from_dict(cls, d: JsonObject) -> StructurePrior:
        if d.get("format") != PRIOR_FORMAT:
            raise ValueError(f"not a structure prior (format {d.get('format')!r}, expected {PRIOR_FORMAT})")
        prior = cls._model(d)
        prior.meta = dict(d.get("meta", {}))
        prior.parts = {str(name): cls._model(m) for name, m in (d.get("parts") or {}).items()}
        return prior

    @classmethod
    def _model(cls, d: JsonObject) -> StructurePrior:
        labels = [str(x) for x in d["labels"]]
        weights = {str(k): [float(x) for x in v] for k, v in d.get("weights", {}).items()}
        if any(len(v) != len(labels) for v in weights.values()) or len(d["bias"]) != len(labels):
            raise ValueError("structure prior: a weight row does not have one number per label")
        return cls(labels, [float(x) for x in d["bias"]], weights)

    @classmethod
    def load(cls, path: str | Path) -> StructurePrior:
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))


@lru_cache(maxsize=4)
def load_prior(path: str | None = None) -> StructurePrior | None:
    """The shipped prior (or the one at `path`); None when the file is missing or unreadable (the feature is
    then 0 for every candidate)."""
    try:
        return StructurePrior.load(path or DEFAULT_PRIOR_PATH)
    except (OSError, ValueError, KeyError, json.JSONDecodeError):
        return None


# Spider4SPARQL train has no yes/no question: on one the prior knows nothing and stays silent (the feature is 0
# for every candidate, so the other features decide between ASK and the rest).
def _yes_no(question: str, lang: LanguageProfile = ENGLISH) -> bool:
    words = re.findall(r"[a-z]+", question.lower())
    return bool(words) and words[0] in lang.yes_no_first_words


def prior_predictions(question: str, prior: StructurePrior,
                      lang: LanguageProfile = ENGLISH) -> dict[str, dict[str, float]] | None:
    """Per feature (`struct_prior`, `prior_<part>`), P(each label | the question); None where the prior stays
    silent: a yes/no question, or one where it reads no shape the cue reader reads (one rule for the query path
    and for the ranker's fitting)."""
    if _yes_no(question, lang):
        return None
    probs = prior.predict(question)
    cues = read_cues(question, lang)
    if max(probs, key=probs.get) == "list" and (cues.aggregates or cues.superlative or cues.count or cues.group):
        return None  # the cue reader read a shape word the prior's vocabulary lacks ("mean", "rarest"): it stays silent
    return {"struct_prior": probs, **{f"prior_{name}": m.predict(question) for name, m in prior.parts.items()}}


def candidate_values(predicted: dict[str, dict[str, float]], shape: str, parts: dict[str, str]) -> dict[str, float]:
    """One candidate's features: P(its own shape, its own label of each part); a label a model never had (ASK)
    gets the uniform share."""
    return {name: probs.get(shape if name == "struct_prior" else parts.get(name.removeprefix("prior_"), ""),
                            1.0 / max(1, len(probs)))
            for name, probs in predicted.items()}


def prior_values(question: str, shapes: list[str], prior: StructurePrior, lang: LanguageProfile = ENGLISH,
                 parts: list[dict[str, str]] | None = None) -> dict[str, list[float]] | None:
    """Per feature, each candidate's value (`candidate_values`; the parts' features only given the candidates'
    parts, features/parts.py); None where the prior stays silent (`prior_predictions`)."""
    predicted = prior_predictions(question, prior, lang) if shapes else None
    if predicted is None:
        return None
    if parts is None:
        predicted = {"struct_prior": predicted["struct_prior"]}
    per_candidate = [candidate_values(predicted, s, p) for s, p in zip(shapes, parts or [{}] * len(shapes),
                                                                       strict=True)]
    return {name: [v[name] for v in per_candidate] for name in predicted}


def add_struct_prior(question: str, pool: list[Graph], prior: StructurePrior | None = None,
                     lang: LanguageProfile = ENGLISH) -> None:
    """Set features `struct_prior` and `prior_<part>` on every candidate; nothing without a prior, nothing where it
    stays silent (checked before any candidate is labelled)."""
    prior = prior or load_prior()
    if prior is None or not pool:
        return
    predicted = prior_predictions(question, prior, lang)
    if predicted is None:
        return
    for g in pool:
        parts = feature_parts(structure_features(g)) if prior.parts else {}
        g.features.update(candidate_values(predicted, graph_shape(g), parts))
