"""A piece of text inside an attribute's values: "the tracks whose name contains the word you", "students with
the letter a in their first name", "titles starting with 'The'".

The language profile's cue phrases (`substring_cues`: contains, starts or ends) say where such a piece is; the
piece is the quoted text after the cue (or before a placing phrase: "an 'a' in their names"), else the first
word after the cue and its fillers ("the letter", "the word"). Each piece is read as a constraint on a text
attribute of the focus class — the attributes the question links, nearest first, then the class's display
column — with the piece's own characters (`CONTAINS` / `STRSTARTS` / `STRENDS` are case-sensitive, like the
question's text). The search keeps a reading only if its query finds items, and the ranker weighs it
(feature `substring`) against the readings of the same words as a value or as no constraint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kbqa.translators.explore.link.words import overlaps
from kbqa.translators.explore.query import Cond, Step, Term

if TYPE_CHECKING:
    from kbqa.translators.explore.link.anchors import Anchors
    from kbqa.translators.explore.propose.base import Probe
    from kbqa.translators.language import LanguageProfile

SUBSTRING_OPS = ("contains", "starts", "ends")
MAX_ATTRS = 2  # attributes a piece is tried on
MAX_PIECES = 2  # pieces read in one question
SCORE = 0.5  # a reading's own score (a name word's too), the link's score where the attribute is linked


@dataclass(frozen=True)
class Piece:
    """A piece of text the question places inside a value."""

    op: str  # contains | starts | ends
    text: str
    span: tuple[int, int]  # from the cue to the piece's end
    quoted: bool
    at: tuple[int, int]  # the piece's own characters


def pieces(question: str, lang: LanguageProfile) -> list[Piece]:
    """The pieces of text the question places inside values, in order, at most MAX_PIECES."""
    res = lang.substring_res
    if res is None:
        return []
    cue_re, piece_re, after_re = res
    ops = {" ".join(c.split()): op for c, op in lang.substring_cues}
    fillers = set(lang.substring_fillers)
    out: list[Piece] = []
    for m in cue_re.finditer(question):
        op = ops[" ".join(m.group("cue").lower().split())]
        pos, skipped = m.end(), ""
        for _ in range(5):  # the cue, its fillers ("the letter"), then the piece
            t = piece_re.match(question, pos)
            if t is None:
                break
            group = next((i for i in range(1, 5) if t.group(i)), None)
            if group is not None:
                out.append(Piece(op, t.group(group), (m.start(), t.end()), True, t.span(group)))
                break
            word = t.group(5)
            # a filler or function word written with a capital is the piece itself ("starts with The", "letter A")
            lower = word.lower() if not word[0].isupper() else ""
            if lower in fillers:
                skipped, pos = word, t.end()
                continue
            # "the letter a in their names": *a* was taken for an article and *in* is no piece
            if lower in lang.function_words:
                if len(skipped) == 1:
                    out.append(Piece(op, skipped, (m.start(), pos), False, (pos - 1, pos)))
                break
            out.append(Piece(op, word, (m.start(), t.end()), False, t.span(5)))
            break
    for m in after_re.finditer(question):
        group = next(i for i in range(1, 5) if m.group(i))
        if not any(p.span[0] <= m.start() < p.span[1] for p in out):
            out.append(Piece("contains", m.group(group), (m.start(), m.end()), True, m.span(group)))
    first: dict[str, Piece] = {}  # one piece a text
    for p in out:
        first.setdefault(p.text, p)
    return list(first.values())[:MAX_PIECES]


def substring_readings(probe: Probe, a: Anchors, focus: str) -> list[tuple[Cond, tuple[int, int]]]:
    """Each piece of text as a constraint on up to MAX_ATTRS text attributes of `focus` (linked ones nearest the
    piece first, then the display column)."""
    # a bare word the question links to a class or an attribute ("albums that contain tracks") is no piece
    links = [lk.span for lk in a.classes + a.predicates if lk.score >= 0.5]
    found = [p for p in pieces(a.question, a.lang) if p.quoted or not any(overlaps(p.at, sp) for sp in links)]
    if not found:
        return []
    schema = probe.schema
    text_preds = {p for p in schema.predicates_of(focus)
                  if (info := schema.predicates[p]).literal and not info.numeric}
    display = probe.display.of(focus) if probe.display is not None else None
    out: list[tuple[Cond, tuple[int, int]]] = []
    for p in found:
        span = p.span
        linked: dict[str, float] = {}
        for lk in sorted(a.predicates, key=lambda lk: abs(lk.span[0] - span[0])):
            if lk.iri in text_preds and lk.iri not in linked:
                linked[lk.iri] = lk.score
        if display is not None and display in text_preds:
            linked.setdefault(display, SCORE)
        for pred, score in list(linked.items())[:MAX_ATTRS]:
            value = Term("literal", p.text, label=f'"{p.text}"')
            out.append((Cond((Step(pred),), p.op, value, text=a.question[span[0]:span[1]], score=max(score, SCORE),
                             span=span), span))
    return out
