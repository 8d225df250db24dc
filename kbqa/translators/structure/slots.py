"""Slot filling for a chosen skeleton: entities from question spans, properties from a fitted scorer, literals.

- entity slots `E1…`: the question's entity mentions (the store's label memory through `MentionDetector`), the
  best non-overlapping ones, in question order; each keeps its top candidates;
- property slots `R1…`: candidates from the nearest solved questions of the bank (the same skeleton's same slot,
  then any slot), from the property's label and aliases matched against the question's words, from the words the
  train questions that asked for a property used (`associations`), and the slot's prior; scored by the fitted
  scorer (`PropertyScorer`: gradient-boosted trees in the model file); each keeps its top alternatives;
- literal slots: a value the bank writes in nearly every question of the skeleton (`LIMIT 25`, `'en'`) is kept, else
  the question's own number, year, letter, quoted string or word, by the slot's type and its skeleton.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kbqa.translators.structure.features import content_words, words
from kbqa.translators.structure.trees import Trees

KNN = 40
NEUTRAL = "something"  # what a masked question writes in place of an entity name
CANDIDATES = 12
FEATURES = ("knn_slot", "knn_any", "lex", "prior", "phrase", "phrase_words", "assoc_max", "assoc_mean")
ASSOC_MIN_WORD = 3  # a word seen in fewer train questions says nothing reliable about a property
ASSOC_TOP = 40  # properties kept per word (by count)


def stem(w: str) -> str:
    return w[:5]


@dataclass
class SlotFill:
    """One slot's value and its alternatives (value, score), best first, and where it came from."""

    name: str
    value: str | None
    alternatives: list[tuple[str, float]] = field(default_factory=list)
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"slot": self.name, "value": self.value, "source": self.source,
                "alternatives": [[v, round(s, 3)] for v, s in self.alternatives[:5]]}


class PropertyNames:
    """Property labels and aliases (properties.json.gz), their stemmed content words and label embeddings."""

    def __init__(self, props: dict[str, dict[str, Any]], embedder: Any):
        self.props = props
        self.ids = list(props)
        self.words: dict[str, list[set[str]]] = {}
        self.phrases: dict[str, list[str]] = {}
        by_stem: dict[str, set[str]] = defaultdict(set)
        for pid, p in props.items():
            names = [p.get("label") or ""] + list(p.get("aliases") or [])
            self.phrases[pid] = [f" {' '.join(words(n))} " for n in names if n and words(n)]
            sets = [{stem(w) for w in content_words(n)} for n in names if n]
            self.words[pid] = [s for s in sets if s]
            for s in self.words[pid]:
                for w in s:
                    by_stem[w].add(pid)
        self.by_stem = dict(by_stem)
        self.embedder = embedder
        self._vectors: np.ndarray | None = None

    def lexical(self, question_stems: set[str]) -> dict[str, float]:
        """pid -> the best share of one of its names' content words found in the question."""
        out: dict[str, float] = {}
        for w in question_stems:
            for pid in self.by_stem.get(w, ()):
                if pid in out:
                    continue
                out[pid] = max(len(s & question_stems) / len(s) for s in self.words[pid])
        return out

    def phrase(self, pid: str, padded_question: str) -> int:
        """Words of the longest name of `pid` written as a phrase in the question (0: none)."""
        return max((len(n.split()) for n in self.phrases.get(pid, ()) if n in padded_question), default=0)


class Bank:
    """The solved questions the models were fitted on: masked text, skeleton and slot values, embedded once."""

    def __init__(self, rows: list[dict[str, Any]], embedder: Any):
        self.rows = rows
        self.vectors = embedder.encode([r["masked"] for r in rows]) if rows else np.zeros((0, embedder.dim))
        self.slot_prior: dict[tuple[str, str], Counter] = defaultdict(Counter)
        self.literal_values: dict[tuple[str, str], Counter] = defaultdict(Counter)
        self.entity_orders: dict[str, Counter] = defaultdict(Counter)
        # how many train questions ask for each property, and with which skeleton (the re-ranker's check that a
        # skeleton fits the properties the question's neighbours ask for: a property has its usual direction)
        self.property_rows: Counter = Counter()
        self.skeleton_property_rows: Counter = Counter()
        # which properties the train questions that use a word ask for: word stem -> property -> questions
        self.word_rows: Counter = Counter()
        word_props: dict[str, Counter] = defaultdict(Counter)
        for r in rows:
            stems = row_stems(r["masked"])
            props = {v for k, v in r["slots"].items() if k.startswith("R")}
            self.property_rows.update(props)
            self.skeleton_property_rows.update((r["skeleton"], p) for p in props)
            self.word_rows.update(stems)
            for w in stems:
                word_props[w].update(props)
        self.word_props: dict[str, dict[str, int]] = {
            w: dict(c.most_common(ASSOC_TOP)) for w, c in word_props.items() if self.word_rows[w] >= ASSOC_MIN_WORD}
        for r in rows:
            if r.get("entity_order"):
                self.entity_orders[r["skeleton"]][r["entity_order"]] += 1
            for name, value in r["slots"].items():
                if name.startswith("R"):
                    self.slot_prior[(r["skeleton"], name)][value] += 1
                elif not name.startswith("E"):
                    self.literal_values[(r["skeleton"], name)][value] += 1

    def skeleton_fit(self, skeleton: str, pid: str) -> float:
        """log share of the train questions asking for `pid` that have `skeleton`: a property is mostly asked for
        in one direction and hop count (the skeleton re-ranker's check of a skeleton against its properties)."""
        n = self.skeleton_property_rows.get((skeleton, pid), 0)
        return float(np.log((n + 0.5) / (self.property_rows.get(pid, 0) + 1.0)))

    def asked_property(self, neighbours: list[tuple[int, float]]) -> str | None:
        """The property the nearest solved questions ask for most (similarity⁴-weighted, any skeleton or slot)."""
        votes: dict[str, float] = defaultdict(float)
        for i, sim in neighbours:
            w = max(sim, 0.0) ** 4
            for name, value in self.rows[i]["slots"].items():
                if name.startswith("R"):
                    votes[value] += w
        return max(votes, key=lambda p: (votes[p], p)) if votes else None

    def nearest(self, vector: np.ndarray, k: int = KNN, exclude: set[int] | None = None) -> list[tuple[int, float]]:
        if not len(self.rows):
            return []
        sims = self.vectors @ vector
        order = np.argsort(-sims)[:k + len(exclude or ())]
        return [(int(i), float(sims[i])) for i in order if not exclude or int(i) not in exclude][:k]


def row_stems(masked: str) -> set[str]:
    """The stems of a masked question's content words (the neutral word that stands for an entity left out)."""
    return {stem(w) for w in content_words(masked) if w != NEUTRAL}


def associations(question_stems: set[str], bank: Bank, leave_out: dict[str, Any] | None = None
                 ) -> tuple[dict[str, float], dict[str, float]]:
    """pid -> (max over the question's words, mean over them) of P(the train question asks for pid | it has the
    word), add-one smoothed (`leave_out`: the row of the question itself, whose counts are taken out)."""
    own_stems = row_stems(leave_out["masked"]) if leave_out else set()
    own_props = {v for k, v in leave_out["slots"].items() if k.startswith("R")} if leave_out else set()
    known = [w for w in question_stems if w in bank.word_props]
    best: dict[str, float] = {}
    total: dict[str, float] = defaultdict(float)
    for w in known:
        own = w in own_stems
        n_w = bank.word_rows[w] - own
        for pid, n in bank.word_props[w].items():
            p = (n - (own and pid in own_props)) / (n_w + 1)
            best[pid] = max(best.get(pid, 0.0), p)
            total[pid] += p
    k = max(len(known), 1)
    return best, {pid: t / k for pid, t in total.items()}


def property_features(skeleton: str, slot: str, question: str, bank: Bank,
                      names: PropertyNames, neighbours: list[tuple[int, float]],
                      leave_out: dict[str, Any] | None = None) -> dict[str, dict[str, float]]:
    """Candidate pid -> feature values for one property slot of `question` (entity mentions masked: their words
    name no property) (`leave_out`: the bank row of the question itself,
    whose own counts are taken out when features of a training question are computed)."""
    slot_votes: Counter = Counter()
    any_votes: Counter = Counter()
    total = 0.0
    for i, sim in neighbours:
        row = bank.rows[i]
        w = max(sim, 0.0) ** 4
        total += w
        for name, value in row["slots"].items():
            if not name.startswith("R"):
                continue
            any_votes[value] += w
            if row["skeleton"] == skeleton and name == slot:
                slot_votes[value] += w
    total = total or 1.0
    prior = Counter(bank.slot_prior.get((skeleton, slot), Counter()))
    if leave_out and leave_out["skeleton"] == skeleton and slot in leave_out["slots"]:
        prior[leave_out["slots"][slot]] -= 1
    n_prior = sum(prior.values()) or 1
    q_stems = {stem(w) for w in content_words(question)}
    lex = names.lexical(q_stems)
    padded = f" {' '.join(words(question))} "
    phrase = {p: names.phrase(p, padded) for p in lex}
    by_lex = sorted(lex, key=lambda p: (-phrase[p], -lex[p], p))[:CANDIDATES * 2]
    assoc_max, assoc_mean = associations(q_stems, bank, leave_out)
    by_assoc = sorted(assoc_max, key=lambda p: (-assoc_max[p], p))[:CANDIDATES]
    cands = set(slot_votes) | {p for p, _ in any_votes.most_common(CANDIDATES)} | \
        {p for p, _ in prior.most_common(CANDIDATES) if prior[p] > 0} | set(by_lex) | set(by_assoc)
    out = {}
    for pid in cands:
        if pid not in names.props:
            continue
        n_phrase = phrase.get(pid, 0)
        out[pid] = {"knn_slot": slot_votes[pid] / total, "knn_any": any_votes[pid] / total, "lex": lex.get(pid, 0.0),
                    "prior": float(np.log((max(prior[pid], 0) + 0.1) / n_prior)), "phrase": float(n_phrase > 0),
                    "phrase_words": min(n_phrase, 5) / 5, "assoc_max": assoc_max.get(pid, 0.0),
                    "assoc_mean": assoc_mean.get(pid, 0.0)}
    return out


class PropertyScorer:
    """A property candidate's probability of being the slot's gold property from its `FEATURES`: gradient-boosted
    trees (`structure-trees/1`, trees.py) fitted by kbqa/training/structure_fit.py, or a linear score (`weights`,
    `bias`: the format of models fitted before the trees)."""

    def __init__(self, data: dict[str, Any]):
        self.trees = Trees(data["trees"]) if data.get("trees") else None
        weights = data.get("weights") or {}
        self.w = np.array([weights.get(f, 0.0) for f in FEATURES])
        self.bias = float(data.get("bias", 0.0))

    def rank(self, feats: dict[str, dict[str, float]]) -> list[tuple[str, float]]:
        if not feats:
            return []
        pids = list(feats)
        if self.trees is not None:
            z = self.trees.score([feats[p] for p in pids])
        else:
            z = np.array([[feats[p][f] for f in FEATURES] for p in pids]) @ self.w + self.bias
        s = 1.0 / (1.0 + np.exp(-z))
        order = np.argsort(-s, kind="stable")
        return [(pids[i], float(s[i])) for i in order]


# ---- literals -------------------------------------------------------------------------------------
WEAK_LITERALS = ("word in the question", "last word of the question")  # sources that guess rather than read
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:[.,]\d+)?(?![\w])")
_YEAR = re.compile(r"\b(1\d{3}|20\d{2})\b")
_QUOTED = re.compile(r"[\"“‘']([^\"”’']{1,60})[\"”’']")
_LETTER = re.compile(r"\b(?:letter|with(?: an?)?)\s+['\"]?([A-Za-z0-9])['\"]?(?:\W|$)", re.I)
_WORD_AFTER = re.compile(r"\b(?:word|contains?|containing|has|with)\s+['\"“]?([\w-]+)['\"”]?", re.I)


def literal_value(skeleton: str, slot: str, question: str, bank: Bank, lit_type: str) -> SlotFill:
    """A literal slot's value: the bank's constant for this skeleton slot, else read from the question."""
    seen = bank.literal_values.get((skeleton, slot), Counter())
    total = sum(seen.values())
    if total >= 5:
        value, n = seen.most_common(1)[0]
        if n / total >= 0.8:
            return SlotFill(slot, value, [(value, n / total)], "constant of the skeleton")
    context = skeleton.split(slot)[0][-40:]
    if lit_type == "LANG":
        return SlotFill(slot, "en", [("en", 1.0)], "language")
    if "YEAR" in context or lit_type == "DATE":
        years = _YEAR.findall(question)
        if years:
            return SlotFill(slot, years[-1], [(y, 1.0) for y in reversed(years)], "year in the question")
    if "STRSTARTS" in context:
        m = _LETTER.search(question)
        if m:
            return SlotFill(slot, m.group(1).lower(), [(m.group(1).lower(), 1.0)], "letter in the question")
    if lit_type == "NUM":
        nums = [n.replace(",", "") for n in _NUMBER.findall(question)]
        if nums:
            return SlotFill(slot, nums[-1], [(n, 1.0) for n in reversed(nums)], "number in the question")
    quoted = _QUOTED.findall(question)
    if quoted:
        return SlotFill(slot, quoted[0], [(q, 1.0) for q in quoted], "quoted in the question")
    m = _WORD_AFTER.search(question)
    if m:
        value = m.group(1).lower() if "LCASE" in context else m.group(1)
        return SlotFill(slot, value, [(value, 0.5)], "word in the question")
    ws = [w for w in words(question) if w]
    if ws:
        return SlotFill(slot, ws[-1], [(ws[-1], 0.2)], "last word of the question")
    return SlotFill(slot, None, [], "none")
