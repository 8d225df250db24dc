"""Fit explore's fact-lack decision (kbqa/translators/explore/fallback/decision.py) on Wikidata train questions.

  python -m kbqa.training.facts_decision --store BANKED_COPY --store .kbqa/stores/wikidata-mini --per-set 400 \
      --work /tmp/fd --out kbqa/translators/explore/fallback/decision.json

For evenly spaced questions of LC-QuAD 2.0 train, WikiWebQuestions train and SimpleQuestions train (never a dev
set), over each store (one with a case bank and one without: the search's scores differ), explore's search (the sampled questions left out of the case bank, as `kbqa eval` leaves out
what it scores), then the evidence the decision reads (`StructureFallback.evidence_for`); the label is whether the
gold query has an answer on the store (a yes/no gold query is skipped: "no" is an answer either way). The rows go to
`<work>/evidence-<store>.jsonl` (reused when present: fitting and k-fold then take seconds). The fit is scikit-learn's
logistic regression on standardised features, C chosen by 5-fold cross-validation by question over a small grid; the
file holds the standardisation, the coefficients, the cross-validated accuracy and the command.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from eval.loaders import load_benchmark
from kb_dumps.json_types import JsonObject
from kbqa.training.structure_data import TRAIN_SETS

SETS = ("lcquad2-train", "wwq-train", "simplequestions-train")
C_GRID = (0.1, 1.0, 10.0)


def sample(name: str, n: int) -> list:  # noqa: ANN001 - eval Records
    records = [r for r in load_benchmark(TRAIN_SETS[name], check_syntax=False) if r.usable and r.sparql and r.question]
    return records if n >= len(records) else [records[i * len(records) // n] for i in range(n)]


def gold_has_answer(store, sparql: str) -> bool | None:  # noqa: ANN001 - a kb_dumps Store
    """Whether the gold query has a row on the store; None for a yes/no query or one the store cannot run."""
    from kb_dumps.stage_errors import KBQAError

    try:
        res = store.query(sparql, timeout_s=10.0)
    except KBQAError:
        return None
    if res.boolean is not None:
        return None
    return bool(res.rows)


def collect(store_dir: Path, per_set: int, out: Path) -> None:
    """One evidence row per sampled train question (see the module docstring)."""
    from tqdm import tqdm

    from kbqa.translators.explore.translator import ExploreTranslator

    picked = {name: sample(name, per_set) for name in SETS}
    tr = ExploreTranslator(store_dir)
    try:
        tr.exclude({r.id for rs in picked.values() for r in rs}, {r.question for rs in picked.values() for r in rs})
        sf = tr.structure_fallback
        if not sf.applies:
            raise SystemExit(f"error: {store_dir} is not a Wikidata store with the learned structure")
        with out.open("w", encoding="utf-8") as f:
            for name, records in picked.items():
                for rec in tqdm(records, desc=name, disable=not sys.stderr.isatty()):
                    label = gold_has_answer(tr.ctx.store, rec.sparql)
                    if label is None:
                        continue
                    anchors, ranked, _ = tr.search(rec.question)
                    spans = [anchors.entities[0].span] if anchors.entities else []
                    held = tr.facts.held_share(rec.question, spans)
                    best = ranked[0] if ranked else None
                    ev = sf.evidence_for(rec.question, tr.entities_used(best) if best else set(), best,
                                         held[0] if held else None, qid=rec.id)
                    if ev is None:
                        continue  # no learned query: the decision is never asked
                    f.write(json.dumps({"set": name, "id": rec.id, "store": store_dir.name, "lacks": not label,
                                        "features": ev.features()}) + "\n")
    finally:
        tr.close()


def fit(rows: list[JsonObject], command: str) -> JsonObject:
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.preprocessing import StandardScaler

    from kbqa.translators.explore.fallback.decision import FEATURES

    x = np.array([[float(r["features"].get(n, np.nan)) for n in FEATURES] for r in rows])  # type: ignore[union-attr]
    y = np.array([bool(r["lacks"]) for r in rows])
    scaler = StandardScaler().fit(x)  # ignores missing values
    xs = np.nan_to_num(scaler.transform(x), nan=0.0)  # a missing value is the mean: it adds nothing (decision.py)
    folds = StratifiedKFold(5, shuffle=True, random_state=0)
    cv = {c: float(cross_val_score(LogisticRegression(C=c, max_iter=2000), xs, y, cv=folds).mean()) for c in C_GRID}
    best_c = max(cv, key=lambda c: cv[c])
    model = LogisticRegression(C=best_c, max_iter=2000).fit(xs, y)
    per_set: dict[str, int] = {}
    for r in rows:
        key = f"{r['set']}@{r['store']}" if r.get("store") else str(r["set"])
        per_set[key] = per_set.get(key, 0) + 1
    return {"features": list(FEATURES), "mean": scaler.mean_.tolist(), "scale": scaler.scale_.tolist(),
            "coef": model.coef_[0].tolist(), "intercept": float(model.intercept_[0]),
            "meta": {"fitted_on": per_set, "lacks_share": round(float(y.mean()), 4), "C": best_c,
                     "cv5_accuracy_by_C": {str(c): round(a, 4) for c, a in cv.items()},
                     "label": "the gold query has no answer on the store", "command": command}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", type=Path, action="append", required=True,
                   help="a Wikidata store (wikidata-mini); repeat it for a copy with a case bank and one without")
    p.add_argument("--per-set", type=int, default=500, help="questions per train set, evenly spaced")
    p.add_argument("--work", type=Path, required=True,
                   help="folder for evidence-<store>.jsonl, one per store (reused when present)")
    p.add_argument("--out", type=Path, required=True, help="the decision JSON to write")
    args = p.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    rows = []
    for store in args.store:
        evidence = args.work / f"evidence-{store.name}.jsonl"
        if not evidence.is_file():
            partial = evidence.with_suffix(".partial")
            collect(store, args.per_set, partial)
            partial.replace(evidence)
        rows += [json.loads(line) for line in evidence.read_text(encoding="utf-8").splitlines() if line.strip()]
    command = "python -m kbqa.training.facts_decision " + " ".join(f"--store {s.name}" for s in args.store) + \
        f" --per-set {args.per_set}"
    data = fit(rows, command)
    args.out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(data["meta"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
