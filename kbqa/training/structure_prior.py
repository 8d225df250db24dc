"""Build the `explore` ranker's structure prior from Spider4SPARQL train (question + gold SPARQL over 146
databases that none of the scored KGs is): each gold query gets its shape label (`sparql_shape`) and its parts'
labels (columns, DISTINCT, order direction, first aggregate: `features/parts.py`), and a multinomial logistic
regression per label kind over the question's words and bigrams (numpy, L2, full batch — a few dozen lines; the
design matrix is sparse where scipy is installed) learns P(shape | question) and P(part | question). The weights
are pruned to the strongest features and saved as plain JSON, the parts under `parts`.

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
from typing import Any, TypeAlias

import numpy as np

from kbqa.translators.explore.features.parts import PARTS, sparql_parts
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


Example: TypeAlias = tuple[str, str, dict[str, str]]  # (database, question, labels: "shape" and each part's)


def load_examples(path: Path, exclude: set[str]) -> tuple[list[Example], int]:
    """(database, question, labels) per train pair whose question is not a scored one; and how many were dropped.
    The labels are the gold query's shape and its parts (features/parts.py)."""
    rows, dropped = [], 0
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    for x in json.loads(raw.decode("utf-8")):
        if _norm(x["question"]) in exclude:
            dropped += 1
            continue
        rows.append((x.get("kg_name", ""), x["question"], {"shape": sparql_shape(x["query"]),
                                                            **sparql_parts(x["query"])}))
    return rows, dropped


def fit(questions: list[str], labels: list[str], *, min_count: int = 3, l2: float = 1e-3, steps: int = 300,
        lr: float = 0.5, label_set: list[str] | None = None) -> StructurePrior:
    """A multinomial logistic regression of `labels` over the questions' `tokens`; `label_set` names the labels in
    order (default: the shapes but "ask", which the train set has none of)."""
    lab = label_set or list(SHAPES[1:])  # no "ask": the train set has none (a candidate ASK gets the uniform share)
    return fit_heads(questions, {"": (lab, list(labels))}, min_count=min_count, l2=l2, steps=steps, lr=lr)[""]


Head: TypeAlias = tuple[list[str], list[str | None]]  # the labels in order; each question's (None: it has none)


def fit_heads(questions: list[str], heads: dict[str, Head], *, min_count: int = 3, l2: float = 1e-3,
              steps: int = 300, lr: float = 0.5) -> dict[str, StructurePrior]:
    """One logistic regression per head over one design matrix, in one loop: Adam works weight by weight, so
    fitting the heads together gives each the model it would get alone, for one tokenisation and one product of
    the design matrix a step instead of one per head."""
    toks = [set(tokens(q)) for q in questions]
    vocab_counts = Counter(t for ts in toks for t in ts)
    vocab = sorted(t for t, c in vocab_counts.items() if c >= min_count)
    index = {t: i for i, t in enumerate(vocab)}
    x = _design([(r, index[t]) for r, ts in enumerate(toks) for t in ts if t in index], (len(questions), len(vocab)))
    xt = x.T.tocsr() if hasattr(x, "tocsr") else x.T
    blocks, ys, biases, start = [], [], [], 0
    for name, (lab, labels) in heads.items():
        y = np.zeros((len(questions), len(lab)), dtype=np.float32)
        for r, s in enumerate(labels):
            if s is not None:
                y[r, lab.index(s)] = 1.0
        has = y.sum(axis=1)
        blocks.append((name, lab, slice(start, start + len(lab)), (has / max(1.0, has.sum()))[:, None]))
        ys.append(y)
        biases.append(np.log(y.sum(axis=0) / max(1.0, has.sum()) + 1e-3))
        start += len(lab)
    y = np.hstack(ys)
    w = np.zeros((len(vocab), start), dtype=np.float32)
    b = np.concatenate(biases).astype(np.float32)
    m_w, v_w, m_b, v_b = (np.zeros_like(w), np.zeros_like(w), np.zeros_like(b), np.zeros_like(b))
    g = np.zeros((len(questions), start), dtype=np.float32)
    for step in range(1, steps + 1):  # Adam, full batch
        z = x @ w + b
        for _name, _lab, cols, row_weight in blocks:
            p = np.exp(z[:, cols] - z[:, cols].max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            g[:, cols] = (p - y[:, cols]) * row_weight  # a question without this head's label adds nothing
        gw = xt @ g + l2 * w
        gb = g.sum(axis=0)
        for param, grad, m, v in ((w, gw, m_w, v_w), (b, gb, m_b, v_b)):
            m *= 0.9
            m += 0.1 * grad
            v *= 0.999
            v += 0.001 * grad * grad
            param -= lr * 0.1 * (m / (1 - 0.9 ** step)) / (np.sqrt(v / (1 - 0.999 ** step)) + 1e-8)
    return {name: StructurePrior(lab, [round(float(a), 3) for a in b[cols]],
                                 {t: [round(float(a), 3) for a in w[i, cols]] for i, t in enumerate(vocab)})
            for name, lab, cols, _rw in blocks}


def _design(cells: list[tuple[int, int]], shape: tuple[int, int]) -> Any:  # a scipy CSR matrix or a numpy array
    """The 0/1 question × word matrix: sparse where scipy is there (the `train` extra has it, through LightGBM),
    which makes a fit seconds instead of a minute, so the ranker's fit can refit the prior once per fold."""
    rows, cols = (np.array([c[i] for c in cells], dtype=np.int64) for i in (0, 1))
    try:
        from scipy.sparse import csr_matrix
    except ImportError:
        x = np.zeros(shape, dtype=np.float32)
        x[rows, cols] = 1.0
        return x
    return csr_matrix((np.ones(len(cells), dtype=np.float32), (rows, cols)), shape=shape)


def prune(prior: StructurePrior, keep: int) -> StructurePrior:
    """Keep the `keep` features with the largest weight spread across labels (what moves the ranking)."""
    ranked = sorted(prior.weights.items(), key=lambda kv: -(max(kv[1]) - min(kv[1])))[:keep]
    return StructurePrior(prior.labels, prior.bias, dict(sorted(ranked)), prior.meta)


def fit_all(examples: list[Example], *, features: int = 3000, l2: float = 1e-3, steps: int = 300) -> StructurePrior:
    """The shape model with one model per part (a part a question's gold query lacks — a yes/no query has no
    columns — is left out of that part's fit), each pruned to `features` words."""
    heads: dict[str, Head] = {"shape": (list(SHAPES[1:]), [y["shape"] for _db, _q, y in examples])}
    heads.update({name: (list(labels), [y.get(name) for _db, _q, y in examples]) for name, labels in PARTS.items()})
    fitted = {name: prune(m, features)
              for name, m in fit_heads([q for _db, q, _y in examples], heads, l2=l2, steps=steps).items()}
    prior = fitted.pop("shape")
    prior.parts = fitted
    return prior


def accuracy(prior: StructurePrior, rows: list[Example], part: str = "shape") -> float:
    """Share of `rows` whose most likely label (of the shape, or of one part) is the gold one."""
    model = prior if part == "shape" else prior.parts[part]
    have = [(q, y[part]) for _db, q, y in rows if part in y]
    ok = 0
    for q, label in have:
        probs = model.predict(q)
        ok += max(probs, key=probs.get) == label
    return ok / max(1, len(have))


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
    fit_kw = {"features": args.features, "l2": args.l2, "steps": args.steps}
    probe = fit_all(train, **fit_kw)
    held_acc = {part: round(accuracy(probe, test, part), 3) for part in ("shape", *PARTS)}
    majority = {part: round(Counter(y[part] for _db, _q, y in test if part in y).most_common(1)[0][1]
                            / max(1, sum(part in y for _db, _q, y in test)), 3) for part in ("shape", *PARTS)}
    prior = fit_all(rows, **fit_kw)
    prior.meta = {"source": "python -m kbqa.training.structure_prior (Spider4SPARQL train, 146 databases)",
                  "examples": len(rows), "dropped_scored_duplicates": dropped, "l2": args.l2, "steps": args.steps,
                  "features": len(prior.weights), "heldout_databases": len(held),
                  "heldout_accuracy": held_acc["shape"], "heldout_majority": majority["shape"],
                  "parts_heldout_accuracy": {p: held_acc[p] for p in PARTS},
                  "parts_heldout_majority": {p: majority[p] for p in PARTS},
                  "shapes": dict(Counter(y["shape"] for _db, _q, y in rows))}
    prior.save(args.out)
    print(json.dumps(prior.meta, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
