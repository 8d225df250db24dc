"""The display column among attributes that name a class's items equally apart (explore/propose/display.py), and
the value memory's order (grounding/schema.py): both the same whatever order the engine returns its rows in, so an
endpoint over the same data proposes the same candidates as the local store. A records KG written for these tests."""

from __future__ import annotations

import dataclasses

import pytest

from kbqa.translators.explore import ExploreTranslator
from kbqa.translators.explore.propose.display import DisplayColumns

NS = "http://example.org/records/"
RECORDS = f"""@prefix v: <{NS}vocalist#> .
@prefix h: <{NS}harbours#> .
@prefix p: <{NS}parcel#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
<{NS}vocalist> a rdfs:Class ; rdfs:label "vocalist" .
<{NS}harbours> a rdfs:Class ; rdfs:label "harbours" .
<{NS}parcel> a rdfs:Class ; rdfs:label "parcel" .
<{NS}vocalist/1> a <{NS}vocalist> ; v:song_name "Blue Tide" ; v:debut_year "2001" ; v:agency "Atlantic" ;
    v:name "Mara Holt" ; v:city "Lyon" .
<{NS}vocalist/2> a <{NS}vocalist> ; v:song_name "Red Sky" ; v:debut_year "1999" ; v:agency "Decca" ;
    v:name "Tom Rook" ; v:city "Lyon" .
<{NS}vocalist/3> a <{NS}vocalist> ; v:song_name "Night Owl" ; v:debut_year "2010" ; v:agency "Sony" ;
    v:name "Ines Vale" ; v:city "Porto" .
<{NS}harbours/1> a <{NS}harbours> ; h:location "north bay" ; h:harbour "Port Ash" ; h:code "0041" .
<{NS}harbours/2> a <{NS}harbours> ; h:location "south bay" ; h:harbour "Port Elm" ; h:code "0042" .
<{NS}parcel/1> a <{NS}parcel> ; p:tracking "7001" ; p:colour "red" ; p:destination "Lexington, Kentucky" .
<{NS}parcel/2> a <{NS}parcel> ; p:tracking "7002" ; p:colour "blue" ; p:destination "Louisville, Kentucky" .
<{NS}parcel/3> a <{NS}parcel> ; p:tracking "7003" ; p:colour "green" ; p:destination "Austin, Texas" .
<{NS}vocalist/1> v:rank "2010" .
<{NS}vocalist/2> v:rank "2010" .
"""


@pytest.fixture(scope="module")
def records(ingest_turtle) -> ExploreTranslator:
    tr = ExploreTranslator(ingest_turtle(RECORDS, "records"), fallback="never")
    yield tr
    tr.close()


class ReversedRows:
    """The same store, its rows returned in the opposite order: another engine's order over the same data."""

    def __init__(self, store: object):
        self.store = store

    def query(self, sparql: str, **kw: object) -> object:
        res = self.store.query(sparql, **kw)  # type: ignore[attr-defined]
        return dataclasses.replace(res, rows=list(reversed(res.rows)))


def test_a_tie_goes_to_a_naming_word_then_the_class_word_then_letters(records: ExploreTranslator) -> None:
    cols = DisplayColumns(records.schema, records.store, records.ctx.language)
    # song_name, debut_year, agency and name each name the three vocalists apart: the shortest name with a naming
    # word; not the year written as text, not the agency
    assert cols.of(NS + "vocalist") == NS + "vocalist#name"
    # location and harbour name both harbours apart: the class's own word
    assert cols.of(NS + "harbours") == NS + "harbours#harbour"
    # a code of digits and a colour name three parcels apart: the one written in letters
    assert cols.of(NS + "parcel") == NS + "parcel#colour"


def test_the_display_column_does_not_follow_the_engines_row_order(records: ExploreTranslator) -> None:
    forward = DisplayColumns(records.schema, records.store, records.ctx.language)
    backward = DisplayColumns(records.schema, ReversedRows(records.store), records.ctx.language)
    for cls in (NS + "vocalist", NS + "harbours", NS + "parcel"):
        assert forward.of(cls) == backward.of(cls) is not None


def test_a_value_on_several_predicates_lists_the_most_used_first(records: ExploreTranslator) -> None:
    from grounding.schema import build_schema

    # "2010" is the debut year of one vocalist and the rank of two; "Lyon" the city of two
    for store in (records.store, ReversedRows(records.store)):
        schema = build_schema(store, records.ctx.profile, records.ctx.memory)  # type: ignore[arg-type]
        assert [(h.predicate, h.count) for h in schema.value_hits("2010")] == \
            [(NS + "vocalist#rank", 2), (NS + "vocalist#debut_year", 1)]
        assert schema.values == records.schema.values


@pytest.mark.parametrize("question", ["Which parcels are going to Kentucky?", "Show the parcels bound for kentucky."])
def test_a_word_inside_values_is_searched_as_the_values_write_it(records: ExploreTranslator, question: str) -> None:
    # "Kentucky" is a whole word of two of the three destinations: CONTAINS compares characters, so the filter
    # takes the values' own spelling whatever the question's case, and finds both parcels
    links = [(lk.iri, lk.op, lk.value) for lk in records.anchors(question).values]
    assert links == [(NS + "parcel#destination", "contains", "Kentucky")]
    _anchors, ranked, _info = records.search(question)
    found = [g for g in ranked if g.result is not None and len(g.result.rows) == 2
             and any(c.op == "contains" for c in g.flat_conds())]
    assert found
