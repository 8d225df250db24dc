"""Entities named in a question: mentions through the store's lexical index (the mention detector of the `cases`
translator), partial names ("krill" names *krill f*), names written differently from a label (link/names.py),
and a class word right after an item that says which of several same-named items is meant ("herring food")."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from grounding.text import normalize
from kb_dumps.stage_errors import KBQAError
from kbqa.translators.explore import probes
from kbqa.translators.explore.context import ExploreContext
from kbqa.translators.explore.link.names import name_variants
from kbqa.translators.explore.link.words import Link

if TYPE_CHECKING:
    from kbqa.translators.mentions import MentionDetector

MAX_VARIANTS = 6  # weak links for respelt or shortened names (link/names.py)


class EntityLinker:
    """Links the entities of a question for one store (the mention detector is built on first use)."""

    def __init__(self, ctx: ExploreContext):
        self.ctx = ctx
        self._detector: MentionDetector | None = None

    def entities(self, question: str, avoid: Sequence[tuple[int, int]] = ()) -> list[Link]:
        """Entity mentions through the store's lexical index (the mention detector of the cases translator)."""
        if self._detector is None:
            from kbqa.translators.mentions import MentionDetector, open_lexicon

            bank = self.ctx.cases.bank()
            # the mention prior learned from the bank's training questions, when the store has a bank
            prior = bank.prior if bank else None
            self._detector = MentionDetector(open_lexicon(self.ctx.store_dir), self.ctx.memory, prior,
                                             kinds=("entity",))
        out = []
        for m in self._detector.detect(question, max_mentions=4, max_candidates=3):
            for rank, c in enumerate(m.candidates):
                if c.id in self.ctx.schema.classes or c.id in self.ctx.schema.predicates:
                    continue
                out.append(Link("entity", c.id, m.score * c.match * (1.0 - 0.1 * rank), (m.start, m.end), m.text,
                                label=c.label))
        out.extend(self._partial_entities(question, out))
        out.sort(key=lambda lk: -lk.score)
        out = out[:8]
        part = self._detector.lexicon.parts.get("entity")
        if part is not None:  # names written differently from the label: weak links, the KG decides
            out += [lk for lk in name_variants(question, out, part, self.ctx.memory, avoid, self.ctx.language)
                    if lk.iri not in self.ctx.schema.classes and lk.iri not in self.ctx.schema.predicates][:MAX_VARIANTS]
        return out

    def _partial_entities(self, question: str, found: list[Link]) -> list[Link]:
        """Entities whose label contains a content word of the question as a whole token ("krill" names
        *krill f*), for spans no exact mention covers; weak links the search may still use."""

        part = self._detector.lexicon.parts.get("entity")
        if part is None:
            return []
        out: list[Link] = []
        for m in re.finditer(r"[A-Za-z][A-Za-z\-']{3,}", question):
            word = normalize(m.group(0))
            if word in self.ctx.language.function_words or any(lk.span[0] <= m.start() < lk.span[1] for lk in found):
                continue
            hits = [h for h in part.search(word, 8) if word in h.name.split() and len(h.name.split()) <= 2]
            rows = self.ctx.memory.by_rowids([h.rowid for h in hits])
            for h in hits[:2]:
                row = rows.get(h.rowid)
                if row is None or row.id in self.ctx.schema.classes or row.id in self.ctx.schema.predicates:
                    continue
                out.append(Link("entity", row.id, 0.25 / len(h.name.split()), (m.start(), m.end()), m.group(0),
                                label=row.label))
        return out

    def qualify(self, question: str, entities: list[Link], classes: list[Link]) -> None:
        """"herring food": a class word right after an entity of that class says what the entity is; the
        entity's span takes the word and the class is a weak focus. Among items of the same name the one of that
        class is meant ("herring food" is the food, not the supplier called Herring; of two such foods, the one
        the KG uses most), and the class word covers a list before it ("herring and krill food", "herring, krill
        and pellet food") and each place it is written."""

        for c in classes:
            found = False
            for m in re.finditer(r"\b" + re.escape(c.text.lower()) + r"\b", question.lower()):
                end, last = m.start(), True
                while end > 0:
                    word = re.search(r"[A-Za-z][A-Za-z'\-]*(?:\s+[A-Za-z][A-Za-z'\-]*)?\s*$", question[:end])
                    if word is None:
                        break
                    here = [e for e in entities if e.span[1] <= end and not question[e.span[1]:end].strip()
                            and e.span[1] > word.start()]
                    start = min((e.span[0] for e in here), default=word.start())
                    named = self._pick_used([e for e in here if self._is_a(e.iri, c.iri)] +
                                            self._instances_named(question, (start, end), c.iri, here))
                    if named is None:
                        break
                    if all(e is not named for e in entities):
                        entities.append(named)
                    for e in here:  # the same name, of another class (or less used): kept, but weaker
                        if e is not named:
                            e.score *= 0.5
                    named.score = min(1.0, named.score + 0.3)
                    if last:
                        named.span = (named.span[0], m.end())
                    found, last = True, False
                    joint = self.ctx.language.list_joint_re.search(question[:named.span[0]])
                    if joint is None:
                        break
                    end = joint.start()
            if found:
                c.score *= 0.3

    def _instances_named(self, question: str, span: tuple[int, int], cls: str, same: list[Link]) -> list[Link]:
        """Items of class `cls` named by the last one or two words in `span` (the name may add one word, as
        *herring f* does), other than those already linked there (`same`)."""

        part = self._detector.lexicon.parts.get("entity") if self._detector else None
        if part is None:
            return []
        tokens = list(re.finditer(r"\S+", question[span[0]:span[1]]))
        # the words of a linked name are that name ("anna berg", never just "berg"); else the last two
        # words or the last one
        for n in range(min(2, len(tokens)), 0 if not same else min(2, len(tokens)) - 1, -1):
            name = normalize(" ".join(t.group() for t in tokens[-n:])).split()
            if not name or all(w in self.ctx.language.function_words for w in name):
                continue
            hits = [h for h in part.search(" ".join(name), 10)
                    if h.name.split()[:len(name)] == name and len(h.name.split()) <= len(name) + 1]
            rows = self.ctx.memory.by_rowids([h.rowid for h in hits[:5]])
            start = span[0] + tokens[-n].start()
            score = max((e.score for e in same), default=0.25)
            out = [Link("entity", row.id, score, (start, span[1]), question[start:span[1]], label=row.label)
                   for row in (rows.get(h.rowid) for h in hits[:5])
                   if row is not None and all(e.iri != row.id for e in same) and self._is_a(row.id, cls)]
            if out:
                return out
        return []

    def _pick_used(self, links: list[Link]) -> Link | None:
        """Of items named alike, the one the KG links to most (a stray duplicate is rarely used)."""
        if len(links) <= 1:
            return links[0] if links else None
        q = probes.uses([lk.iri for lk in links])
        if q is None:
            return links[0]
        try:
            rows = self.ctx.store.query(q, timeout_s=1.0).to_dict()["rows"]
        except KBQAError:
            return links[0]
        used = {r[0]["value"]: int(r[1]["value"]) for r in rows if r[0] and r[1]}
        return max(links, key=lambda lk: used.get(lk.iri, 0))

    def _is_a(self, item: str, cls: str) -> bool:
        q = probes.is_a(item, self.ctx.schema.type_predicate, cls)
        try:
            return q is not None and bool(self.ctx.store.query(q, timeout_s=1.0).boolean)
        except KBQAError:  # a failing probe just means "not known to be"
            return False
