"""The KB profile's own vocabulary (rdfs:label, descriptions, aliases) as grounding candidates (issue 16, item 8)."""

from __future__ import annotations

from pathlib import Path

from assembler.plan import Placeholder
from assembler.vocabulary import text_properties, vocabulary_candidates
from kb_dumps.profiles import get_profile
from kbqa.frontends.desq import parse_desq
from kbqa.pipeline import Engine

RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"

NAME_CONTAINS = """ATOMIC CONSTRAINTS
AC1: we need the items whose name contains atlan
AC2: the item has a name
AC3: the name contains atlan
FRAGMENTS
AC1 => SELECT DISTINCT ?var1
AC2 => ?var1 [name] ?var2 .
AC3 => FILTER(CONTAINS(LCASE(STR(?var2)), "atlan"))
GROUNDING
[name] property | label | the name of the item
"""


def test_text_use_is_read_off_the_plan() -> None:
    plan = parse_desq(NAME_CONTAINS).plan
    assert text_properties(plan) == {"name"}
    plain = parse_desq(NAME_CONTAINS.replace('AC3 => FILTER(CONTAINS(LCASE(STR(?var2)), "atlan"))',
                                             "AC3 => FILTER(?var2 > 3)")).plan
    assert text_properties(plain) == set()


def test_vocabulary_candidates_by_name_and_by_use() -> None:
    wd = get_profile("wikidata")
    named = vocabulary_candidates(wd, Placeholder("d", "property", label="description"), used_as_text=False)
    assert [(c.id, c.score) for c in named] == [("http://schema.org/description", 0.9)]
    # "name" compared as text is the label predicate, and it wins outright
    as_text = vocabulary_candidates(wd, Placeholder("n", "property", label="name"), used_as_text=True)
    assert as_text[0].id == RDFS_LABEL and as_text[0].score == 1.0
    # an unrelated property label gets nothing from the vocabulary
    assert vocabulary_candidates(wd, Placeholder("p", "property", label="place of birth"), used_as_text=False) == []


def test_a_name_filter_grounds_to_rdfs_label(tiny_store: Path) -> None:
    with Engine(store=tiny_store) as engine:
        result = engine.compile(NAME_CONTAINS)
    g = next(g for g in result.grounding if g.name == "name")
    assert g.candidates[0].id == RDFS_LABEL and g.chosen == RDFS_LABEL
    assert result.ok and "rdfs:label" in result.sparql
    assert {row[0].value for row in result.answers.rows} == {"http://www.wikidata.org/entity/Q1"}  # Atlantis
