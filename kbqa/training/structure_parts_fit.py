"""The parts of the `structure` translator's model fitted on a set of train examples: the bank of masked
questions, the mention prior, the skeleton chooser and the property scorer (kbqa/training/structure_fit.py
puts them together; structure_rerank_fit.py fits them per fold for the re-ranker)."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from eval.skeleton import Skeleton
from grounding.text import normalize
from kbqa.training.structure_data import Example
from kbqa.training.structure_skeleton_fit import fit_skeleton_model
from kbqa.translators.structure.answer import PROPERTIES_PATH
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
                                   MentionPrior(spans=prior["spans"], words=prior["words"]), fuzzy_beside_exact=True)
        return {e.id: tuple(mention_features(detector.detect(e.question), e.question)) for e in examples}
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


def write(model: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        json.dump(model, f, ensure_ascii=False, separators=(",", ":"))
