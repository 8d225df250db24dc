"""The link stage: `link_question` reads a question's cue words and links its classes, predicates, values and
entities (`Anchors`, what the search starts from); then the words around a value settle its reading: a number next to a
predicate's name ("4 legs", "weight of 190") and a value right after a class word ("an animal from 2015")
link to that predicate first; the value's other readings stay, weaker, for the ranker.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from grounding.schema import SchemaMemory
from kbqa.translators.explore.context import ExploreContext
from kbqa.translators.explore.link.entities import EntityLinker
from kbqa.translators.explore.link.meaning import MeaningLinker
from kbqa.translators.explore.link.partial import outside_quotes, partial_class_links, partial_links
from kbqa.translators.explore.link.words import Cues, Link, link_schema, link_values, read_cues
from kbqa.translators.language import ENGLISH, LanguageProfile


@dataclass
class Anchors:
    """Everything linked in one question."""

    question: str
    cues: Cues
    classes: list[Link]
    predicates: list[Link]
    values: list[Link]
    entities: list[Link]
    lang: LanguageProfile = ENGLISH  # the words the question was read with

    def content_words(self) -> list[tuple[int, int]]:
        return [(m.start(), m.end()) for m in re.finditer(r"\w+", self.question)
                if m.group(0).lower() not in self.lang.function_words]


def link_question(ctx: ExploreContext, entities: EntityLinker, question: str,
                  meaning: MeaningLinker | None = None) -> Anchors:
    """Everything the question names that the store knows, and its cue words; with `meaning`, also the predicates
    of the named classes that a word no other link reads names by its meaning (link/meaning.py)."""
    lang = ctx.language
    cues = read_cues(question, lang)
    values = link_values(question, ctx.schema, cues, lang)
    if meaning is not None:  # "female" for the code F of *sex*, but not "first" or "members" for F or M
        values = meaning.meant_codes(values)
    # "the bridge named 'Rainbow Bridge'": inside a quoted value, *bridge* is the value's word, not the class
    schema_links = outside_quotes(link_schema(question, ctx.schema, lang=lang), cues, values)
    classes = [lk for lk in schema_links if lk.kind == "class"]
    # "the dorm with the largest capacity": the dorm's *student capacity*, named by part of its name; "what type
    # has the most games": the class *video games*
    schema_links += partial_links(question, ctx.schema, classes, schema_links, lang)
    classes += partial_class_links(question, ctx.schema, classes, lang)
    if meaning is not None:  # "the gender of each student": *sex*, named by a word of like meaning
        schema_links += meaning.links(question, classes, schema_links + values)
    # a span that names a class or predicate well is not a respelt item name
    ents = entities.entities(question, [lk.span for lk in schema_links if lk.score >= 0.5])
    entities.qualify(question, ents, classes)
    predicates = [lk for lk in schema_links if lk.kind == "predicate"]
    number_units(question, values, predicates, lang)
    value_owners(question, values, classes, ctx.schema, lang)
    return Anchors(question, cues, classes, predicates, values, ents, lang)


def number_units(question: str, values: list[Link], predicates: list[Link], lang: LanguageProfile = ENGLISH
                 ) -> None:
    """A number links to every numeric predicate that holds it, all alike; the word right after it ("4
    legs", "3 wheels") or right before it ("age 30", "weight of 190") names the predicate meant. That
    predicate's link to the number gets the word's link score, the number's other readings are halved."""
    by_span: dict[tuple[int, int], list[Link]] = {}
    for v in values:
        if v.value is not None and v.op == "=" and question[v.span[0]:v.span[1]].strip(" .,;:?!").isdigit():
            by_span.setdefault(v.span, []).append(v)
    for (start, end), links in by_span.items():
        named = {p.iri: p.score for p in predicates
                 if names_unit(question, end, p.span) or
                 (p.span[1] <= start and _gap_is(question[p.span[1]:start], lang.unit_gaps))}
        if not any(v.iri in named for v in links):
            continue
        for v in links:
            v.score = max(v.score, named[v.iri]) if v.iri in named else v.score * 0.5


def names_unit(question: str, number_end: int, span: tuple[int, int]) -> bool:
    """Whether `span` is the word right after a number ending at `number_end` ("4 legs", "at least 20 floors"):
    the number's unit, which names what it measures."""
    return question[number_end:number_end + 1] == " " and span[0] == number_end + 1


def value_owners(question: str, values: list[Link], classes: list[Link], schema: SchemaMemory,
                 lang: LanguageProfile = ENGLISH) -> None:
    """"an animal from 2015", "keepers from Oslo": a value written right after a class word (a preposition,
    an article between) belongs to a predicate of that class (the animal's birth year, not its keeper's hiring
    year). Where the value's readings split into predicates of that class and others, the class's own gain and
    the others lose."""
    by_span: dict[tuple[int, int], list[Link]] = {}
    for v in values:
        by_span.setdefault(v.span, []).append(v)
    for (start, _end), links in by_span.items():
        near = [c for c in classes if c.span[1] <= start and lang.owner_gap_re.fullmatch(question[c.span[1]:start])]
        if not near or len(links) < 2:
            continue
        owner = max(near, key=lambda c: (c.span[1], c.span[0])).iri  # the nearest, and the shortest there

        def owns(v: Link, owner: str = owner) -> bool:
            info = schema.predicates.get(v.iri)
            return bool(info and owner in info.domains)

        if not any(owns(v) for v in links) or all(owns(v) for v in links):
            continue
        for v in links:
            v.score = min(1.0, v.score * 1.3) if owns(v) else v.score * 0.7


def _gap_is(text: str, words: tuple[str, ...]) -> bool:
    return " ".join(text.split()).lower() in words
