"""The learned query structure of a Wikidata question: skeleton chosen by the fitted chooser, slots filled.

`StructureModel.load(path)` reads the fitted file (`structure-model/1`, gzipped JSON: the skeleton chooser, the bank
of solved questions, the property scorer's weights) and `properties.json.gz`; `answer(question, detector)` returns a
`StructuredAnswer`: the SPARQL, the skeleton and why, each slot's value and top alternatives, and a confidence.
Numpy only at query time.
"""

from __future__ import annotations

import gzip
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval.skeleton import fill
from grounding.embedder import get_embedder
from kbqa.translators.mentions import MentionDetector, MentionPrior, choose, mask
from kbqa.translators.structure.features import cue_shape_features, mention_counts, mention_features
from kbqa.translators.structure.model import SkeletonModel
from kbqa.translators.structure.slots import (
    NEUTRAL,
    WEAK_LITERALS,
    Bank,
    PropertyNames,
    PropertyScorer,
    SlotFill,
    literal_value,
    property_features,
)

HERE = Path(__file__).resolve().parent
MODEL_PATH = HERE / "model.json.gz"
PROPERTIES_PATH = HERE / "properties.json.gz"
SKELETONS_TRIED = 5
ENTITY_SEEN_BOOST = 0.3
MENTION_CANDIDATES = 15  # a shared name has many entities; the train-question counts re-rank them
_SLOT_NAMES = re.compile(r"\b(E|R|NUM|DATE|LANG|STR)(\d+)\b")
WD = "http://www.wikidata.org/entity/"


@dataclass
class StructuredAnswer:
    """The query the learned structure writes for a question, with its evidence (plain data)."""

    question: str
    sparql: str | None
    skeleton: str
    skeleton_probability: float
    confidence: float
    slots: list[SlotFill] = field(default_factory=list)
    skeleton_alternatives: list[tuple[str, float]] = field(default_factory=list)
    why: str = ""
    features: dict[str, float] = field(default_factory=dict)  # the re-ranker's input

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "sparql": self.sparql, "skeleton": self.skeleton,
                "skeleton_probability": round(self.skeleton_probability, 4), "confidence": round(self.confidence, 4),
                "why": self.why, "slots": [s.to_dict() for s in self.slots],
                "skeleton_alternatives": [[s, round(p, 4)] for s, p in self.skeleton_alternatives],
                "features": {k: round(v, 4) for k, v in self.features.items()}}


def slot_names(skeleton: str) -> list[str]:
    """Slot names in order of first appearance."""
    out: list[str] = []
    for m in _SLOT_NAMES.finditer(skeleton):
        name = m.group(1) + m.group(2)
        if name not in out:
            out.append(name)
    return out


class StructureModel:
    """The fitted structure models and the bank they were fitted on."""

    def __init__(self, data: dict[str, Any], properties: dict[str, dict[str, Any]], embedder: Any = None):
        if data.get("format") != "structure-model/1":
            raise ValueError(f"not a structure-model/1 file: {data.get('format')!r}")
        self.embedder = embedder or get_embedder(data["skeleton"].get("embedder"))
        self.meta = {k: data.get(k) for k in ("sets", "excluded_sets", "n_examples", "c", "command")}
        self.chooser = SkeletonModel(data["skeleton"], self.embedder)
        self.bank = Bank(data["bank"], self.embedder)
        self.names = PropertyNames(properties, self.embedder)
        self.scorer = PropertyScorer(data["property_scorer"])
        self.entity_counts: dict[str, int] = data.get("entity_counts") or {}
        rr = data.get("skeleton_reranker")
        self.reranker: tuple[dict[str, float], float] | None = (rr["weights"], rr["bias"]) if rr else None
        prior = data.get("mention_prior") or {}
        self.mention_prior = MentionPrior(spans=prior.get("spans", {}), words=prior.get("words", {}))

    @classmethod
    def load(cls, path: str | Path = MODEL_PATH, properties: str | Path = PROPERTIES_PATH,
             embedder: Any = None) -> StructureModel:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            data = json.load(f)
        with gzip.open(properties, "rt", encoding="utf-8") as f:
            props = json.load(f)
        return cls(data, props, embedder)

    # ---- answering --------------------------------------------------------------------------
    def candidates(self, question: str, mentions: list[Any], top: int = SKELETONS_TRIED) -> list[StructuredAnswer]:
        """The chooser's `top` skeletons, each filled, with the re-ranker's features (chooser rank and probability
        relative to the first, slot evidence, whether the skeleton fits the properties asked for, question cues x
        skeleton shape)."""
        counts = mention_counts(mentions)
        tops = self.chooser.predict(question, top=top, extra=tuple(mention_features(mentions, question)))
        near: dict[str, list[tuple[int, float]]] = {}  # masked text -> neighbours, shared by the skeletons
        cands = [self._fill(question, sk, prob, mentions, near) for sk, prob in tops]
        first = math.log(max(tops[0][1], 1e-6)) if tops else 0.0
        for rank, c in enumerate(cands):
            f = c.features
            f["rank"] = float(rank)
            f["rel_p"] = f["log_p"] - first
            f["e2_diff"] = counts.get("e2", 0.0) - f["n_entities"]
            f["e5_diff"] = counts.get("e5", 0.0) - f["n_entities"]
            f["e5_abs"] = abs(f["e5_diff"])
            f.update(cue_shape_features(question, c.skeleton))
            c.skeleton_alternatives = tops
        return cands

    def answer(self, question: str, detector: MentionDetector | None) -> StructuredAnswer:
        question = " ".join(question.split())
        mentions = detector.detect(question, max_candidates=MENTION_CANDIDATES) if detector is not None else []
        cands = self.candidates(question, mentions)
        if self.reranker is not None:
            w, b = self.reranker
            for c in cands:
                z = b + sum(w.get(k, 0.0) * v for k, v in c.features.items())
                c.confidence = 1.0 / (1.0 + math.exp(-z)) if c.sparql else 0.0
        how = ("the fitted re-ranker over the chooser's top skeletons filled (chooser p and rank, entity mentions, "
               "property scores, literals, question cues x skeleton shape)" if self.reranker is not None
               else "chooser p x entity-mention cover x property scores")
        best = max(cands, key=lambda c: c.confidence)
        rank = cands.index(best)
        best.why = f"the chooser's choice {rank + 1} of {len(cands)} (p={best.skeleton_probability:.2f}); " \
                   f"confidence {best.confidence:.3f} by {how}"
        return best

    def _entity_alternatives(self, mention: Any) -> list[tuple[str, float]]:
        """A mention's candidates re-ranked: the detector's order, then how often the train questions asked about
        each (a name shared by several entities mostly means the one people ask about)."""
        def key(rank_c: tuple[int, Any]) -> float:
            rank, c = rank_c
            seen = self.entity_counts.get(c.id.rsplit("/", 1)[-1], 0)
            return c.match * (0.97 ** rank) * (1.0 + ENTITY_SEEN_BOOST * math.log1p(seen))

        ranked = sorted(enumerate(mention.candidates), key=lambda rc: -key(rc))
        return [(c.id.replace(WD, "wd:"), round(key((r, c)), 4)) for r, c in ranked[:5]]

    def _fill(self, question: str, sk: str, prob: float, mentions: list[Any],
              near: dict[str, list[tuple[int, float]]]) -> StructuredAnswer:
        names = slot_names(sk)
        n_ent = sum(1 for n in names if n.startswith("E"))
        picked = sorted(choose(mentions, n_ent), key=lambda m: m.start) if n_ent else []
        order_note = ""
        orders = self.bank.entity_orders.get(sk)
        if orders and len(picked) == n_ent:
            order, seen = orders.most_common(1)[0]
            perm = [int(x) for x in order.split(",")]
            if sorted(perm) == list(range(n_ent)):
                picked = [picked[k] for k in perm]
                order_note = f" (slot order {order}: {seen} of {sum(orders.values())} train questions)"
        fills: list[SlotFill] = []
        values: dict[str, str] = {}
        ent_conf = 1.0
        ent_scores: list[float] = []
        for i, name in enumerate(n for n in names if n.startswith("E")):
            if i < len(picked):
                m = picked[i]
                alts = self._entity_alternatives(m)
                fills.append(SlotFill(name, alts[0][0] if alts else None, alts, f"mention '{m.text}'{order_note}"))
                if alts:
                    values[name] = alts[0][0]
                ent_conf *= min(1.0, 0.3 + m.score)
                ent_scores.append(m.score)
            else:
                fills.append(SlotFill(name, None, [], "no mention left in the question"))
                ent_conf *= 0.05
        masked = mask(question, [(m.start, m.end) for m in picked], NEUTRAL)
        if masked not in near:  # skeletons with as many entities share the masked text's neighbours
            near[masked] = self.bank.nearest(self.embedder.encode_one(masked))
        neighbours = near[masked]
        used: set[str] = set()
        prop_conf = 1.0
        prop_logs: list[float] = []
        for name in (n for n in names if n.startswith("R")):
            ranked = self.scorer.rank(property_features(sk, name, masked, self.bank, self.names, neighbours))
            ranked = [(p, s) for p, s in ranked if p not in used] or ranked
            if ranked:
                values[name] = ranked[0][0]
                used.add(ranked[0][0])
                prop_conf *= ranked[0][1]
                prop_logs.append(math.log(max(ranked[0][1], 1e-6)))
            fills.append(SlotFill(name, ranked[0][0] if ranked else None, ranked[:5], "fitted property scorer"))
        for name in names:
            if name[0] in "ER":
                continue
            lit_type = re.sub(r"\d+$", "", name)
            lf = literal_value(sk, name, question, self.bank, lit_type)
            if lf.value is not None:
                values[name] = lf.value
            fills.append(lf)
        order = {n: i for i, n in enumerate(names)}
        fills.sort(key=lambda f: order.get(f.name, 99))
        complete = all(n in values for n in names)
        sparql = fill(sk, values) if complete else None
        n_props = sum(n.startswith("R") for n in names)
        conf = prob * ent_conf * prop_conf ** (1.0 / max(1, n_props))
        votes = [(self.bank.rows[i]["skeleton"] == sk) * max(sim, 0.0) ** 4 for i, sim in neighbours]
        total = sum(max(sim, 0.0) ** 4 for _, sim in neighbours) or 1.0
        lit_scores = [f.alternatives[0][1] if f.alternatives else 0.0 for f in fills if f.name[0] not in "ER"]
        margins = [f.alternatives[0][1] - (f.alternatives[1][1] if len(f.alternatives) > 1 else 0.0)
                   for f in fills if f.name[0] == "R" and f.alternatives]
        fits = [self.bank.skeleton_fit(sk, values[n]) for n in names if n.startswith("R") and n in values]
        asked = self.bank.asked_property(neighbours)
        features = {
            "fit_min": min(fits, default=0.0),
            "fit_mean": sum(fits) / len(fits) if fits else 0.0,
            "asked_fit": self.bank.skeleton_fit(sk, asked) if asked else 0.0,
            "asked_filled": float(asked is not None and asked in values.values()),
            "log_p": math.log(max(prob, 1e-6)),
            "lit_min": min(lit_scores, default=1.0),
            "lit_weak": float(sum(f.source in WEAK_LITERALS for f in fills)),
            "prop_margin_min": min(margins, default=1.0),
            "missing_entities": float(n_ent - len(picked)),
            "entity_score": sum(ent_scores) / len(ent_scores) if ent_scores else 0.0,
            "min_entity_score": min(ent_scores) if ent_scores else 0.0,
            "unused_mentions": float(sum(1 for m in choose([m for m in mentions if m.prior >= 0.5], 4)
                                         if not any(m.overlaps(p) for p in picked))),
            "property_log": sum(prop_logs) / len(prop_logs) if prop_logs else 0.0,
            "min_property_log": min(prop_logs) if prop_logs else 0.0,
            "knn_vote": sum(votes) / total,
            "n_entities": float(n_ent),
            "n_properties": float(n_props),
        }
        out = StructuredAnswer(question, sparql, sk, prob, conf if complete else 0.0, fills)
        out.features = features
        return out


def to_desq(sparql: str, question: str, answer: StructuredAnswer) -> str:
    """The filled skeleton as DeSQ: AC1 the query form (with ORDER BY / LIMIT), AC2 the pattern, concrete ids."""
    text = re.sub(r"\?v(\d+)\b", lambda m: f"?var{int(m.group(1)) + 1}", sparql)
    start, end = text.index("{"), text.rindex("}")
    head = re.sub(r"\bWHERE\s*$", "", text[:start].strip()).strip()
    tail = text[end + 1:].strip()
    body = text[start + 1:end].strip()
    form = f"{head} {tail}".strip()
    return "\n".join([
        "ATOMIC CONSTRAINTS",
        f"AC1: answer of: {question.replace(chr(10), ' ')}",
        f"AC2: the learned structure {answer.skeleton}",
        "FRAGMENTS",
        f"AC1 => {form}",
        f"AC2 => {body}",
        "GROUNDING",
        "",
    ])

