"""The learned query structure of a Wikidata question: skeleton chosen by the fitted chooser, slots filled.

`StructureModel.load(path)` reads the fitted file (`structure-model/1`, gzipped JSON: the skeleton chooser, the bank
of solved questions, the property scorer's weights) and `properties.json.gz`; `answer(question, detector)` returns a
`StructuredAnswer`: the SPARQL, the skeleton and why, each slot's value and top alternatives, and a confidence.
Numpy only at query time.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval.skeleton import fill
from grounding.embedder import get_embedder
from kbqa.translators.mentions import MentionDetector, MentionPrior, choose, mask
from kbqa.translators.structure.features import mention_features
from kbqa.translators.structure.model import SkeletonModel
from kbqa.translators.structure.slots import (
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
NEUTRAL = "something"
SKELETONS_TRIED = 3
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

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "sparql": self.sparql, "skeleton": self.skeleton,
                "skeleton_probability": round(self.skeleton_probability, 4), "confidence": round(self.confidence, 4),
                "why": self.why, "slots": [s.to_dict() for s in self.slots],
                "skeleton_alternatives": [[s, round(p, 4)] for s, p in self.skeleton_alternatives]}


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
        self.meta = {k: data.get(k) for k in ("sets", "excluded_sets", "n_examples", "c")}
        self.chooser = SkeletonModel(data["skeleton"], self.embedder)
        self.bank = Bank(data["bank"], self.embedder)
        self.names = PropertyNames(properties, self.embedder)
        self.scorer = PropertyScorer(data["property_scorer"]["weights"], data["property_scorer"].get("bias", 0.0))
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
    def answer(self, question: str, detector: MentionDetector | None) -> StructuredAnswer:
        question = " ".join(question.split())
        mentions = detector.detect(question) if detector is not None else []
        tops = self.chooser.predict(question, top=SKELETONS_TRIED, extra=tuple(mention_features(mentions)))
        best: StructuredAnswer | None = None
        for rank, (sk, prob) in enumerate(tops):
            cand = self._fill(question, sk, prob, mentions)
            cand.skeleton_alternatives = tops
            cand.why = f"the chooser's choice {rank + 1} of {len(tops)} (p={prob:.2f}); confidence " \
                       f"{cand.confidence:.3f} = p x entity-mention cover x property scores"
            if best is None or cand.confidence > best.confidence:
                best = cand
        assert best is not None
        return best

    def _fill(self, question: str, sk: str, prob: float, mentions: list[Any]) -> StructuredAnswer:
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
        for i, name in enumerate(n for n in names if n.startswith("E")):
            if i < len(picked):
                m = picked[i]
                alts = [(c.id.replace(WD, "wd:"), float(c.match)) for c in m.candidates[:5]]
                fills.append(SlotFill(name, alts[0][0] if alts else None, alts, f"mention '{m.text}'{order_note}"))
                if alts:
                    values[name] = alts[0][0]
                ent_conf *= min(1.0, 0.3 + m.score)
            else:
                fills.append(SlotFill(name, None, [], "no mention left in the question"))
                ent_conf *= 0.05
        masked = mask(question, [(m.start, m.end) for m in picked], NEUTRAL)
        vector = self.embedder.encode_one(masked)
        neighbours = self.bank.nearest(vector)
        used: set[str] = set()
        prop_conf = 1.0
        for name in (n for n in names if n.startswith("R")):
            ranked = self.scorer.rank(property_features(sk, name, masked, self.bank, self.names, neighbours))
            ranked = [(p, s) for p, s in ranked if p not in used] or ranked
            if ranked:
                values[name] = ranked[0][0]
                used.add(ranked[0][0])
                prop_conf *= ranked[0][1]
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
        conf = prob * ent_conf * prop_conf ** (1.0 / max(1, sum(n.startswith("R") for n in names)))
        return StructuredAnswer(question, sparql, sk, prob, conf if complete else 0.0, fills)


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

