"""Language profiles: every word list the `explore` translator and its helpers read a question with, in one place.

What differs between languages lives here, the way what differs between knowledge graphs lives in a KB profile
(`kb_dumps/profiles.py`): function words, yes/no openings, comparison, aggregate and superlative words,
negation, number words, temporal and group-by cue words, the crude singular, and the regular expressions built
from those lists. The translator's parts are given a profile (`Anchors.lang`, or a `lang=` argument) and never
spell a word themselves; a second language is a second `LanguageProfile`, registered in `LANGUAGES`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property

from grounding.text import normalize


def _alternation(words: tuple[str, ...] | frozenset[str]) -> str:
    return "|".join(re.escape(w) for w in words)


def english_singular(word: str) -> str:
    """A crude English singular, enough to match "keepers" to *keeper* and "enclosures" to *enclosure*."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith("lves"):  # wolves, elves, halves
        return word[:-3] + "f"
    if len(word) > 4 and word.endswith(("ches", "shes", "sses", "xes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


@dataclass(frozen=True, eq=False)
class LanguageProfile:
    """The words of one language that carry a question's structure. Phrases that must match as whole words in a
    lower-cased, space-padded question are written with their padding spaces (" how many ")."""

    name: str
    # Words that carry structure, never a class, attribute or value by themselves.
    function_words: frozenset[str]
    # Words that start questions or glue them; never a whole entity mention unless the mention prior says so.
    mention_stopwords: frozenset[str]
    # A question starting so asks yes or no ...
    yes_no_starts: tuple[str, ...]
    # ... unless it offers alternatives with `or_word` ("is X a lion or a zebra"), except after these openings.
    existential_starts: tuple[str, ...]
    or_word: str
    and_word: str
    how_word: str  # "how" near the start: a how-question, never yes/no
    # The first word of a yes/no question (the structure prior stays silent on them).
    yes_no_first_words: frozenset[str]
    count_cues: tuple[str, ...]
    aggregate_words: Mapping[str, str]  # word -> AVG | MIN | MAX | SUM
    average_words: tuple[str, ...]  # "than the average": a comparison with an aggregate
    superlative_desc: tuple[str, ...]
    superlative_asc: tuple[str, ...]
    not_superlative_after: tuple[str, ...]  # "at most", "no more": a bound, not a superlative
    top_k_words: tuple[str, ...]  # "top 3"
    group_cues: tuple[str, ...]
    group_frequency_cues: tuple[str, ...]  # "most common": one group per value
    group_by_word: str  # " by " groups unless it follows an order cue
    order_by_cues: tuple[str, ...]
    order_desc_cues: tuple[str, ...]
    order_asc_cues: tuple[str, ...]
    order_of_cue: str
    range_words: tuple[str, str, str]  # "from (the) X to (the) Y": a sort order, not a superlative
    negations: tuple[str, ...]
    negation_exceptions: tuple[str, ...]  # "no less than": a bound, not a negation
    number_words: Mapping[str, int]
    # Comparison cue -> SPARQL operator (a number follows the cue, possibly after an attribute name).
    comparisons: tuple[tuple[str, str], ...]
    temporal_cues: tuple[str, ...]  # comparison cues about time: they compare a year or a date
    between_words: tuple[str, str]  # "between 3 and 7"
    than_word: str
    comparative_suffix: str  # "heavier than": any word with the suffix before `than_word`
    comparative_words: tuple[str, ...]  # comparatives without the suffix
    lesser_comparatives: tuple[str, ...]  # comparatives that mean "<"
    lesser_than_average: tuple[str, ...]  # "<" before "than the average"
    article: str  # "the" between a cue and what it reads
    same_words: tuple[str, ...]  # "the same keeper", "any common enclosure"
    wh_words: tuple[str, ...]  # in order of precedence
    value_wh_words: tuple[str, ...]  # wh-words that ask for a value ("what is the maximum X"), not for items
    distinct_cues: tuple[str, ...]
    frequency_words: tuple[str, ...]  # after most/least: how often, not a name ("most common")
    frequency_leads: tuple[str, ...]
    frequency_superlatives: tuple[str, ...]  # one word for "least/most common"
    frequency_comparatives: tuple[str, ...]  # before `than_word`: cue words, never a name
    most_word: str
    number_of_cue: str
    # Superlative or comparative stem -> the attribute noun it implies ("youngest" orders by *age*).
    implied_attributes: Mapping[str, str]
    # Superlative or comparative adjective -> the Wikidata-style property label it sorts by (the case fallback).
    attribute_of: Mapping[str, str]
    count_comparatives: tuple[str, ...]  # "more X than": the comparatives that compare counts
    lesser_count_comparatives: tuple[str, ...]
    percent_words: tuple[str, ...]
    percent_sign: str
    clause_verbs: tuple[str, ...]  # where a percentage's base set ends: "of <base> do/are/have ..."
    name_glue_words: tuple[str, ...]  # words of predicate names that name nothing ("has weight")
    unit_gaps: tuple[str, ...]  # between a predicate's name and its number ("weight of 190")
    owner_prepositions: tuple[str, ...]  # between a class word and its value ("an animal from 2015")
    owner_articles: tuple[str, ...]
    owner_year_word: str
    # Property groups (explore/link/groups.py, explore/propose/groups.py)
    group_generic_words: frozenset[str]  # a group's name words that say "a group" but not which
    group_nouns: tuple[str, ...]  # generic nouns after a group's name ("fitness attributes")
    group_desc_words: tuple[str, ...]
    group_asc_words: tuple[str, ...]
    beats_words: tuple[str, ...]  # "superior to", "a greater value of ... than"
    beats_lesser: tuple[str, ...]
    beats_links: tuple[str, ...]
    sum_words: tuple[str, ...]
    plural_aggregate_words: tuple[str, ...]  # "the sums": one number per item
    compared_cue_words: tuple[str, ...]  # read by a compared-items group question
    value_cue_words: tuple[str, ...]  # read by a group-aggregate question
    possessive_suffix: str  # "'s" tokenises as its own word: never the end of a name
    identifier_words: tuple[str, ...] = ()  # "the ids of …": the class's own identifier column
    # Words inside an attribute's name that say it names the items (*song_name*, *fname*, *job_title*): the
    # display column among attributes that name the items equally apart (explore/propose/display.py).
    naming_words: tuple[str, ...] = ()
    # A piece of text inside a value ("names containing the letter a", "titles starting with 'The'"): the phrase
    # before it -> contains | starts | ends; the words that may stand between the two; the words after a quoted
    # piece that place it inside an attribute ("an 'a' in their names").
    substring_cues: tuple[tuple[str, str], ...] = ()
    substring_fillers: tuple[str, ...] = ()
    substring_after: tuple[str, ...] = ()
    singular: Callable[[str], str] = english_singular

    # ---- small functions over the lists ---------------------------------------------------------------
    def stems(self, text: str) -> list[str]:
        """The normalised words of `text`, each singular."""
        return [self.singular(w) for w in normalize(text).split()]

    def is_lesser_comparative(self, word: str) -> bool:
        return word in self.lesser_comparatives

    def implied_attribute(self, word: str) -> str | None:
        """The attribute noun a superlative or comparative implies, or None."""
        return next((n for stem, n in self.implied_attributes.items() if word.startswith(stem)), None)

    # ---- regular expressions built from the lists -----------------------------------------------------
    @cached_property
    def substring_res(self) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]] | None:
        """(a cue phrase, group `cue`; a piece of text: quoted, else one bare token, groups 1-5; a quoted piece
        followed by a word that places it in an attribute). None without cues."""
        if not self.substring_cues:
            return None
        cues = sorted((re.escape(c).replace(r"\ ", r"\s+") for c, _ in self.substring_cues), key=len, reverse=True)
        quoted = "'([^']{1,30})'|\"([^\"]{1,30})\"|\u2018([^\u2019]{1,30})\u2019|\u201c([^\u201d]{1,30})\u201d"
        piece = re.compile(rf"\s*(?:{quoted}|([^\s'\"\u2018\u2019\u201c\u201d?.,!;:()]{{1,20}}))")
        after = re.compile(rf"(?:{quoted})\s+(?:{_alternation(self.substring_after)})\b", re.I)
        return re.compile(rf"\b(?P<cue>{'|'.join(cues)})\b", re.I), piece, after

    @cached_property
    def top_k_re(self) -> re.Pattern[str]:
        return re.compile(rf"\b(?:{_alternation(self.top_k_words)}) (\d+)\b")

    @cached_property
    def range_re(self) -> re.Pattern[str]:
        start, the, end = (re.escape(w) for w in self.range_words)
        return re.compile(rf"{start} ({the} )?\w+ {end} ({the} )?\w+")

    @cached_property
    def number_word_re(self) -> re.Pattern[str]:
        return re.compile(rf"\b({_alternation(tuple(self.number_words))})\b")

    @cached_property
    def between_re(self) -> re.Pattern[str]:
        b, a = (re.escape(w) for w in self.between_words)
        num = r"(-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)"  # "15,000" as well as "15000"
        return re.compile(rf"\b{b} {num} {a} {num}")

    @cached_property
    def comparative_re(self) -> re.Pattern[str]:
        return re.compile(rf"\b(\w+{re.escape(self.comparative_suffix)}|{_alternation(self.comparative_words)}) "
                          rf"{re.escape(self.than_word)}\b")

    def versus_average_re(self, cue: str) -> re.Pattern[str]:
        """`cue` followed by "(the) average": a comparison with an aggregate."""
        return re.compile(r"\b" + re.escape(cue) + rf"\s+(?:{re.escape(self.article)}\s+)?"
                          rf"(?:{_alternation(self.average_words)})\b")

    @cached_property
    def comparative_average_re(self) -> re.Pattern[str]:
        return re.compile(rf"\b(\w+{re.escape(self.comparative_suffix)}) {re.escape(self.than_word)} "
                          rf"(?:{re.escape(self.article)} )?(?:{_alternation(self.average_words)})\b")

    @cached_property
    def same_re(self) -> re.Pattern[str]:
        return re.compile(rf"\b({'|'.join(self.same_words)})\b")

    @cached_property
    def wh_res(self) -> tuple[tuple[str, re.Pattern[str]], ...]:
        return tuple((wh, re.compile(r"\b" + wh + r"\b")) for wh in self.wh_words)

    @cached_property
    def cue_span_re(self) -> re.Pattern[str]:
        """Three groups: a frequency word after most/least, a one-word frequency superlative, a comparative."""
        return re.compile(rf"\b(?:{'|'.join(self.frequency_leads)})\s+({'|'.join(self.frequency_words)})\b"
                          rf"|\b({'|'.join(self.frequency_superlatives)})\b"
                          rf"|\b({'|'.join(self.frequency_comparatives)}) {re.escape(self.than_word)}\b")

    @cached_property
    def count_comparative_re(self) -> re.Pattern[str]:
        return re.compile(rf"\b({'|'.join(self.count_comparatives)})\b(?:\s+[\w-]+){{1,5}}?\s+"
                          rf"{re.escape(self.than_word)}\b")

    @cached_property
    def percent_re(self) -> re.Pattern[str]:
        return re.compile(rf"\b({'|'.join(self.percent_words)})\b|{re.escape(self.percent_sign)}")

    @cached_property
    def clause_verb_re(self) -> re.Pattern[str]:
        return re.compile(rf"\b({'|'.join(self.clause_verbs)})\b")

    @cached_property
    def owner_gap_re(self) -> re.Pattern[str]:
        return re.compile(rf"\s*(?:(?:{'|'.join(self.owner_prepositions)})\s+)?(?:(?:{'|'.join(self.owner_articles)})"
                          rf"\s+)?(?:{re.escape(self.owner_year_word)}\s+)?$", re.IGNORECASE)

    @cached_property
    def list_joint_re(self) -> re.Pattern[str]:
        """The joint before the last item of a list ("A, B and C"), at the end of a text."""
        words = f"{re.escape(self.and_word)}|{re.escape(self.or_word)}"
        return re.compile(rf"(?:,\s*(?:{words})?|\s(?:{words}))\s*$")

    @cached_property
    def group_noun_re(self) -> re.Pattern[str]:
        return re.compile(rf"\s+({'|'.join(self.group_nouns)})\b", re.I)

    @cached_property
    def beats_re(self) -> re.Pattern[str]:
        return re.compile(rf"\b({'|'.join(self.beats_words)})(?:\s+\w+){{0,5}}?\s+(?:{'|'.join(self.beats_links)})\b")

    @cached_property
    def sum_re(self) -> re.Pattern[str]:
        return re.compile(rf"\b({'|'.join(self.sum_words)})\b")

    @cached_property
    def plural_aggregate_re(self) -> re.Pattern[str]:
        return re.compile(rf"\b({'|'.join(self.plural_aggregate_words)})\b")

    @cached_property
    def compared_cue_re(self) -> re.Pattern[str]:
        words = self.group_desc_words + self.group_asc_words + self.compared_cue_words
        return re.compile(rf"\b({'|'.join(words)})\b")

    @cached_property
    def value_cue_re(self) -> re.Pattern[str]:
        return re.compile(rf"\b({'|'.join(self.value_cue_words)})\b")


_COMMON = """a an the of in on at to for by from with and or is are was were be been being do does did what which who
whom whose where when why how that this these those it its his her their there here as into about"""

ENGLISH = LanguageProfile(
    name="english",
    function_words=frozenset((_COMMON + """ all any each every some me give list show find tell return display many
    much number count total than more less most least also both either not no only has have had can could there's
    please whats named called whole""").split()),
    mention_stopwords=frozenset((_COMMON + " s name named some any film book album song").split()),
    yes_no_starts=("is ", "are ", "does ", "do ", "did ", "was ", "were ", "can ", "has ", "have ", "is there",
                   "are there"),
    existential_starts=("is there ", "are there "),
    or_word="or",
    and_word="and",
    how_word="how",
    yes_no_first_words=frozenset({"is", "are", "was", "were", "do", "does", "did", "has", "have", "had", "can",
                                  "could", "will", "would", "should", "shall", "may", "might", "must", "am"}),
    count_cues=(" how many ", " number of ", " count ", " how much "),
    aggregate_words={"average": "AVG", "mean": "AVG", "avg": "AVG", "minimum": "MIN", "min": "MIN",
                     "maximum": "MAX", "max": "MAX", "total": "SUM", "sum": "SUM", "combined": "SUM"},
    average_words=("average", "mean"),
    superlative_desc=("highest", "largest", "biggest", "greatest", "most", "oldest", "heaviest", "longest",
                      "maximum", "top", "best", "latest", "newest", "tallest", "fastest", "max"),
    superlative_asc=("lowest", "smallest", "least", "youngest", "lightest", "shortest", "minimum", "fewest",
                     "earliest", "worst", "min", "slowest", "cheapest", "rarest"),
    not_superlative_after=(" at", " no"),
    top_k_words=("top",),
    group_cues=("each ", "every ", "per ", "for each", "for every", "in each", "by each", "of each", "different "),
    group_frequency_cues=(" most common ",),
    group_by_word=" by ",
    order_by_cues=(" ordered by ", " sorted by ", " order by "),
    order_desc_cues=(" descending", " decreasing", " from the oldest", " from highest", " from largest", " in desc"),
    order_asc_cues=(" ascending", " increasing", " alphabetical", " ordered by", " sorted by", " order of ",
                    " order by "),
    order_of_cue=" order of ",
    range_words=("from", "the", "to"),
    negations=(" not ", " no ", " never ", " without ", "n't ", " none ", " nothing ", " except ", " other than ",
               " outside ", " non ", " non-"),
    negation_exceptions=(" no less than ", " no more than "),
    number_words={"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
                  "nine": 9, "ten": 10},
    comparisons=(("at least", ">="), ("at most", "<="), ("no more than", "<="), ("no less than", ">="),
                 ("more than", ">"), ("greater than", ">"), ("larger than", ">"), ("bigger than", ">"),
                 ("higher than", ">"), ("older than", ">"), ("heavier than", ">"), ("longer than", ">"),
                 ("above", ">"), ("over", ">"), ("after", ">"), ("exceeds", ">"), ("exceeding", ">"),
                 ("less than", "<"), ("fewer than", "<"), ("smaller than", "<"), ("lower than", "<"),
                 ("younger than", "<"), ("lighter than", "<"), ("shorter than", "<"), ("below", "<"),
                 ("under", "<"), ("before", "<"), ("equal to", "="), ("equals", "=")),
    temporal_cues=("after", "before", "since", "earlier than", "later than"),
    between_words=("between", "and"),
    than_word="than",
    comparative_suffix="er",
    comparative_words=("more", "less", "fewer", "superior", "inferior"),
    lesser_comparatives=("less", "fewer", "smaller", "lower", "younger", "shorter", "lighter", "slower", "weaker",
                         "inferior", "cheaper", "earlier"),
    lesser_than_average=("younger", "smaller", "lower", "lighter", "shorter"),
    article="the",
    same_words=("same", "common", "shared?", "both have"),
    wh_words=("how many", "who", "when", "where", "which", "what"),
    value_wh_words=("what", "how many"),
    distinct_cues=(" distinct ", " different "),
    frequency_words=("common", "popular", "frequent", "frequently", "often", "usual", "prevalent", "widespread"),
    frequency_leads=("most", "least", "second most", "more", "less"),
    frequency_superlatives=("rarest", "commonest"),
    frequency_comparatives=("greater", "more", "less", "fewer", "higher", "lower", "bigger", "smaller", "larger"),
    most_word=" most ",
    number_of_cue=" number of ",
    implied_attributes={"young": "age", "old": "age", "heav": "weight", "light": "weight", "tall": "height",
                        "short": "height", "long": "length", "fast": "speed", "slow": "speed", "cheap": "price",
                        "expensive": "price", "earl": "year", "lat": "year", "new": "year", "big": "size",
                        "larg": "size", "small": "size"},
    attribute_of={
        "tallest": "height", "shortest": "height", "taller": "height", "shorter": "height", "high": "height",
        "heaviest": "mass", "lightest": "mass", "heavier": "mass", "lighter": "mass",
        "longest": "length", "longer": "length", "deepest": "depth", "deeper": "depth", "widest": "width",
        "wider": "width", "fastest": "speed", "slowest": "speed", "faster": "speed", "slower": "speed",
        "oldest": "date of birth", "youngest": "date of birth", "older": "date of birth",
        "younger": "date of birth", "largest": "area", "smallest": "area", "biggest": "area",
        "highest": "elevation above sea level", "lowest": "elevation above sea level",
        "most populous": "population", "least populous": "population", "hottest": "temperature",
        "coldest": "temperature", "earliest": "point in time", "latest": "point in time", "richest": "net worth",
        "cheapest": "price", "brightest": "apparent magnitude", "loudest": "sound power",
    },
    count_comparatives=("more", "less", "fewer", "greater", "larger", "higher", "lower", "smaller", "bigger"),
    lesser_count_comparatives=("less", "fewer", "lower", "smaller"),
    percent_words=("percentage", "percent", "proportion", "share", "fraction", "ratio"),
    percent_sign="%",
    clause_verbs=("do", "does", "did", "are", "is", "were", "was", "have", "has", "had", "that", "who", "which",
                  "can"),
    name_glue_words=("has", "is", "ref", "value"),
    unit_gaps=("", "of", "is", "=", "equal to"),
    owner_prepositions=("in", "of", "from", "for", "on", "at", "during", "with", "since", "named", "called"),
    owner_articles=("the", "a", "an"),
    owner_year_word="year",
    group_generic_words=frozenset({"value", "values", "attribute", "attributes", "property", "properties", "has",
                                   "stat", "stats"}),
    group_nouns=("attributes?", "statistics", "stats", "values", "properties"),
    group_desc_words=("dominant", "highest", "best", "strongest", "greatest", "largest", "biggest", "main", "top"),
    group_asc_words=("lowest", "weakest", "worst", "smallest", "least"),
    beats_words=("superior", "better", "stronger", "greater", "higher", "more", "inferior", "worse", "weaker",
                 "lower", "less"),
    beats_lesser=("inferior", "worse", "weaker", "lower", "less"),
    beats_links=("to", "than"),
    sum_words=("sum", "sums", "total"),
    plural_aggregate_words=("sums", "totals", "averages", "means", "maximums", "minimums"),
    compared_cue_words=("average", "mean", "sum", "total", "terms", "superior", "inferior"),
    value_cue_words=("maximum", "minimum", "average", "mean", "sums?", "total", "numerical", "numeric"),
    possessive_suffix="s",
    identifier_words=("id", "ids", "identifier", "identifiers"),
    naming_words=("name", "title"),
    substring_cues=(("containing", "contains"), ("contains", "contains"), ("contain", "contains"),
                    ("including", "contains"), ("includes", "contains"), ("include", "contains"),
                    ("letters", "contains"), ("letter", "contains"), ("substring", "contains"),
                    ("the word", "contains"), ("starting with", "starts"), ("starts with", "starts"),
                    ("start with", "starts"), ("beginning with", "starts"), ("begins with", "starts"),
                    ("begin with", "starts"), ("ending with", "ends"), ("ends with", "ends"), ("end with", "ends"),
                    ("ending in", "ends"), ("ends in", "ends")),
    substring_fillers=("the", "a", "an", "letter", "letters", "word", "words", "substring", "string", "text",
                       "character", "characters"),
    substring_after=("in their", "in its", "in his", "in her", "in the"),
)

# name -> profile; the one source of language choices.
LANGUAGES: dict[str, LanguageProfile] = {ENGLISH.name: ENGLISH}


def get_language(name: str | LanguageProfile | None = None) -> LanguageProfile:
    """The profile called `name` (None: English); a profile is returned as it is."""
    if isinstance(name, LanguageProfile):
        return name
    key = (name or ENGLISH.name).lower()
    if key not in LANGUAGES:
        raise ValueError(f"unknown language profile {name!r}; choose one of {', '.join(sorted(LANGUAGES))}")
    return LANGUAGES[key]
