"""The `cases` translator (`--translator cases`): case-based reasoning with no language model, in milliseconds.

For a question: find entity mentions (lexical index + learned prior), mask the likely mention with
a neutral word, retrieve the nearest solved cases, vote on their structure, re-fill the best
structure's entity slots from the question's mentions, re-rank (entity, property) pairs by whether
the store has such a triple, and write the DeSQ text with re-labelled grounding lines.
"""

from __future__ import annotations

import itertools
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from assembler.plan import Placeholder, walk
from grounding.context import TripleChecker
from grounding.text import normalize
from kb_dumps.label_memory import LabelMemory
from kb_dumps.layout import StoreLayout
from kb_dumps.profiles import get_profile
from kbqa.frontends.desq import parse_desq
from kbqa.frontends.desq_writer import to_desq_text
from kbqa.translators.base import TranslateError, TranslationResult, Translator
from kbqa.translators.casebank import NEUTRAL, Case, CaseBank, Hit, Slot, bank_dir, question_key, slot_pattern

if TYPE_CHECKING:
    from kb_dumps.store_types import Store
    from kbqa.settings import TranslatorSettings

from kbqa.translators.mentions import (
    EntityCandidate,
    Mention,
    MentionDetector,
    choose,
    mask,
    open_lexicon,
    tokenize,
)

# A triple the store does not have multiplies a candidate's score by this.
KB_MISS = 0.1
GROUPS_PER_HYPOTHESIS = 4
ENTITIES_PER_MENTION = 5


@dataclass
class _Option:
    """One way to answer: a case structure, its slots filled with (mention, entity) pairs, and a score."""

    score: float
    hit: Hit
    hypothesis: int
    fills: dict[str, tuple[Mention | None, EntityCandidate | None]] = field(default_factory=dict)
    kb: dict[str, bool] = field(default_factory=dict)


def slug(text: str, used: set[str]) -> str:
    """A DeSQ placeholder name (`[A-Za-z_][A-Za-z0-9_]*`) from a label, unique among `used`."""
    base = re.sub(r"[^a-z0-9]+", "_", normalize(text)).strip("_")[:40] or "entity"
    if base[0].isdigit():
        base = "e_" + base
    name, n = base, 2
    while name in used:
        name, n = f"{base}_{n}", n + 1
    return name


class CasesTranslator(Translator):
    """Question -> DeSQ from the store's case bank. Build the bank first with `kbqa cases build`."""

    name = "cases"
    frontends = ("desq",)

    def __init__(self, store_dir: str | Path, *, bank: CaseBank | None = None, store: Store | None = None,
                 memory: LabelMemory | None = None, k: int = 20, kb_check: bool = True,
                 exclude_ids: set[str] | None = None, exclude_questions: set[str] | None = None,
                 exclude_datasets: set[str] | None = None):
        self.store_dir = Path(store_dir)
        layout = StoreLayout.of(self.store_dir)
        self.bank = bank if bank is not None else CaseBank.load(bank_dir(self.store_dir))
        if not len(self.bank):
            raise TranslateError(f"the case bank of {self.store_dir} is empty; build it with `kbqa cases build "
                                 f"--store {self.store_dir}`")
        self.profile = get_profile(layout.profile_name)
        # the engine's label memory when it hands one over (one open per process), else our own
        self._own_memory = memory is None
        self.memory = memory if memory is not None else LabelMemory(layout.labels, readonly=True)
        self.detector = MentionDetector(open_lexicon(self.store_dir), self.memory, self.bank.prior)
        self.checker = TripleChecker(self.store_dir, store) if kb_check else None
        self.k = k
        self.exclude_ids = set(exclude_ids or ())
        self.exclude_questions = {question_key(q) for q in exclude_questions or ()}
        self.exclude_datasets = set(exclude_datasets or ())
        # load and warm the model now (the first forward pass is slow): a translation's time is its own
        self.bank.encode(["warm up"])

    def exclude(self, ids: set[str], questions: set[str]) -> None:
        self.exclude_ids |= ids
        self.exclude_questions |= {question_key(q) for q in questions}

    def close(self) -> None:
        if self._own_memory:
            self.memory.close()
        if self.checker is not None:
            self.checker.close()

    # ---- translate -----------------------------------------------------------------------
    def translate(self, question: str, frontend: str = "desq", *, qid: str | None = None) -> TranslationResult:
        self.check_frontend(frontend)
        t0 = time.perf_counter()
        question = " ".join((question or "").split())
        if not question:
            raise TranslateError("the question is empty")
        mentions = self.detector.detect(question)
        hyps = self._hypotheses(mentions)
        vectors = self.bank.encode([mask(question, [(m.start, m.end) for m in h], NEUTRAL) for h in hyps])
        options: list[_Option] = []
        for hi, (h, vec) in enumerate(zip(hyps, vectors, strict=True)):
            hits = [x for x in self.bank.search_vector(vec, self.k, self.exclude_ids, self.exclude_questions)
                    if x.case.dataset not in self.exclude_datasets]
            options.extend(self._options(hi, h, mentions, hits))
        if not options:
            raise TranslateError("no case in the bank resembles this question (is the bank built for this store?)",
                                 qid=qid)
        if self.checker is not None:
            self._check_kb(options)
        options.sort(key=lambda o: -o.score)
        best = None
        for opt in options[:10]:
            text = self._fill(opt, question)
            if text is not None:
                best = (opt, text)
                break
        if best is None:
            raise TranslateError("no retrieved case could be re-filled into valid DeSQ", qid=qid)
        opt, text = best
        details = {
            "case": opt.hit.case.id, "case_question": opt.hit.case.question, "similarity": round(opt.hit.similarity, 4),
            "score": round(opt.score, 4),
            "mentions": [{"text": m.text, "score": round(m.score, 3),
                          "candidates": [c.id for c in m.candidates[:3]]} for m in mentions[:4]],
            "fills": {slot: {"mention": m.text if m else None, "uri": e.id if e else None, "kb": opt.kb.get(slot)}
                      for slot, (m, e) in opt.fills.items()},
            "masked": [mask(question, [(m.start, m.end) for m in h], NEUTRAL) for h in hyps],
        }
        return TranslationResult(text, frontend, self.name, self.bank.model, 0, 0, time.perf_counter() - t0, details)

    def _hypotheses(self, mentions: list[Mention]) -> list[list[Mention]]:
        """Which spans to mask: the best mention, the next best elsewhere, and both (two-entity questions)."""
        if not mentions:
            return [[]]
        first = mentions[0]
        hyps = [[first]]
        second = next((m for m in mentions[1:] if not m.overlaps(first)), None)
        alt = next((m for m in mentions[1:] if m.overlaps(first) and (m.start, m.end) != (first.start, first.end)),
                   None)
        if second is not None and second.score >= 0.35 * first.score:
            hyps.append([second])
            hyps.append(sorted([first, second], key=lambda m: m.start))
        elif alt is not None and alt.score >= 0.5 * first.score:
            hyps.append([alt])
        return hyps

    def _options(self, hi: int, masked: list[Mention], ranked: list[Mention], hits: list[Hit]) -> list[_Option]:
        """Candidate structures from one retrieval, each with its slots assigned to mentions."""
        if not hits:
            return []
        groups: dict[str, list[Hit]] = {}
        for hit in hits:
            groups.setdefault(hit.case.signature, []).append(hit)
        total = sum(max(h.similarity, 0.0) ** 4 for h in hits) or 1.0
        ranked_groups = sorted(groups.values(), key=lambda g: -sum(max(h.similarity, 0.0) ** 4 for h in g))
        out = []
        for group in ranked_groups[:GROUPS_PER_HYPOTHESIS]:
            share = sum(max(h.similarity, 0.0) ** 4 for h in group) / total
            rep = max(group, key=lambda h: h.similarity)
            base = max(rep.similarity, 0.0) ** 2 * (0.4 + 0.6 * share)
            slots = sorted((s for s in rep.case.slots if s.refillable), key=lambda s: s.position)
            picked = self._assign(len(slots), masked, ranked)
            if len(picked) < len(slots):
                base *= 0.5 ** (len(slots) - len(picked))  # a slot with no mention: weaker evidence
            for ent_choice in self._entity_choices(slots, picked):
                opt = _Option(base, rep, hi)
                for slot, (mention, cand, factor) in ent_choice.items():
                    opt.fills[slot] = (mention, cand)
                    opt.score *= factor
                out.append(opt)
        return out

    @staticmethod
    def _assign(n: int, masked: list[Mention], ranked: list[Mention]) -> list[Mention]:
        """`n` non-overlapping mentions for `n` slots, the masked ones first, then in question order."""
        if n == 0:
            return []
        pool = masked + [m for m in ranked if m not in masked]
        return sorted(choose(pool, n), key=lambda m: m.start)

    def _entity_choices(self, slots: list[Slot], picked: list[Mention]
                        ) -> list[dict[str, tuple[Mention | None, EntityCandidate | None, float]]]:
        """Combinations of candidate entities for the slots: up to 5 for the first slot, 2 for the second, then 1
        (the KB re-rank decides among them)."""
        per_slot: list[list[tuple[str, Mention | None, EntityCandidate | None, float]]] = []
        for i, slot in enumerate(slots):
            mention = picked[i] if i < len(picked) else None
            if mention is None:
                per_slot.append([(slot.name, None, None, 1.0)])
                continue
            cands = [c for c in mention.candidates if c.kind == slot.kind] or mention.candidates
            limit = (ENTITIES_PER_MENTION, 2)[i] if i < 2 else 1
            per_slot.append([(slot.name, mention, c, mention.score * self._entity_factor(c, r))
                             for r, c in enumerate(cands[:limit])])
        return [{name: (m, c, f) for name, m, c, f in combo} for combo in itertools.product(*per_slot)]

    def _entity_factor(self, cand: EntityCandidate, rank: int) -> float:
        return cand.match * (0.5 + 0.5 * self.detector.pop(cand.popularity)) * (0.97 ** rank)

    def _check_kb(self, options: list[_Option]) -> None:
        """One store query for every (entity, property, position) the options need; misses lower scores."""
        wanted = set()
        for opt in options:
            for chk in opt.hit.case.checks:
                fill = opt.fills.get(chk.slot)
                if fill and fill[1] is not None:
                    wanted.add((fill[1].id, chk.property, chk.position))
        found = self.checker.check(wanted) if self.checker and wanted else set()
        for opt in options:
            for chk in opt.hit.case.checks:
                fill = opt.fills.get(chk.slot)
                if not fill or fill[1] is None:
                    continue
                ok = (fill[1].id, chk.property, chk.position) in found
                opt.kb[chk.slot] = opt.kb.get(chk.slot, True) and ok
            for ok in opt.kb.values():
                if not ok:
                    opt.score *= KB_MISS

    # ---- writing -------------------------------------------------------------------------
    def _fill(self, opt: _Option, question: str) -> str | None:
        """The case's DeSQ with its named slots re-filled (renamed, re-labelled, gold URI replaced)."""
        case: Case = opt.hit.case
        parsed = parse_desq(case.desq)
        if not parsed.ok or parsed.plan is None:
            return None
        used = {g.name for g in parsed.grounding}
        renames: dict[str, str] = {}
        relabel: list[tuple[str, str]] = []
        for g in parsed.grounding:
            if g.name not in opt.fills:
                continue
            mention, cand = opt.fills[g.name]
            label = cand.label if cand and cand.label else (mention.text if mention else _content_words(question))
            new = slug(label, used - {g.name})
            used.add(new)
            if g.label:
                relabel.append((g.label, label))
            renames[g.name] = new
            g.name, g.label = new, label
            g.description = cand.description if cand else ""
            g.uri = cand.id if cand else None
        for node in walk(parsed.plan):
            if isinstance(node, Placeholder) and node.name in renames:
                node.name = renames[node.name]
        for c in parsed.constraints:
            for old, new in relabel:
                c.text = slot_pattern(old).sub(new, c.text)
        try:
            text = to_desq_text(parsed)
        except ValueError:
            return None
        return text if parse_desq(text).ok else None


def _content_words(question: str) -> str:
    """The question without its question words: a label of last resort for a slot with no mention."""
    from kbqa.translators.mentions import STOPWORDS

    words = [question[s:e] for s, e, n in tokenize(question) if n not in STOPWORDS]
    return " ".join(words) or question


def make(settings: TranslatorSettings, store_dir: str | Path | None, *, store: Store | None = None,
         memory: LabelMemory | None = None) -> CasesTranslator:
    """The `cases` entry of `kbqa.translators.TRANSLATORS`."""
    if store_dir is None:
        raise TranslateError("the cases translator needs a store (its case bank): give --store DIR (from an "
                             "endpoint: `kbqa ingest --endpoint URL --store DIR`), or choose another --translator")
    return CasesTranslator(store_dir, store=store, memory=memory, k=settings.cases_k, kb_check=settings.cases_kb_check)
