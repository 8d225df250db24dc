"""Build the `explore` ranker's structure prior from Spider4SPARQL train (question + gold SPARQL over 146
databases that none of the scored KGs is): each gold query gets its shape label (`sparql_shape`), and a
multinomial logistic regression over the question's words and bigrams (numpy, L2, full batch — a few dozen
lines, so scikit-learn, not a dependency of the project, is not pulled in for it) learns
P(shape | question). The weights are pruned to the strongest features and saved as plain JSON.

  python -m kbqa.training.structure_prior                       # writes kbqa/translators/explore/features/structure_prior.json
  python -m kbqa.training.structure_prior --train PATH --out FILE --features 3000

Every question of a scored set (Spider4SPARQL dev, BESTIARY, SimpleQuestions valid) is excluded by its text.
The held-out accuracy in the file's `meta` comes from a split by database (a fifth of them held out).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
from collections import Counter
from pathlib import Path

import numpy as np

from kbqa.translators.explore.features.prior import (
    DEFAULT_PRIOR_PATH,
    SHAPES,
    StructurePrior,
    sparql_shape,
    tokens,
)

ROOT = Path(__file__).resolve().parents[2]
# bundled by scripts/copy_benchmarks.py (gzip); a plain train.json from upstream works too
DEFAULT_TRAIN = ROOT / "eval" / "benchmarks" / "spider4sparql" / "train.json.gz"
SCORED_SETS = ("bestiary", "simplequestions-valid",
               *(f"spider4sparql-{db}" for db in ("battle_death", "car_1", "concert_singer", "employee_hire_evaluation",
                                                  "pets_1", "poker_player")))


def _norm(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def scored_questions() -> set[str]:
    from eval.loaders import load_benchmark

    out = set()
    for name in SCORED_SETS:
        for rec in load_benchmark(name, check_syntax=False):
            out.update(_norm(t) for t in rec.questions.values())
    return out


def load_examples(path: Path, exclude: set[str]) -> tuple[list[tuple[str, str, str]], int]:
    """(database, question, shape) per train pair whose question is not a scored one; and how many were dropped."""
    rows, dropped = [], 0
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    for x in json.loads(raw.decode("utf-8")):
        if _norm(x["question"]) in exclude:
            dropped += 1
            continue
        rows.append((x.get("kg_name", ""), x["question"], sparql_shape(x["query"])))
    return rows, dropped


def fit(questions: list[str], labels: list[str], *, min_count: int = 3, l2: float = 1e-3, steps: int = 300,
        lr: float = 0.5) -> StructurePrior:
    vocab_counts = Counter(t for q in questions for t in set(tokens(q)))
    vocab = sorted(t for t, c in vocab_counts.items() if c >= min_count)
    index = {t: i for i, t in enumerate(vocab)}
    x = np.zeros((len(questions), len(vocab)), dtype=np.float32)
    for r, q in enumerate(questions):
        for t in set(tokens(q)):
            if t in index:
                x[r, index[t]] = 1.0
    lab = list(SHAPES[1:])  # no "ask": the train set has none (a candidate ASK gets the uniform share)
    y = np.zeros((len(questions), len(lab)), dtype=np.float32)
    for r, s in enumerate(labels):
        y[r, lab.index(s)] = 1.0
    w = np.zeros((len(vocab), len(lab)), dtype=np.float32)
    b = np.log(y.mean(axis=0) + 1e-3).astype(np.float32)
    m_w, v_w, m_b, v_b = (np.zeros_like(w), np.zeros_like(w), np.zeros_like(b), np.zeros_like(b))
    n = len(questions)
    for step in range(1, steps + 1):  # Adam, full batch
        z = x @ w + b
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        g = (p - y) / n
        gw = x.T @ g + l2 * w
        gb = g.sum(axis=0)
        for param, grad, m, v in ((w, gw, m_w, v_w), (b, gb, m_b, v_b)):
            m *= 0.9
            m += 0.1 * grad
            v *= 0.999
            v += 0.001 * grad * grad
            param -= lr * 0.1 * (m / (1 - 0.9 ** step)) / (np.sqrt(v / (1 - 0.999 ** step)) + 1e-8)
    weights = {t: [round(float(a), 3) for a in w[i]] for i, t in enumerate(vocab)}
    return StructurePrior(lab, [round(float(a), 3) for a in b], weights)


def prune(prior: StructurePrior, keep: int) -> StructurePrior:
    """Keep the `keep` features with the largest weight spread across labels (what moves the ranking)."""
    ranked = sorted(prior.weights.items(), key=lambda kv: -(max(kv[1]) - min(kv[1])))[:keep]
    return StructurePrior(prior.labels, prior.bias, dict(sorted(ranked)), prior.meta)


def accuracy(prior: StructurePrior, rows: list[tuple[str, str, str]]) -> float:
    ok = 0
    for _db, q, s in rows:
        probs = prior.predict(q)
        ok += max(probs, key=probs.get) == s
    return ok / max(1, len(rows))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--train", type=Path, default=DEFAULT_TRAIN, help="Spider4SPARQL train.json or .json.gz (default: the bundled copy)")
    p.add_argument("--out", type=Path, default=DEFAULT_PRIOR_PATH)
    p.add_argument("--features", type=int, default=3000, help="keep this many word features")
    p.add_argument("--l2", type=float, default=1e-3)
    p.add_argument("--steps", type=int, default=300)
    args = p.parse_args(argv)
    rows, dropped = load_examples(args.train, scored_questions())
    dbs = sorted({r[0] for r in rows})
    random.Random(0).shuffle(dbs)
    held = set(dbs[: len(dbs) // 5])
    train = [r for r in rows if r[0] not in held]
    test = [r for r in rows if r[0] in held]
    probe = prune(fit([r[1] for r in train], [r[2] for r in train], l2=args.l2, steps=args.steps), args.features)
    held_acc = accuracy(probe, test)
    majority = Counter(r[2] for r in test).most_common(1)[0][1] / max(1, len(test))
    prior = prune(fit([r[1] for r in rows], [r[2] for r in rows], l2=args.l2, steps=args.steps), args.features)
    prior.meta = {"source": "python -m kbqa.training.structure_prior (Spider4SPARQL train, 146 databases)",
                  "examples": len(rows), "dropped_scored_duplicates": dropped, "l2": args.l2, "steps": args.steps,
                  "features": len(prior.weights), "heldout_databases": len(held),
                  "heldout_accuracy": round(held_acc, 3), "heldout_majority": round(majority, 3),
                  "shapes": dict(Counter(r[2] for r in rows))}
    prior.save(args.out)
    print(json.dumps(prior.meta, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
