"""`kbqa train --ranker`: fit the `explore` ranker's weights from questions with gold answers on development KGs.

For every question, the explore search runs as it does at query time; each checked candidate is labelled
positive when its answers equal the gold answers (QALD F1 = 1). A logistic regression over the candidates'
features (numpy, L2-regularised, full-batch gradient descent) gives the weights, saved as plain JSON
(`Ranker.save`). `evaluate` scores a ranker by the answer F1 of its top candidate per question, so that a
leave-one-KG-out report trains on the other KGs and scores on the held-out one.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from kb_dumps.json_types import JsonObject
from kbqa.training.ranker_data import benchmark_gold, result_json
from kbqa.translators.explore.rank.rankers import FEATURES, Ranker

if TYPE_CHECKING:
    from eval.records import Record
    from kbqa.translators.explore import ExploreTranslator

log = logging.getLogger(__name__)


@dataclass
class Candidate:
    """One checked candidate of one question: its features and how well its answers match the gold."""

    features: dict[str, float]
    f1: float
    family: str = ""


@dataclass
class Question:
    id: str
    kg: str
    text: str
    candidates: list[Candidate] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> JsonObject:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: JsonObject) -> Question:
        return cls(d["id"], d["kg"], d["text"], [Candidate(**c) for c in d.get("candidates", [])],
                   float(d.get("seconds", 0.0)))


def collect(translator: ExploreTranslator, records: list[Record], kg: str, progress: bool = True) -> list[Question]:
    """Run the explore search on each record and label every checked candidate by its answer F1."""
    from eval.answer_metrics import score_question
    from kbqa.translators.explore.lower.text import write

    try:
        from tqdm import tqdm

        it = tqdm(records, desc=f"ranker data {kg}", unit="q", disable=not progress)
    except ImportError:  # tqdm is a core dependency; this only guards a stripped install
        it = records
    out = []
    for rec in it:
        if not rec.usable:
            continue
        text = rec.questions.get("en") or next(iter(rec.questions.values()), "")
        gold = benchmark_gold(rec, translator.store, translator.profile.name)
        q = Question(rec.id, kg, text)
        _a, ranked, info = translator.search(text)
        q.seconds = float(info.get("seconds", 0.0))
        for g in ranked:
            try:
                res = translator.store.query(write(g, translator.schema, desq=False), row_cap=2000)
                f1 = score_question(gold, result_json(res)).qald.f1
            except Exception:  # noqa: BLE001 - a candidate that fails now scores nothing
                f1 = 0.0
            q.candidates.append(Candidate(translator.ranker.features(g), f1, g.family))
        out.append(q)
    return out


def fit(questions: list[Question], *, prior: Ranker | None = None, l2: float = 1.0, steps: int = 400,
        lr: float = 0.5, meta: JsonObject | None = None) -> Ranker:
    """Listwise ranking: maximise, per question, the softmax probability of the candidates with the gold
    answers, with an L2 pull toward the `prior` weights (the shipped hand-set ones by default), so that a
    few development KGs adjust the hand-set weights rather than replace them. Questions without a right
    candidate are left out (they teach nothing about ranking). Features are scaled by their spread."""
    prior = prior or Ranker.load()
    groups = []
    for q in questions:
        if not q.candidates or not any(c.f1 >= 0.999 for c in q.candidates) or \
                all(c.f1 >= 0.999 for c in q.candidates):
            continue
        x = np.array([[c.features.get(k, 0.0) for k in FEATURES] for c in q.candidates])
        y = np.array([1.0 if c.f1 >= 0.999 else 0.0 for c in q.candidates])
        groups.append((x, y))
    if not groups:
        raise ValueError("no question has both a right and a wrong candidate: nothing to learn from")
    allx = np.vstack([g[0] for g in groups])
    scale = allx.std(axis=0)
    scale[scale == 0] = 1.0
    w0 = np.array([prior.weights.get(k, 0.0) for k in FEATURES]) * scale
    theta = w0.copy()
    for _ in range(steps):
        grad = np.zeros_like(theta)
        for x, y in groups:
            xs = x / scale
            z = xs @ theta
            p = np.exp(z - z.max())
            p /= p.sum()
            q = p * y
            q /= q.sum()
            grad += xs.T @ (p - q)
        theta -= lr * (grad / len(groups) + l2 * (theta - w0) / len(groups))
    coef = theta / scale
    info = {"source": "kbqa train --ranker (listwise, pulled toward the hand-set weights)",
            "questions": len(questions), "used": len(groups), "l2": l2, "steps": steps, **(meta or {})}
    return Ranker({k: round(float(v), 6) for k, v in zip(FEATURES, coef, strict=True)}, prior.bias, info)


def evaluate(ranker: Ranker, questions: list[Question]) -> dict[str, float]:
    """Mean answer F1 of the top candidate per question (no candidate: 0), and the share with F1 = 1."""
    f1s = []
    for q in questions:
        if not q.candidates:
            f1s.append(0.0)
            continue
        best = max(q.candidates, key=lambda c: ranker.bias + sum(ranker.weights.get(k, 0.0) * v
                                                                for k, v in c.features.items()))
        f1s.append(best.f1)
    n = len(f1s) or 1
    return {"n": len(f1s), "f1": sum(f1s) / n, "perfect": sum(1 for f in f1s if f >= 0.999) / n,
            "oracle": sum(max((c.f1 for c in q.candidates), default=0.0) for q in questions) / n}


def leave_one_kg_out(questions: list[Question], **kw: Ranker | float | JsonObject | None) -> dict[str, dict[str, float]]:
    """Per KG: a ranker trained on the other KGs, scored on this one."""
    out = {}
    for kg in sorted({q.kg for q in questions}):
        train = [q for q in questions if q.kg != kg]
        test = [q for q in questions if q.kg == kg]
        out[kg] = evaluate(fit(train, **kw), test)
    return out


def save_weights(ranker: Ranker, path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    ranker.save(p)
    return p
