"""Fit the `structure` translator's models on the Wikidata train sets and write them as one gzipped JSON file.

  python -m kbqa.training.structure_fit                                  the shipped model (every train set)
  python -m kbqa.training.structure_fit --exclude-sets qald7-train,qald9plus-train --out /tmp/m.json.gz
  python -m kbqa.training.structure_fit --kfold 1,2,4                    choose C by 3-fold on the train questions

What is fitted (all on train data; dev sets are never read):
1. the skeleton chooser (kbqa/training/structure_skeleton_fit.py);
2. the bank: every train question with its entity names masked (gold entities' labels from the store's label
   memory), its skeleton and slot values: the nearest-question votes of the property scorer read it;
3. the property scorer: gradient-boosted trees (LightGBM, written as JSON: structure/trees.py) over (question,
   property, skeleton slot) candidates of PROPERTY_SAMPLE train questions, their features computed with the question
   itself left out of the bank (its neighbours exclude it, its own count is taken out of the slot prior and of the
   word-property associations), labelled by the gold property;
4. the skeleton re-ranker (`fit_reranker`): logistic regression over the chooser's top skeletons of train questions,
   stacked: each fold's questions (3 folds by question, a sample of each) are filled by a chooser, bank and property
   scorer fitted on the other folds (`--reranker-only` fits it alone; `--part-cache` keeps the fold choosers, the
   slow part, for the next run on the same questions; `--base M --reranker R` puts it into model M as it is).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from eval.skeleton import Skeleton
from grounding.embedder import get_embedder
from grounding.text import normalize
from kbqa.training.structure_data import TRAIN_SETS, Example, load_examples
from kbqa.training.structure_skeleton_fit import fit_skeleton_model, kfold_accuracy
from kbqa.translators.structure.answer import MODEL_PATH, PROPERTIES_PATH
from kbqa.translators.structure.features import mention_features
from kbqa.translators.structure.slots import FEATURES, NEUTRAL, Bank, PropertyNames, property_features

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_STORE = ROOT / ".kbqa" / "stores" / "wikidata-mini"
PROPERTY_SAMPLE = 3000
WD = "http://www.wikidata.org/entity/"


def masked_question(question: str, labels: list[str]) -> str:
    """The question with each gold entity's label (found case- and accent-insensitively) replaced by NEUTRAL."""
    out = question
    for label in sorted({x for x in labels if x}, key=len, reverse=True):
        idx = normalize_index(out, label)
        if idx is not None:
            out = out[:idx[0]] + NEUTRAL + out[idx[1]:]
    return out


def normalize_index(text: str, label: str) -> tuple[int, int] | None:
    low, lab = text.lower(), label.lower()
    i = low.find(lab)
    if i >= 0:
        return i, i + len(lab)
    # accents and punctuation differ: compare normalised word sequences
    target = normalize(label)
    if not target:
        return None
    import re

    toks = [(m.start(), m.end(), normalize(m.group(0))) for m in re.finditer(r"\S+", text)]
    n = len(target.split())
    for a in range(len(toks)):
        for b in range(a + 1, min(len(toks), a + n + 2) + 1):
            if " ".join(t[2] for t in toks[a:b]).strip() == target:
                return toks[a][0], toks[b - 1][1]
    return None


def bank_rows(examples: list[Example], store_dir: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The bank rows and the mention prior learned from the same questions (which names that match a span of a
    question were its gold entity: `MentionPrior`, as the case bank learns it)."""
    from kb_dumps.label_memory import LabelMemory
    from kb_dumps.layout import StoreLayout
    from kbqa.translators.mentions import MentionDetector, MentionPrior, open_lexicon, tokenize

    memory = LabelMemory(StoreLayout.of(store_dir).labels, readonly=True)
    try:
        iris = {WD + s.value[3:] for e in examples for s in e.skeleton.slots if s.kind == "entity"}
        rows_by_iri = memory.get_many(iris)
        labels = {r.id: r.label for r in rows_by_iri.values()}
        names = {r.id: {normalize(x) for x in [r.label, *r.aliases] if x} for r in rows_by_iri.values()}
        detector = MentionDetector(open_lexicon(store_dir), memory)
        prior = MentionPrior()
        for e in examples:
            gold = set().union(*[names.get(WD + s.value[3:], set()) for s in e.skeleton.slots
                                 if s.kind == "entity"] or [set()])
            toks = tokenize(e.question)
            inside: set[int] = set()
            matched: dict[str, bool] = {}
            for i, j, _start, _end, norm, _hits in detector.exact_spans(e.question):
                is_gold = norm in gold
                matched[norm] = matched.get(norm, False) or is_gold
                if is_gold:
                    inside |= set(range(i, j))
            prior.observe(matched, [t[2] for t in toks], inside)
    finally:
        memory.close()
    prior_data = {"spans": prior.spans, "words": {w: c for w, c in prior.words.items() if c[1] >= 3}}
    rows = []
    for e in examples:
        ents = [labels.get(WD + s.value[3:], "") for s in e.skeleton.slots if s.kind == "entity"]
        row = {"id": e.id, "masked": masked_question(e.question, ents), "skeleton": e.skeleton.text,
               "slots": slot_values(e.skeleton)}
        order = entity_order(e.question, ents)
        if order:
            row["entity_order"] = order
        rows.append(row)
    return rows, prior_data


def entity_order(question: str, labels: list[str]) -> str | None:
    """Which mention, in question order, fills each entity slot ("1,0": E1 is the second named), when every
    slot's label is found in the question at distinct places."""
    if len(labels) < 2:
        return None
    spans = [normalize_index(question, x) if x else None for x in labels]
    if any(s is None for s in spans) or len({s[0] for s in spans if s}) < len(spans):
        return None
    starts = sorted(s[0] for s in spans if s)
    return ",".join(str(starts.index(s[0])) for s in spans if s)


def mention_extras(examples: list[Example], store_dir: Path, prior: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    """Each example's mention features (`mention_features`), with the learned mention prior, as at query time."""
    from kb_dumps.label_memory import LabelMemory
    from kb_dumps.layout import StoreLayout
    from kbqa.translators.mentions import MentionDetector, MentionPrior, open_lexicon

    memory = LabelMemory(StoreLayout.of(store_dir).labels, readonly=True)
    try:
        detector = MentionDetector(open_lexicon(store_dir), memory,
                                   MentionPrior(spans=prior["spans"], words=prior["words"]))
        return {e.id: tuple(mention_features(detector.detect(e.question))) for e in examples}
    finally:
        memory.close()


def entity_counts(examples: list[Example]) -> dict[str, int]:
    """How often each entity is a gold entity of the train questions (asked-about entities recur: a tie-break
    between names shared by several entities)."""
    from collections import Counter

    return dict(Counter(s.value[3:] for e in examples for s in e.skeleton.slots if s.kind == "entity"))


def slot_values(sk: Skeleton) -> dict[str, str]:
    return {s.name: s.value for s in sk.slots if s.kind != "entity"}


PROPERTY_TREES = {"n_estimators": 200, "learning_rate": 0.05, "num_leaves": 15, "min_child_samples": 20}


def fit_property_scorer(bank: Bank, examples: list[Example], names: PropertyNames, embedder: Any,
                        sample: int = PROPERTY_SAMPLE) -> dict[str, Any]:
    """Gradient-boosted trees over candidate features (gold property = 1; LightGBM, written as `structure-trees/1`),
    each question left out of its own bank. The trees' settings were chosen over the linear scorer by 2-fold over
    the train questions (gold property first for 0.745 of slots vs 0.686)."""
    import lightgbm as lgb

    from kbqa.translators.structure.trees import Trees, trees_to_json

    step = max(1, len(examples) // sample)
    xs, ys = [], []
    hit1 = n = 0
    for i in range(0, len(examples), step):
        row = bank.rows[i]
        vec = bank.vectors[i]
        neighbours = bank.nearest(vec, exclude={i})
        for slot, gold in row["slots"].items():
            if not slot.startswith("R"):
                continue
            feats = property_features(row["skeleton"], slot, row["masked"], bank, names, neighbours,
                                      leave_out=row)
            n += 1
            for pid, f in feats.items():
                xs.append([f[k] for k in FEATURES])
                ys.append(int(pid == gold))
            hit1 += gold in feats
    x, y = np.array(xs), np.array(ys)
    clf = lgb.LGBMClassifier(**PROPERTY_TREES, random_state=0, n_jobs=1, verbose=-1)
    clf.fit(x, y)
    trees = trees_to_json(clf.booster_.dump_model(), list(FEATURES))
    check = Trees(trees).score_matrix(x[:500])
    if not np.allclose(check, clf.predict(x[:500], raw_score=True), atol=1e-4):
        raise RuntimeError("the JSON trees do not reproduce LightGBM's scores")
    return {"trees": trees, "settings": PROPERTY_TREES, "slots": n,
            "gold_among_candidates": round(hit1 / max(n, 1), 4), "candidates": len(ys)}


def fit_all_parts(examples: list[Example], store_dir: Path, c: float, embedder: Any, say: Any,
                  skeleton_model: dict[str, Any] | None = None) -> dict[str, Any]:
    """Chooser, bank, mention prior, property scorer and entity counts fitted on `examples`."""
    t0 = time.perf_counter()
    rows, mention_prior = bank_rows(examples, store_dir)
    say(f"bank and mention prior: {len(rows)} questions, {len(mention_prior['spans'])} spans "
        f"({time.perf_counter() - t0:.0f} s)")
    skel = skeleton_model or fit_skeleton_model(examples, c, embedder,
                                                mention_extras(examples, store_dir, mention_prior))
    say(f"skeleton chooser: {len(skel['classes'])} skeletons, {len(skel['words'])} word features "
        f"({time.perf_counter() - t0:.0f} s)")
    bank = Bank(rows, embedder)
    with gzip.open(PROPERTIES_PATH, "rt", encoding="utf-8") as f:
        names = PropertyNames(json.load(f), embedder)
    scorer = fit_property_scorer(bank, examples, names, embedder)
    say(f"property scorer: { {k: v for k, v in scorer.items() if k != 'trees'} } ({time.perf_counter() - t0:.0f} s)")
    return {"format": "structure-model/1", "skeleton": skel, "bank": rows, "property_scorer": scorer,
            "mention_prior": mention_prior, "entity_counts": entity_counts(examples)}


def fit_all(exclude_sets: set[str], store_dir: Path, c: float, exclude_ids: set[str] | None = None,
            exclude_questions: set[str] | None = None, log: Any = None,
            skeleton_model: dict[str, Any] | None = None, reranker: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every model of the structure translator, as the JSON-ready dict `StructureModel` reads. `reranker`: the
    skeleton re-ranker's weights (`fit_reranker`, fitted on data that holds none of the excluded sets), else it is
    fitted here on these examples."""
    t0 = time.perf_counter()
    embedder = get_embedder(None)
    examples = load_examples(exclude_sets, exclude_ids, exclude_questions)
    say = log or (lambda m: print(m, file=sys.stderr, flush=True))
    say(f"{len(examples)} train examples ({time.perf_counter() - t0:.0f} s)")
    if reranker is not None and not set(reranker.get("excluded_sets", [])) >= exclude_sets:
        raise ValueError(f"the re-ranker was fitted with {set(exclude_sets) - set(reranker['excluded_sets'])}")
    model = fit_all_parts(examples, store_dir, c, embedder, say, skeleton_model)
    model["skeleton_reranker"] = reranker or fit_reranker(examples, store_dir, c, say)
    return {**model, "sets": sorted(set(TRAIN_SETS) - exclude_sets), "excluded_sets": sorted(exclude_sets),
            "n_examples": len(examples), "c": c}


RERANK_FOLDS = 3
RERANK_SAMPLE = 2100  # held-out questions filled, over all folds
RERANK_C = (0.1, 1.0, 10.0)  # the re-ranker's inverse regularisation, chosen by k-fold over its questions


def examples_key(examples: list[Example]) -> str:
    """A digest of which questions a fit saw (a cached part model is reused only for the same questions)."""
    import hashlib

    return hashlib.sha256("\n".join(sorted(e.id for e in examples)).encode()).hexdigest()[:16]


def read_part_cache(path: Path | None) -> dict[str, Any]:
    """Fold choosers kept by an earlier run: examples key -> chooser (the one-chooser layout of earlier runs too)."""
    if not path or not path.is_file():
        return {}
    with gzip.open(path, "rt", encoding="utf-8") as f:
        cached = json.load(f)
    if "examples_key" in cached:
        return {cached["examples_key"]: cached["skeleton"]}
    return dict(cached.get("choosers") or {})


def reranker_rows(examples: list[Example], store_dir: Path, c: float, say: Any, folds: int = RERANK_FOLDS,
                  part_cache: Path | None = None) -> tuple[list[dict[str, float]], list[int], list[int]]:
    """Stacking: for each fold (by question), chooser, bank and property scorer are fitted on the other folds and a
    sample of the fold's questions is filled by them, so every feature (the chooser's p above all) is what a
    question the models never saw gets. Returns the candidates' features, whether each is the gold skeleton, and
    which question each belongs to."""
    from kb_dumps.label_memory import LabelMemory
    from kb_dumps.layout import StoreLayout
    from kbqa.translators.mentions import MentionDetector, open_lexicon
    from kbqa.translators.structure.answer import MENTION_CANDIDATES, SKELETONS_TRIED, StructureModel

    embedder = get_embedder(None)
    choosers = read_part_cache(part_cache)
    with gzip.open(PROPERTIES_PATH, "rt", encoding="utf-8") as f:
        props = json.load(f)
    rows: list[dict[str, float]] = []
    ys: list[int] = []
    groups: list[int] = []
    per_fold = max(1, RERANK_SAMPLE // folds)
    n_questions = 0
    for k in range(folds):
        rest = [e for i, e in enumerate(examples) if i % folds != k]
        held = [e for i, e in enumerate(examples) if i % folds == k]
        held = held[::max(1, len(held) // per_fold)]
        key = examples_key(rest)
        if key in choosers:
            say(f"fold {k}: skeleton chooser from {part_cache}")
        part = fit_all_parts(rest, store_dir, c, embedder, say, choosers.get(key))
        if part_cache and key not in choosers:
            choosers[key] = part["skeleton"]
            write({"choosers": choosers}, part_cache)
        model = StructureModel(part, props, embedder)
        memory = LabelMemory(StoreLayout.of(store_dir).labels, readonly=True)
        try:
            detector = MentionDetector(open_lexicon(store_dir), memory, model.mention_prior)
            for e in held:
                mentions = detector.detect(e.question, max_candidates=MENTION_CANDIDATES)
                for cand in model.candidates(e.question, mentions, SKELETONS_TRIED):
                    if cand.sparql is None:
                        continue
                    rows.append(cand.features)
                    ys.append(int(cand.skeleton == e.skeleton.text))
                    groups.append(n_questions)
                n_questions += 1
        finally:
            memory.close()
        say(f"fold {k}: {len(held)} questions filled, {len(ys)} candidates so far")
    return rows, ys, groups


def pick_first(scores: np.ndarray, ys: np.ndarray, groups: np.ndarray) -> float:
    """Share of questions whose best-scored candidate is the gold skeleton (a question without it counts wrong)."""
    best: dict[int, tuple[float, int]] = {}
    for s, y, g in zip(scores, ys, groups, strict=True):
        if g not in best or s > best[g][0]:
            best[g] = (float(s), int(y))
    return sum(y for _, y in best.values()) / max(len(best), 1)


def fit_reranker(examples: list[Example], store_dir: Path, c: float, log: Any = None,
                 part_cache: Path | None = None, folds: int = RERANK_FOLDS,
                 rows_cache: Path | None = None) -> dict[str, Any]:
    """The skeleton re-ranker: logistic regression over the chooser's top skeletons, each filled, labelled by
    whether it is the gold skeleton, on out-of-fold fills (`reranker_rows`). Its C is chosen by k-fold over those
    questions (grouped by question); the chooser's own first choice on the same questions is printed beside it.
    Features are standardised for the fit and the scale folded back into the weights, so answering reads raw
    values. `part_cache`: where the fold choosers (the slow part) are kept for the next run on the same questions;
    `rows_cache`: where the out-of-fold fills are kept (a later run on the same questions fits from them alone)."""
    from sklearn.linear_model import LogisticRegression

    say = log or (lambda m: print(m, file=sys.stderr, flush=True))
    key = examples_key(examples)
    if rows_cache and rows_cache.is_file():
        with gzip.open(rows_cache, "rt", encoding="utf-8") as f:
            cached = json.load(f)
        if cached.get("examples_key") != key or cached.get("folds") != folds:
            raise ValueError(f"{rows_cache} holds the fills of other questions or folds")
        rows, ys_list, group_list = cached["rows"], cached["gold"], cached["question"]
        say(f"out-of-fold fills from {rows_cache}")
    else:
        rows, ys_list, group_list = reranker_rows(examples, store_dir, c, say, folds, part_cache)
        if rows_cache:
            write({"examples_key": key, "folds": folds, "rows": rows, "gold": ys_list, "question": group_list},
                  rows_cache)
    names = sorted(rows[0]) if rows else []
    x = np.array([[r.get(k, 0.0) for k in names] for r in rows])
    ys, groups = np.array(ys_list), np.array(group_list)
    mu, sd = x.mean(axis=0), x.std(axis=0)
    sd[sd < 1e-9] = 1.0
    xs = (x - mu) / sd
    uniq = sorted(set(group_list))
    fold_of = {g: i % folds for i, g in enumerate(uniq)}
    fold = np.array([fold_of[g] for g in group_list])
    chooser_first = pick_first(-x[:, names.index("rank")], ys, groups)
    cv: dict[float, float] = {}
    for cc in RERANK_C:
        scores = np.zeros(len(ys))
        for k in range(folds):
            clf = LogisticRegression(C=cc, max_iter=3000).fit(xs[fold != k], ys[fold != k])
            scores[fold == k] = clf.decision_function(xs[fold == k])
        cv[cc] = round(pick_first(scores, ys, groups), 4)
    best_c = max(RERANK_C, key=lambda cc: (cv[cc], -cc))
    say(f"re-ranker k-fold skeleton accuracy {cv} vs the chooser's first choice {chooser_first:.4f} "
        f"({len(uniq)} questions); C={best_c}")
    clf = LogisticRegression(C=best_c, max_iter=3000)
    clf.fit(xs, ys)
    w = clf.coef_[0] / sd
    bias = float(clf.intercept_[0] - (clf.coef_[0] * mu / sd).sum())
    weights = {k: round(float(v), 5) for k, v in zip(names, w, strict=True)}
    out = {"weights": weights, "bias": round(bias, 5), "questions": len(uniq), "candidates": len(ys),
           "folds": folds, "c": best_c, "kfold_skeleton_accuracy": cv[best_c],
           "kfold_chooser_first": round(chooser_first, 4),
           "excluded_sets": sorted({e.dataset for e in examples} ^ set(TRAIN_SETS))}
    say(f"skeleton re-ranker: {out}")
    return out


def write(model: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        json.dump(model, f, ensure_ascii=False, separators=(",", ":"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=MODEL_PATH)
    p.add_argument("--store", type=Path, default=DEFAULT_STORE, help="store whose label memory names the entities")
    p.add_argument("--exclude-sets", default="", help=f"comma-separated, of {', '.join(TRAIN_SETS)}")
    p.add_argument("--c", type=float, default=2.0, help="inverse regularisation of the skeleton chooser")
    p.add_argument("--reuse-skeleton", type=Path, default=None,
                   help="take the skeleton chooser from this model file (fitted with the same exclusions) instead of "
                        "fitting it again")
    p.add_argument("--reranker", type=Path, default=None,
                   help="take the skeleton re-ranker from this JSON file (`--reranker-only` writes one)")
    p.add_argument("--reranker-only", action="store_true", help="fit the skeleton re-ranker alone, write it to --out")
    p.add_argument("--base", type=Path, default=None,
                   help="with --reranker: take every other part (chooser, bank, scorers) from this model file (fitted "
                        "with the same exclusions) and only put the re-ranker in")
    p.add_argument("--part-cache", type=Path, default=None,
                   help="with --reranker-only: keep (or reuse) the fold choosers (each fitted on the other folds) here")
    p.add_argument("--rows-cache", type=Path, default=None,
                   help="with --reranker-only: keep (or reuse) the re-ranker's out-of-fold fills here")
    p.add_argument("--kfold", default="", help="comma-separated C values: print 3-fold skeleton accuracy, fit nothing")
    p.add_argument("--kfold-score-on", default="lcquad2-train", help="train sets whose held-out folds are scored")
    args = p.parse_args()
    exclude = {s for s in args.exclude_sets.split(",") if s}
    if args.kfold:
        examples = load_examples(exclude)
        extras = mention_extras(examples, args.store, bank_rows(examples, args.store)[1])
        for c in [float(x) for x in args.kfold.split(",")]:
            acc = kfold_accuracy(examples, c, extras=extras, score_on=set(args.kfold_score_on.split(",")))
            print(f"C={c}: 3-fold skeleton accuracy {acc:.4f} on {args.kfold_score_on}", flush=True)
        return 0
    if args.reranker_only:
        rr = fit_reranker(load_examples(exclude), args.store, args.c, part_cache=args.part_cache,
                          rows_cache=args.rows_cache)
        args.out.write_text(json.dumps(rr, indent=1) + "\n", encoding="utf-8")
        return 0
    reuse = None
    if args.reuse_skeleton or args.base:
        source = args.base or args.reuse_skeleton
        with gzip.open(source, "rt", encoding="utf-8") as f:
            old = json.load(f)
        if sorted(old.get("excluded_sets") or []) != sorted(exclude):
            p.error(f"{source} was fitted without {old.get('excluded_sets')}, not {sorted(exclude)}")
        reuse = old["skeleton"]
    reranker = json.loads(args.reranker.read_text(encoding="utf-8")) if args.reranker else None
    if args.base:
        if reranker is None:
            p.error("--base needs --reranker (the part it does not take from the base model)")
        if not set(reranker.get("excluded_sets", [])) >= exclude:
            p.error(f"the re-ranker was fitted with {exclude - set(reranker.get('excluded_sets', []))}")
        model = {**old, "skeleton_reranker": reranker, "parts_from": str(args.base),
                 "parts_command": old.get("command")}
    else:
        model = fit_all(exclude, args.store, args.c, skeleton_model=reuse, reranker=reranker)
    model["command"] = " ".join(["python -m kbqa.training.structure_fit", *sys.argv[1:]])
    if args.reuse_skeleton:
        model["skeleton_from"] = str(args.reuse_skeleton)
    write(model, args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size // 1024} KiB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
