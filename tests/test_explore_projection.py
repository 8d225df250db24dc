"""Projection features (features/projection.py): which of the attributes a question names each candidate shows.
Questions, paraphrases and negatives written for these tests over a tiny members KG."""

from __future__ import annotations

import pytest

from kbqa.translators.explore import ExploreTranslator
from kbqa.translators.explore.lower.text import verbalise

EX = "http://example.org/gym/"
GYM = f"""@prefix ex: <{EX}> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:Member a rdfs:Class ; rdfs:label "member" .
ex:memberName rdfs:label "member name" .
ex:age rdfs:label "age" .
ex:city rdfs:label "city" .
ex:memberId rdfs:label "member id" .
ex:m1 a ex:Member ; ex:memberId 11 ; ex:memberName "Ann Lee" ; ex:age 34 ; ex:city "Leeds" .
ex:m2 a ex:Member ; ex:memberId 12 ; ex:memberName "Bo Park" ; ex:age 52 ; ex:city "York" .
ex:m3 a ex:Member ; ex:memberId 13 ; ex:memberName "Cy Ruiz" ; ex:age 45 ; ex:city "Leeds" .
ex:m4 a ex:Member ; ex:memberId 14 ; ex:memberName "Di Shaw" ; ex:age 61 ; ex:city "Hull" .
"""
NAME, AGE = f"{EX}memberName", f"{EX}age"


@pytest.fixture(scope="module")
def gym(ingest_turtle) -> ExploreTranslator:
    tr = ExploreTranslator(ingest_turtle(GYM, "gym"), fallback="never")
    yield tr
    tr.close()


def _shown(g) -> set[str]:
    return {p[-1].pred for p in g.answer if p}


def _by_columns(tr: ExploreTranslator, question: str) -> dict[frozenset[str], dict[str, float]]:
    """The p_* features of the plain class candidates (no aggregate, no order), by the attributes they show."""
    _a, ranked, _info = tr.search(question)
    out: dict[frozenset[str], dict[str, float]] = {}
    for g in ranked:
        if g.family == "class" and not g.aggs and g.order is None and g.form == "select":
            out.setdefault(frozenset(_shown(g)), {k: v for k, v in g.features.items() if k.startswith("p_")})
    assert out, [verbalise(g, tr.schema) for g in ranked[:5]]
    return out


@pytest.mark.parametrize("question", ["What are the names and ages of members older than 40?",
                                      "List the name and age of each member over 40 years old."])
def test_attributes_listed_before_the_class_are_asked_for(gym: ExploreTranslator, question: str) -> None:
    got = _by_columns(gym, question)
    both = got[frozenset({NAME, AGE})]
    assert both["p_asked"] == 2.0 and both["p_asked_shown"] == 2.0 and both["p_asked_missed"] == 0.0
    assert both["p_cols_linked"] == 2.0 and both["p_cols_unlinked"] == 0.0
    # over every candidate: shown = how many of the two it projects, aggregates or orders by (age only compared: 1)
    _a, ranked, _info = gym.search(question)
    seen = set()
    for g in ranked:
        if g.family != "class" or "p_asked_shown" not in g.features:
            continue
        out = _shown(g) | {p[-1].pred for _f, p in g.aggs if p} | ({g.order[0][-1].pred} if g.order and g.order[0] else set())
        assert g.features["p_asked_shown"] == len(out & {NAME, AGE}), verbalise(g, gym.schema)
        seen.add(g.features["p_asked_shown"])
    assert {1.0, 2.0} <= seen


def test_a_class_asked_for_itself_asks_for_no_attribute(gym: ExploreTranslator) -> None:
    # negative: the attribute word follows the class word, so nothing is listed as asked for
    got = _by_columns(gym, "Which members are older than 40?")
    assert all(f.get("p_asked") == 0.0 for f in got.values())
    assert all(f["p_asked_missed"] == 0.0 for f in got.values())


def test_columns_no_word_names_are_unlinked(gym: ExploreTranslator) -> None:
    question = "Which members live in Leeds?"
    linked = {lk.iri for lk in gym.anchors(question).predicates}
    _a, ranked, _info = gym.search(question)
    kinds = set()
    for g in ranked:
        if g.family != "class" or "p_cols_linked" not in g.features:
            continue
        cols = [p[-1].pred for p in g.answer if p]
        n_linked = sum(p in linked for p in cols)
        assert (g.features["p_cols_linked"], g.features["p_cols_unlinked"]) == (n_linked, len(cols) - n_linked)
        assert g.features["p_focus_attrs"] == float(() in g.answer and n_linked > 0)
        kinds.add((n_linked > 0, len(cols) > n_linked))
    assert (False, True) in kinds or (True, True) in kinds  # some candidate shows a column no word names
