"""Entity mentions in a question: longest n-gram matches in the lexical index, then fuzzy; a learned prior.

A mention is a span of the question with candidate KB ids. Spans that exactly match a name
(label or alias) of the label memory come first; when none is convincing, the runs of content
words are searched fuzzily. The prior, learned from training questions whose gold entity is
known, says how often a span was the gold entity when it matched a name ("the" matches the band
*The*, but is almost never the entity asked about) and which words are almost never inside one.
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path

from grounding.lexical_index import LexicalIndex
from grounding.text import normalize
from kb_dumps.dict_records import DictRecord
from kb_dumps.label_memory import LabelMemory
from kb_dumps.layout import StoreLayout
from kbqa.translators.language import ENGLISH

log = logging.getLogger(__name__)

MAX_SPAN_TOKENS = 12  # award and office names run to 9-11 words ("… Award for Best Actor in a Leading Role")
# Words that start questions or glue them; never a whole mention unless the prior says otherwise (the English
# profile's list, language.py; the cases translator imports it under this name).
STOPWORDS = ENGLISH.mention_stopwords
# A fuzzy match counts only above this similarity (rapidfuzz ratio in [0, 1]).
FUZZY_MIN = 0.86
# The prior of a fuzzy name found beside names matched exactly: a weaker guess than those, kept under the 0.2 at
# which the structure chooser counts a mention as an entity (its features stay what they were fitted on), but there
# for a skeleton that wants one more entity ("Did Jeffery Dahmer die in Portage?": Portage exact, the name misspelt).
FUZZY_BESIDE_EXACT_PRIOR = 0.15
_TOKEN_RE = re.compile(r"\w+", re.UNICODE)


@dataclass
class EntityCandidate(DictRecord):
    id: str
    label: str
    description: str
    kind: str
    popularity: int
    match: float  # 1.0 exact label, 0.97 exact alias, below for fuzzy


@dataclass
class Mention:
    """A span of the question (character offsets) with its candidates, best first, and its score."""

    start: int
    end: int
    text: str
    norm: str
    score: float
    prior: float
    fuzzy: bool = False
    candidates: list[EntityCandidate] = field(default_factory=list)

    def overlaps(self, other: Mention) -> bool:
        return self.start < other.end and other.start < self.end

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class MentionPrior:
    """Learned from training questions: span -> (times it was the gold entity, times it matched a name);
    word -> (times inside a gold mention, times seen)."""

    spans: dict[str, list[int]] = field(default_factory=dict)
    words: dict[str, list[int]] = field(default_factory=dict)

    def span_prior(self, norm: str) -> float:
        gold, seen = self.spans.get(norm, (0, 0))
        if seen:
            return (gold + 0.5) / (seen + 1.0)  # smoothed towards 0.5
        return self.word_prior(norm)

    def word_prior(self, norm: str) -> float:
        """For an unseen span: low when it is made of words that are almost never inside a mention."""
        toks = norm.split()
        if toks and all(t in STOPWORDS for t in toks):
            return 0.05
        rates = []
        for t in toks:
            inside, seen = self.words.get(t, (0, 0))
            if seen >= 20:
                rates.append((inside + 1) / (seen + 2))
        if rates and max(rates) < 0.05:
            return 0.1
        return 0.5

    def structure_word(self, tok: str) -> bool:
        inside, seen = self.words.get(tok, (0, 0))
        return tok in STOPWORDS or (seen >= 20 and (inside + 1) / (seen + 2) < 0.05)

    def observe(self, matched_spans: dict[str, bool], tokens: list[str], gold_tokens: set[int]) -> None:
        for norm, is_gold in matched_spans.items():
            rec = self.spans.setdefault(norm, [0, 0])
            rec[0] += int(is_gold)
            rec[1] += 1
        for i, t in enumerate(tokens):
            rec = self.words.setdefault(t, [0, 0])
            rec[0] += int(i in gold_tokens)
            rec[1] += 1

    def save(self, path: Path) -> None:
        words = {w: c for w, c in self.words.items() if c[1] >= 3}  # rare words say nothing; keep the file small
        path.write_text(json.dumps({"format": 1, "spans": self.spans, "words": words}, ensure_ascii=False),
                        encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> MentionPrior:
        if not path.is_file():
            return cls()
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(spans=data.get("spans", {}), words=data.get("words", {}))


def tokenize(question: str) -> list[tuple[int, int, str]]:
    """(start, end, normalised token) for each word of the question."""
    out = []
    for m in _TOKEN_RE.finditer(question):
        norm = normalize(m.group(0))
        if norm:
            out.append((m.start(), m.end(), norm))
    return out


class MentionDetector:
    """Finds entity (and class) mentions with the store's lexical index and label memory."""

    def __init__(self, lexicon: LexicalIndex, memory: LabelMemory, prior: MentionPrior | None = None,
                 kinds: tuple[str, ...] = ("entity", "class"), fuzzy_beside_exact: bool = False):
        """`fuzzy_beside_exact`: also search the words no likely exact name covers fuzzily when there is one (a
        misspelt second name; prior FUZZY_BESIDE_EXACT_PRIOR), not only when no exact name is likely."""
        self.fuzzy_beside_exact = fuzzy_beside_exact
        self.lexicon = lexicon
        self.memory = memory
        self.prior = prior or MentionPrior()
        self.kinds = tuple(k for k in kinds if k in lexicon.parts)
        top = memory.conn.execute("SELECT MAX(popularity) FROM labels").fetchone()[0]
        self._log_max_pop = math.log1p(max(int(top or 0), 1))

    # ---- exact n-gram matches ------------------------------------------------------------
    def exact_spans(self, question: str) -> list[tuple[int, int, int, int, str, list[tuple[int, bool]]]]:
        """Every span (first token, last token + 1, start, end, norm, [(rowid, alias)]) matching a name exactly."""
        toks = tokenize(question)
        out = []
        for i in range(len(toks)):
            for j in range(min(len(toks), i + MAX_SPAN_TOKENS), i, -1):
                norm = " ".join(t[2] for t in toks[i:j])
                hits: list[tuple[int, bool]] = []
                for kind in self.kinds:
                    part = self.lexicon.parts[kind]
                    for nid in part.exact(norm):
                        hits.append((int(part.a["names_rowid"][nid]), bool(part.a["names_alias"][nid])))
                if hits:
                    out.append((i, j, toks[i][0], toks[j - 1][1], norm, hits))
        return out

    def _candidates(self, hits: list[tuple[int, bool, float]], limit: int) -> list[EntityCandidate]:
        rows = self.memory.by_rowids([h[0] for h in hits])
        best: dict[int, float] = {}
        for rowid, alias, score in hits:
            s = score * (0.97 if alias else 1.0)
            best[rowid] = max(best.get(rowid, 0.0), s)
        cands = [EntityCandidate(r.id, r.label, r.description, r.kind, r.popularity, best[rid])
                 for rid, r in rows.items()]
        cands.sort(key=lambda c: -(c.match * (0.5 + 0.5 * self.pop(c.popularity))))
        return cands[:limit]

    def pop(self, popularity: int) -> float:
        return min(math.log1p(max(popularity, 0)) / self._log_max_pop, 1.0)

    # ---- detection ------------------------------------------------------------------------
    def detect(self, question: str, max_mentions: int = 6, max_candidates: int = 5) -> list[Mention]:
        """Mentions best first: exact n-gram matches scored by prior, length and popularity, then fuzzy ones."""
        toks = tokenize(question)
        mentions: list[Mention] = []
        for i, j, start, end, norm, hits in self.exact_spans(question):
            cands = self._candidates([(r, a, 1.0) for r, a in hits], max_candidates)
            if not cands:
                continue
            prior = self.prior.span_prior(norm)
            mentions.append(Mention(start, end, question[start:end], norm, self._score(prior, j - i, len(toks), cands),
                                    prior, False, cands))
        # fuzzy runs: of every word when no exact name is likely, else (`fuzzy_beside_exact`) of the words no likely
        # exact name covers
        strong = [m for m in mentions if m.prior >= 0.3]
        if not strong or self.fuzzy_beside_exact:
            covered = {k for k, t in enumerate(toks) if any(m.start <= t[0] and t[1] <= m.end for m in strong)}
            seen = {(m.start, m.end) for m in mentions}
            prior = FUZZY_BESIDE_EXACT_PRIOR if strong else 0.5
            mentions.extend(m for m in self._fuzzy(question, toks, max_candidates, covered, prior)
                            if (m.start, m.end) not in seen)
        mentions.sort(key=lambda m: (-m.score, -(m.end - m.start)))
        return mentions[:max_mentions * 3]

    def _score(self, prior: float, n_tokens: int, n_question: int, cands: list[EntityCandidate]) -> float:
        # longer spans are rarer by chance; popularity breaks ties between spans like "paris" / "paris hilton"
        length = min(1.0, 0.55 + 0.15 * n_tokens)
        best = cands[0]
        whole = 0.6 if n_tokens == n_question else 1.0  # a span that is the whole question is rarely the entity
        return prior * length * best.match * (0.6 + 0.4 * self.pop(best.popularity)) * whole

    def _fuzzy(self, question: str, toks: list[tuple[int, int, str]], max_candidates: int,
               covered: set[int] | None = None, prior: float = 0.5) -> list[Mention]:
        """Runs of content words searched fuzzily (a misspelt or differently written name); a token in `covered`
        (inside a name matched exactly) ends a run and starts none."""
        covered = covered or set()
        runs: list[tuple[int, int]] = []
        i = 0
        while i < len(toks):
            if i in covered or self.prior.structure_word(toks[i][2]):
                i += 1
                continue
            j = i
            while j < len(toks) and j not in covered and not self.prior.structure_word(toks[j][2]):
                j += 1
            runs.append((i, j))
            i = j
        out = []
        for i, j in sorted(runs, key=lambda r: -(toks[r[1] - 1][1] - toks[r[0]][0]))[:3]:
            start, end = toks[i][0], toks[j - 1][1]
            norm = " ".join(t[2] for t in toks[i:j])
            if len(norm) < 4:
                continue
            hits = []
            for kind in self.kinds:
                hits.extend((h.rowid, h.alias, h.score) for h in self.lexicon.parts[kind].search(norm, 10)
                            if h.score >= FUZZY_MIN)
            if not hits:
                continue
            cands = self._candidates(hits, max_candidates)
            out.append(Mention(start, end, question[start:end], norm,
                               0.8 * self._score(prior, j - i, len(toks), cands), prior, True, cands))
        return out


def choose(mentions: list[Mention], n: int) -> list[Mention]:
    """Up to `n` non-overlapping mentions, best first (greedy)."""
    out: list[Mention] = []
    for m in mentions:
        if len(out) >= n:
            break
        if not any(m.overlaps(o) for o in out):
            out.append(m)
    return out


def mask(question: str, spans: list[tuple[int, int]], word: str = "something") -> str:
    """The question with each span replaced by a neutral word (the structure vote ignores the entity)."""
    out, last = [], 0
    for s, e in sorted(spans):
        if s < last:
            continue
        out.append(question[last:s])
        out.append(word)
        last = e
    out.append(question[last:])
    return "".join(out)


_LEXICONS: dict[str, LexicalIndex] = {}
_LEXICONS_LOCK = threading.Lock()


def open_lexicon(store_dir: str | Path) -> LexicalIndex:
    """The store's lexical index (`kbqa index`), or one built in memory from the label memory (about a
    second for 100k rows) when the store has none; one per live data directory per process."""
    layout = StoreLayout.of(store_dir)
    key = str(layout.current)
    with _LEXICONS_LOCK:
        lex = _LEXICONS.get(key)
        if lex is None:
            folder = layout.index_dir / "lexical"
            if (folder / "entity" / "gram_keys.npy").is_file():
                lex = LexicalIndex.load(folder)
            else:
                from grounding.build import build_lexical

                log.info("no lexical index in %s; building one in memory", folder)
                memory = LabelMemory(layout.labels, readonly=True)
                try:
                    lex = build_lexical(memory)
                finally:
                    memory.close()
            _LEXICONS[key] = lex
        return lex
