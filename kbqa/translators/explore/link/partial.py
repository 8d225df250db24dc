"""Classes and predicates named by part of their name, and names inside a quoted value.

"the dorm with the largest capacity" names the dorm's *student capacity*; "jobs with salaries over 9000" the jobs'
*min salary* and *max salary*. A span whose words are a run of a predicate's name (less its class's words, at
least two words left) but not all of it links that predicate, weaker than a whole name does — only for
predicates of a class the question names, since elsewhere a common word would name a column of every table.
Likewise "what type has the most games" names the class *video games*: a run of a class's name words, where no
whole class name is said there (at most `MAX_PARTIAL_CLASSES`, the most populous first).

A class or predicate named inside a quoted value ("the bridge named 'Rainbow Bridge'") is the value's word,
not the class: the value link spans the whole quotation.
"""

from __future__ import annotations

from grounding.schema import SchemaMemory
from kbqa.translators.explore.link.words import Cues, Link, ngrams, overlaps, without_domain
from kbqa.translators.language import LanguageProfile

PARTIAL_SCORE = 0.75  # below link_schema's whole-name links (≥ 0.8): a whole name wins on the same span
MIN_OWNER_SCORE = 0.8  # the class whose predicates a partial name may name
MAX_PARTIAL_CLASSES = 2
MIN_WORD = 3  # letters of a word a partial name is made of ("id", "no" name nothing alone)


def _is_run(part: list[str], whole: list[str]) -> bool:
    n = len(part)
    return 0 < n < len(whole) and any(whole[i:i + n] == part for i in range(len(whole) - n + 1))


def partial_links(question: str, schema: SchemaMemory, classes: list[Link], links: list[Link],
                  lang: LanguageProfile) -> list[Link]:
    """Predicates of the named classes that a span names by a run of their own words; at most one link per
    predicate (the longest span), none for a predicate `links` already holds."""
    owners = {c.iri for c in classes if c.score >= MIN_OWNER_SCORE}
    if not owners:
        return []
    have = {lk.iri for lk in links if lk.kind == "predicate"}
    grams = _content_grams(question, [c.span for c in classes], lang)
    out: list[Link] = []
    for p, info in schema.predicates.items():
        if p in have or not info.literal or not owners.intersection(info.domains):
            continue
        core = [w for w in lang.stems(info.label) if w not in lang.name_glue_words and w not in lang.function_words]
        own = without_domain(core, p, schema, lang) or core
        if len(own) < 2:
            continue
        best: Link | None = None
        for s, e, t, st in grams:
            if _is_run(st, own) and (best is None or e - s > best.span[1] - best.span[0]):
                best = Link("predicate", p, PARTIAL_SCORE * (0.9 + 0.1 * len(st) / len(own)), (s, e), t,
                            label=info.label)
        if best is not None:
            out.append(best)
    return out


def _content_grams(question: str, taken: list[tuple[int, int]], lang: LanguageProfile
                   ) -> list[tuple[int, int, str, list[str]]]:
    out = []
    for s, e, t in ngrams(question, 3):
        st = lang.stems(t)
        if st and all(w not in lang.function_words and len(w) >= MIN_WORD for w in st) and \
                not any(overlaps((s, e), sp) for sp in taken):
            out.append((s, e, t, st))
    return out


def partial_class_links(question: str, schema: SchemaMemory, classes: list[Link], lang: LanguageProfile
                        ) -> list[Link]:
    """Classes a span names by a run of their name's words, where no class is linked on that span."""
    grams = _content_grams(question, [c.span for c in classes], lang)
    have = {c.iri for c in classes}
    found: list[tuple[int, int, Link]] = []
    for cls, info in schema.classes.items():
        if cls in have:
            continue
        name = [w for w in lang.stems(schema.class_label(cls)) if w not in lang.function_words]
        if len(name) < 2:
            continue
        best: Link | None = None
        for s, e, t, st in grams:
            if _is_run(st, name) and (best is None or e - s > best.span[1] - best.span[0]):
                best = Link("class", cls, PARTIAL_SCORE * (0.9 + 0.1 * len(st) / len(name)), (s, e), t,
                            label=schema.class_label(cls))
        if best is not None:
            found.append((best.span[1] - best.span[0], int(info.get("count", 0)), best))
    found.sort(key=lambda f: (-f[0], -f[1]))
    return [lk for _n, _c, lk in found[:MAX_PARTIAL_CLASSES]]


def outside_quotes(links: list[Link], cues: Cues, values: list[Link]) -> list[Link]:
    """The class and predicate links not inside a quotation that a value link spans whole."""
    quoted = [(s, e) for _t, s, e in cues.quoted
              if any(v.span[0] <= s + 1 and v.span[1] >= e - 1 for v in values)]
    if not quoted:
        return links
    return [lk for lk in links if not any(s <= lk.span[0] and lk.span[1] <= e for s, e in quoted)]
