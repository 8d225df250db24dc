"""`explore`'s fallback where the store lacks the facts (a sample KB standing in for full Wikidata): take the
structure of the nearest solved case (the `cases` translator: retrieval, vote, entity slots re-filled) and
re-ground every other slot from the question too — properties, classes, quoted literals and the sort direction.

How a slot is re-grounded: the case's question and the new one are aligned word by word (entity mentions masked
on both sides); a differing stretch ("tallest" -> "heaviest", "sibling" -> "spouse", "t" -> "m") that names a
slot of the case in the case's question (by the slot's label, aliases or embedding) gives the new question's
words for that slot, which are grounded through the store's grounding index and checked against the schema
memory (a sort key or compared value must be a number or date where the store knows the predicate). A slot the
two questions share, or that the case's question never names (`instance of` in a type constraint), is kept.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from difflib import SequenceMatcher
from typing import Any

from rapidfuzz import fuzz

from assembler.plan import BinaryOp, Literal, OrderKey, Placeholder, Triple, Var, walk
from grounding.text import normalize
from kbqa.frontends.desq import parse_desq
from kbqa.frontends.desq_writer import to_desq_text
from kbqa.translators.base import TranslateError, TranslationResult
from kbqa.translators.casebank import slot_pattern
from kbqa.translators.explore.context import WEAK_SCORE, ExploreContext
from kbqa.translators.explore.link.words import read_cues
from kbqa.translators.explore.query import Graph
from kbqa.translators.language import ENGLISH, LanguageProfile
from kbqa.translators.mentions import tokenize

# A differing stretch of the case's question names a slot when it matches the slot's names this well.
NAMES_SLOT = 0.6
# A grounding candidate counts when the question's words match its label or an alias this well (lexical signal).
NAMES_ITEM = 0.8
_SLOT_TOKEN = "\x00slot"


@dataclass
class Reground:
    """What happened to one slot of the case: kept, re-grounded, or left to the engine's grounding."""

    name: str
    kind: str
    old: str  # the case's label (or literal)
    new: str  # the label (or literal) written now
    uri: str | None
    how: str  # kept | regrounded | ungrounded | literal | direction
    words: str = ""  # the question's words it was grounded from

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Stretch:
    """A differing stretch of the alignment: the case question's words and the new question's words."""

    old: str
    new: str
    new_raw: str
    old_raw: str = ""
    used: bool = False


def weak(ranked: list[Graph], threshold: float | None = WEAK_SCORE, names_entity: bool = False) -> str | None:
    """Why the search result should give way to the fallback, or None to keep it: no candidate; a best candidate
    that only lists a class while the question links more ("who is the employer of Ada" -> every person), or —
    when the question names an entity (`names_entity`) — that counts, orders or aggregates a class under no
    constraint at all ("who is the employer of Ada" -> the person with the lowest height); or one scoring below
    `threshold` (ranker units, when set)."""
    if not ranked:
        return "no candidate"
    best = ranked[0]
    if not best.conds and best.features.get("coverage", 0.0) < 1.0 and \
            (names_entity or (not best.aggs and best.order is None)):
        return "bare class"
    if threshold is not None and best.score < threshold:
        return "weak"
    return None


class CaseFallback:
    """The nearest case's structure with every slot re-grounded from the question (see the module docstring)."""

    def __init__(self, ctx: ExploreContext):
        self.ctx = ctx
        self._by_id: dict[str, Any] | None = None
        self._grounder: Any = None

    @property
    def _lang(self) -> LanguageProfile:
        """The words questions are read with."""
        return self.ctx.language

    # ---- what it reuses --------------------------------------------------------------------------
    def cases(self) -> Any:
        """The `cases` translator over the explore translator's bank (shared with its `case_entity` feature);
        None when the store has no case bank."""
        return self.ctx.cases.cases_translator()

    def _case(self, case_id: str) -> Any:
        if self._by_id is None:
            self._by_id = {c.id: c for c in self.ctx.cases.bank().cases}
        return self._by_id[case_id]

    def _ground(self, words: str, kind: str, k: int = 8) -> list[Any]:
        if self._grounder is None:
            from grounding.ground import get_grounder

            try:
                self._grounder = get_grounder(self.ctx.store_dir, store=self.ctx.store)
            except Exception:  # noqa: BLE001 - no grounding index: the engine grounds the label itself
                self._grounder = False
        if not self._grounder or not words.strip():
            return []
        res = self._grounder.search(words, None, kind=kind, k=k)
        # the question's words must name the item (label or alias), not merely sit near it in embedding space
        return [c for c in res.candidates if c.signals.get("lexical", 0.0) >= NAMES_ITEM]

    # ---- the fallback ----------------------------------------------------------------------------
    def translate(self, question: str, reason: str, search_info: dict[str, Any], *,
                  qid: str | None = None) -> TranslationResult | None:
        """The fallback's DeSQ, or None when there is no case bank or no case fits."""
        if self.cases() is None:
            return None
        try:  # as for explore's case votes: a question never answers itself (benchmarks score bank questions too)
            res = self.ctx.cases.translate_with_cases(question, qid=qid)
        except TranslateError:  # no case resembles it: explore's own answer (or its error naming the links)
            return None
        case = self._case(res.details["case"])
        parsed = parse_desq(res.text)
        if not parsed.ok or parsed.plan is None:
            return None
        refilled = {f for f in (res.details.get("fills") or {})}
        stretches = self._align(case, question, res.details.get("fills") or {})
        changes: list[Reground] = []
        relabel: list[tuple[str, str]] = []
        numeric = _numeric_slots(parsed.plan)
        for g in parsed.grounding:
            if g.kind not in ("property", "class") or g.name in refilled:
                continue
            ch = self._reground(g, stretches, numeric=g.name in numeric)
            changes.append(ch)
            if ch.how != "kept":
                relabel.append((g.label, ch.new))
                g.label, g.description, g.uri = ch.new, "", ch.uri
        changes += self._literals(parsed.plan, stretches, relabel)
        changes += self._direction(parsed.plan, case.question, question)
        for node in walk(parsed.plan):  # the plan's placeholders carry the guessed URI the writer keeps
            if isinstance(node, Placeholder):
                line = next((g for g in parsed.grounding if g.name == node.name), None)
                if line is not None:
                    node.label, node.description, node.guessed_uri = line.label, line.description, line.uri
        for c in parsed.constraints:
            for old, new in relabel:
                if old:
                    c.text = slot_pattern(old).sub(new, c.text)
        try:
            text = to_desq_text(parsed)
        except ValueError:
            text = ""
        if not text or not parse_desq(text).ok:
            return None
        details = {"fallback": {"reason": reason, "case": case.id, "case_question": case.question,
                                "similarity": res.details.get("similarity"),
                                "slots": [c.to_dict() for c in changes]},
                   "search": search_info, "fills": res.details.get("fills"), "case": case.id}
        return TranslationResult(text, "desq", backend="explore", details=details)

    # ---- alignment -------------------------------------------------------------------------------
    def _align(self, case: Any, question: str, fills: dict[str, Any]) -> list[_Stretch]:
        """The stretches where the case's question and this one differ, entity mentions masked on both."""
        a = _masked_tokens(case.question, [tuple(s.span) for s in case.slots if s.refillable and s.span])
        spans = []
        low = question.lower()
        for f in fills.values():
            m = (f.get("mention") or "").lower()
            i = low.find(m) if m else -1
            if i >= 0:
                spans.append((i, i + len(m)))
        b = _masked_tokens(question, spans)
        out = []
        sm = SequenceMatcher(None, [t[2] for t in a], [t[2] for t in b], autojunk=False)
        for tag, i1, i2, j1, j2 in sm.get_opcodes():
            if tag == "equal":
                continue
            old = " ".join(t[2] for t in a[i1:i2] if t[2] != _SLOT_TOKEN)
            new_toks = [t for t in b[j1:j2] if t[2] != _SLOT_TOKEN]
            new = " ".join(t[2] for t in new_toks)
            old_toks = [t for t in a[i1:i2] if t[2] != _SLOT_TOKEN]
            raw = question[new_toks[0][0]:new_toks[-1][1]] if new_toks else ""
            old_raw = case.question[old_toks[0][0]:old_toks[-1][1]] if old_toks else ""
            out.append(_Stretch(old, new, raw, old_raw))
        return out

    # ---- properties and classes ------------------------------------------------------------------
    def _names(self, g: Any) -> list[str]:
        x = self.ctx
        names = [g.label] if g.label else []
        if g.uri:
            key = x.profile.property_entity(g.uri) if g.kind == "property" else g.uri
            row = x.memory.get_many([key]).get(key)
            if row is not None:
                names += [n for n in (row.label, *row.aliases) if n]
        return list(dict.fromkeys(names))

    def _reground(self, g: Any, stretches: list[_Stretch], *, numeric: bool) -> Reground:
        names = self._names(g)
        best, best_sim = None, 0.0
        for st in stretches:
            if st.used or not _content(st.new, self._lang):
                continue
            sim = _names_similarity(st.old, names, self._lang)
            if sim > best_sim:
                best, best_sim = st, sim
        if best is None or best_sim < NAMES_SLOT:
            return Reground(g.name, g.kind, g.label, g.label, g.uri, "kept")
        best.used = True
        words = _content(best.new, self._lang)
        attribute_of = self._lang.attribute_of  # "heaviest" -> mass: the attribute an adjective sorts by
        query = attribute_of.get(words, attribute_of.get(words.split()[-1], words)) if numeric else words
        for cand in self._ground(query, g.kind):
            uri = self.ctx.profile.direct_property(cand.id) if g.kind == "property" else cand.id
            if self._fits(uri, g.kind, numeric):
                return Reground(g.name, g.kind, g.label, cand.label or query, uri, "regrounded", best.new_raw)
        best.used = False  # nothing the words name: the case's own slot is the better guess
        return Reground(g.name, g.kind, g.label, g.label, g.uri, "kept")

    def _fits(self, uri: str, kind: str, numeric: bool) -> bool:
        """What the schema memory can say: a class the store has, a predicate of the right value type."""
        schema = self.ctx.schema
        if kind == "class":
            return True
        info = schema.predicates.get(uri)
        if info is None:
            return True  # the sample lacks it: nothing to check against
        return not numeric or info.numeric or info.date

    # ---- literals and direction ------------------------------------------------------------------
    def _literals(self, plan: Any, stretches: list[_Stretch], relabel: list[tuple[str, str]]) -> list[Reground]:
        """A literal of the case that its question quotes and this question replaces ("letter t" -> "letter m",
        "in 2009" -> "in 1998") takes the new value."""
        out = []
        for node in walk(plan):
            if not isinstance(node, Literal) or node.lang or not node.value.strip():
                continue
            value = normalize(node.value)
            for st in stretches:
                if st.used or not st.new:
                    continue
                if _number(node.value):  # numbers compare as written ("0.404" is two tokens)
                    if node.value not in re.findall(r"-?\d+(?:\.\d+)?", st.old_raw):
                        continue
                    new = _number(st.new_raw)
                else:
                    new = st.new_raw if value == st.old else None
                if not new:
                    continue
                st.used = True
                out.append(Reground("", "literal", node.value, new, None, "literal", st.new_raw))
                relabel.append((node.value, new))
                node.value = new
                break
        return out

    def _direction(self, plan: Any, case_question: str, question: str) -> list[Reground]:
        """"heaviest" after a case about "shortest": the sort key's direction follows the question's cue word,
        relative to the case's own (a date sorted ascending for "oldest" stays right when both say oldest)."""
        keys = [n for n in walk(plan) if isinstance(n, OrderKey)]
        mine, theirs = read_cues(question, self._lang).superlative, read_cues(case_question, self._lang).superlative
        if not keys or not mine or mine == theirs:
            return []
        key = keys[0]
        if theirs:
            key.descending = not key.descending
        else:
            key.descending = mine == "desc"
        return [Reground("", "order", "", "desc" if key.descending else "asc", None, "direction")]


def _masked_tokens(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int, str]]:
    out: list[tuple[int, int, str]] = []
    for s, e, norm in tokenize(text):
        span = next((sp for sp in spans if sp[0] <= s < sp[1]), None)
        if span is None:
            out.append((s, e, norm))
        elif not out or out[-1][2] != _SLOT_TOKEN or out[-1][1] < span[0]:
            out.append((span[0], span[1], _SLOT_TOKEN))
    return out


def _content(words: str, lang: LanguageProfile = ENGLISH) -> str:
    return " ".join(w for w in words.split() if w not in lang.function_words)


def _names_similarity(old: str, names: list[str], lang: LanguageProfile = ENGLISH) -> float:
    """How well a stretch of the case's question names a slot: shared word stems or a close spelling, with
    adjectives read as their attribute (the profile's `attribute_of`: "tallest" names *height*)."""
    words = _content(old, lang)
    if not words or not names:
        return 0.0
    attribute_of = lang.attribute_of
    attr = attribute_of.get(words) or next((attribute_of[w] for w in words.split() if w in attribute_of), None)
    mine = set(lang.stems(words)) | (set(lang.stems(attr)) if attr else set())
    best = 0.0
    for name in names:
        theirs = {w for w in lang.stems(name) if w not in lang.function_words}
        if not theirs:
            continue
        overlap = len(mine & theirs) / len(theirs)
        best = max(best, overlap, fuzz.ratio(words, normalize(name)) / 100.0)
    return best


def _number(text: str) -> str | None:
    m = re.search(r"-?\d+(?:\.\d+)?", text)
    return m.group(0) if m else None


def _numeric_slots(plan: Any) -> set[str]:
    """Property placeholders whose object is sorted on or compared (their values must be numbers or dates)."""
    keyed: set[str] = set()
    for node in walk(plan):
        if isinstance(node, OrderKey) or isinstance(node, BinaryOp) and node.op in ("<", ">", "<=", ">="):
            keyed |= {n.name for n in walk(node) if isinstance(n, Var)}
    out = set()
    for node in walk(plan):
        if isinstance(node, Triple) and isinstance(node.p, Placeholder) and isinstance(node.o, Var) \
                and node.o.name in keyed:
            out.add(node.p.name)
    return out
