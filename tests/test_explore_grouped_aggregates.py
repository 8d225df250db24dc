"""Several aggregates per value of an attribute (explore/propose/ungated.py): the extremes and the mean of one
attribute, the count beside an aggregate, one aggregate of two attributes, and the aggregate of an attribute the
question implies but does not name — each per value of a grouping attribute. Questions, paraphrases and negatives
written for these tests over a small harbour KG made here."""

from __future__ import annotations

import pytest

from assembler.writer import write_sparql
from kb_dumps.profiles import KBProfile
from kbqa.frontends.desq import parse_desq
from kbqa.translators.explore import ExploreTranslator
from kbqa.translators.explore.lower.text import lower, write

H = "http://example.org/harbour/"
HARBOUR = f"""@prefix h: <{H}> .
h:s1 a h:ship ; h:ship_type "ferry" ; h:tonnage 500 ; h:crew 10 .
h:s2 a h:ship ; h:ship_type "ferry" ; h:tonnage 800 ; h:crew 14 .
h:s3 a h:ship ; h:ship_type "tanker" ; h:tonnage 3000 ; h:crew 25 .
h:s4 a h:ship ; h:ship_type "tanker" ; h:tonnage 2000 ; h:crew 21 .
h:s5 a h:ship ; h:ship_type "tug" ; h:tonnage 150 ; h:crew 4 .
h:p1 a h:sailor ; h:sailor_rank "mate" ; h:age 31 ; h:sailor_name "Ona" .
h:p2 a h:sailor ; h:sailor_rank "mate" ; h:age 45 ; h:sailor_name "Bram" .
h:p3 a h:sailor ; h:sailor_rank "cook" ; h:age 52 ; h:sailor_name "Idris" .
h:p4 a h:sailor ; h:sailor_rank "cook" ; h:age 27 ; h:sailor_name "Lu" .
"""


@pytest.fixture(scope="module")
def harbour(ingest_turtle) -> ExploreTranslator:
    tr = ExploreTranslator(ingest_turtle(HARBOUR, "harbour"))
    yield tr
    tr.close()


def _grouped(tr: ExploreTranslator, question: str, key: str, aggs: set[tuple[str, str]]) -> list:
    """The grouped candidates of `question` by the attribute `key` whose aggregates are `aggs` (fn, attribute or
    "*"), with their result rows."""
    _a, ranked, _info = tr.search(question)
    out = []
    for g in ranked:
        got = {(fn, path[-1].pred.removeprefix(H) if path else "*") for fn, path in g.aggs}
        keys = [p[-1].pred.removeprefix(H) for p in g.answer if p]
        if g.group and got == aggs and keys == [key] and g.result is not None:
            out.append(g)
    return out


def _table(g) -> dict[str, list[float]]:
    """Rows as group value -> sorted numbers."""
    rows = {}
    for row in g.result.rows:
        texts = [t["value"] for t in row if t]
        nums = sorted(float(v) for v in texts if v.replace(".", "", 1).isdigit())
        rows[next(v for v in texts if not v.replace(".", "", 1).isdigit())] = nums
    return rows


@pytest.mark.parametrize("q", ["What are the smallest, typical and largest tonnage for each ship type?",
                               "For every type of ship, give its least, usual and greatest tonnage."])
def test_the_extremes_and_the_mean_per_value(harbour: ExploreTranslator, q: str) -> None:
    got = _grouped(harbour, q, "ship_type", {("MIN", "tonnage"), ("AVG", "tonnage"), ("MAX", "tonnage")})
    assert got and got[0].features.get("multi_agg") == 1.0
    assert _table(got[0]) == {"ferry": [500.0, 650.0, 800.0], "tanker": [2000.0, 2500.0, 3000.0],
                              "tug": [150.0, 150.0, 150.0]}


@pytest.mark.parametrize("q", ["How many ships and what average tonnage does each ship type have?",
                               "Give the number of ships and their mean tonnage per type of ship."])
def test_the_count_beside_an_aggregate_per_value(harbour: ExploreTranslator, q: str) -> None:
    got = _grouped(harbour, q, "ship_type", {("COUNT", "*"), ("AVG", "tonnage")})
    assert got
    assert _table(got[0]) == {"ferry": [2.0, 650.0], "tanker": [2.0, 2500.0], "tug": [1.0, 150.0]}


def test_one_aggregate_of_two_attributes_per_value(harbour: ExploreTranslator) -> None:
    got = _grouped(harbour, "What are the total tonnage and crew of each ship type?", "ship_type",
                   {("SUM", "tonnage"), ("SUM", "crew")})
    assert got
    assert _table(got[0])["tanker"] == [46.0, 5000.0]


@pytest.mark.parametrize("q", ["How old is the youngest sailor of each sailor rank?",
                               "For every sailor rank, what is the lowest sailor age?"])
def test_an_implied_attribute_per_value(harbour: ExploreTranslator, q: str) -> None:
    # the first question never names the age: the superlative implies it
    got = _grouped(harbour, q, "sailor_rank", {("MIN", "age")})
    assert got
    assert _table(got[0]) == {"mate": [31.0], "cook": [27.0]}


def test_no_grouping_attribute_no_grouped_aggregates(harbour: ExploreTranslator) -> None:
    # only one attribute is named: nothing to group by, so no several aggregates per value
    _a, ranked, _info = harbour.search("What are the smallest and largest tonnage of the ships?")
    assert not [g for g in ranked if g.group and len(g.aggs) >= 2]
    assert [g for g in ranked if not g.group and {fn for fn, _ in g.aggs} == {"MIN", "MAX"}]


def test_the_grouped_aggregates_read_back_through_desq(harbour: ExploreTranslator) -> None:
    # what the pipeline compiles: the DeSQ of each new shape parses, and its assembled SPARQL is the checked query
    got = (_grouped(harbour, "Give the number of ships and their mean tonnage per type of ship.", "ship_type",
                    {("COUNT", "*"), ("AVG", "tonnage")})
           + _grouped(harbour, "What are the total tonnage and crew of each ship type?", "ship_type",
                      {("SUM", "tonnage"), ("SUM", "crew")}))
    assert len(got) >= 2
    for g in got:
        parsed = parse_desq(write(g, harbour.schema, desq=True))
        assert parsed.ok, parsed.errors
        sparql = write_sparql(parsed.plan, KBProfile(), lower(g, harbour.schema).mapping, rename_vars=False).sparql
        assert sparql == write(g, harbour.schema, desq=False)
        assert "GROUP BY" in sparql and sparql.count("AS ?agg") == 2
