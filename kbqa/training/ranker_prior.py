"""The structure prior as features of `explore`'s tree ranker, set out of fold.

The prior (P(query shape | question words) and P(each part of the structure | the words): `struct_prior` and
`prior_<part>`, features/prior.py and parts.py) is fitted on Spider4SPARQL train, the same
questions the ranker is fitted on; read in-sample it would know each train question's own shape, so the trees
would learn to trust it far more than it earns on a KG it never saw. Here each train question's candidates get
the prior of a fit that never saw its KG: the question's KGs are split into folds, and for each fold the prior
is refitted on the train pairs of every other fold (a fit takes seconds). Answering then reads the shipped prior,
fitted on all of train, as the held-out folds read theirs. A question from a set the prior is never fitted on
(SimpleQuestions) is out of fold whatever its fold.

A candidates file written before candidates carried their `shape` label cannot be relabelled: the prior is then
left out of the fit, as it was before.
"""

from __future__ import annotations

import random
from pathlib import Path

from kb_dumps.json_types import JsonObject
from kbqa.training.structure_prior import DEFAULT_TRAIN, Example, fit_all, load_examples, scored_questions
from kbqa.translators.explore.features.parts import PARTS, feature_parts
from kbqa.translators.explore.features.prior import StructurePrior, prior_values

FEATURE = "struct_prior"
FEATURES = (FEATURE, *(f"prior_{part}" for part in PARTS))  # every feature the prior sets


def train_examples(path: Path | None = None) -> list[Example]:
    """The prior's train pairs (default: the bundled Spider4SPARQL train), every scored question left out by its
    text."""
    return load_examples(path or DEFAULT_TRAIN, scored_questions())[0]


def has_shapes(rows: list[JsonObject]) -> bool:
    """Whether every candidate carries its shape label (files written since the label was added do)."""
    return all("shape" in c for r in rows for c in r["candidates"])


def with_prior(rows: list[JsonObject], prior: StructurePrior) -> list[JsonObject]:
    """Copies of `rows` whose candidates' `struct_prior` is this prior's, by the query path's own rule
    (`prior_values`: absent where the prior stays silent), and so are its parts' `prior_<part>`."""
    out = []
    for r in rows:
        values = prior_values(r["text"], [c["shape"] for c in r["candidates"]], prior,
                              parts=[feature_parts(c["features"]) for c in r["candidates"]])
        cands = []
        for i, c in enumerate(r["candidates"]):
            feats = {k: v for k, v in c["features"].items() if k not in FEATURES}
            for name, per_candidate in (values or {}).items():
                feats[name] = round(per_candidate[i], 5)
            cands.append({**c, "features": feats})
        out.append({**r, "candidates": cands})
    return out


def fold_of_kgs(kgs: list[str], folds: int, seed: int) -> dict[str, int]:
    """A seeded split of KG names into `folds` folds (the one `kfold_by_kg` uses)."""
    order = sorted(set(kgs))
    random.Random(seed).shuffle(order)
    return {kg: i % folds for i, kg in enumerate(order)}


def out_of_fold(rows: list[JsonObject], examples: list[Example], folds: int = 5,
                seed: int = 1) -> list[JsonObject]:
    """Copies of `rows` whose `struct_prior` comes from a prior fitted without their KG's fold."""
    fold_of = fold_of_kgs([r["kg"] for r in rows], folds, seed)
    out: list[JsonObject | None] = [None] * len(rows)
    for k in range(folds):
        held = {kg for kg, f in fold_of.items() if f == k}
        idx = [i for i, r in enumerate(rows) if r["kg"] in held]
        if not idx:
            continue
        prior = fit_all([e for e in examples if e[0] not in held])
        for i, r in zip(idx, with_prior([rows[i] for i in idx], prior), strict=True):
            out[i] = r
    return [r for r in out if r is not None]
