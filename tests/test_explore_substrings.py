"""A piece of text inside an attribute's values (explore/propose/substrings.py): the cue phrases of the language
profile, the piece they point at, and the CONTAINS / STRSTARTS / STRENDS constraint the search proposes and the
assembler writes. A tiny bookshop KG written for these tests; questions, paraphrases and negatives written for it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbqa.translators.explore import ExploreTranslator
from kbqa.translators.explore.lower.text import write
from kbqa.translators.explore.propose.substrings import MAX_PIECES, SUBSTRING_OPS, pieces
from kbqa.translators.explore.query import Cond, Graph, Step, Term
from kbqa.translators.language import ENGLISH

NS = "http://example.org/books/"
BOOKS = f"""@prefix b: <{NS}book#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
<{NS}book> a rdfs:Class ; rdfs:label "book" .
<{NS}book/1> a <{NS}book> ; b:title "Moonlight Harbour" ; b:author_name "Ilse Varga" ; b:pages 320 .
<{NS}book/2> a <{NS}book> ; b:title "The Copper Kettle" ; b:author_name "Tomas Reyes" ; b:pages 210 .
<{NS}book/3> a <{NS}book> ; b:title "Salt and Ember" ; b:author_name "Ada Quill" ; b:pages 415 .
<{NS}book/4> a <{NS}book> ; b:title "the quiet moon" ; b:author_name "Bram Osei" ; b:pages 188 .
<{NS}book/5> a <{NS}book> ; b:title "Harbour Lights" ; b:author_name "Ilse Varga" ; b:pages 264 .
"""


@pytest.fixture(scope="module")
def books(ingest_turtle) -> ExploreTranslator:
    tr = ExploreTranslator(ingest_turtle(BOOKS, "books"), fallback="never")
    yield tr
    tr.close()


@pytest.mark.parametrize(("question", "expected"), [
    ("Which books have a title containing the word 'Harbour'?", [("contains", "Harbour")]),
    ("List the books whose title includes Harbour.", [("contains", "Harbour")]),
    ("Which authors have the letter q in their names?", [("contains", "q")]),
    ("Which authors have a 'q' in their names?", [("contains", "q")]),
    ("Show the books whose title starts with The.", [("starts", "The")]),
    ("Give the titles beginning with \u2018Salt\u2019.", [("starts", "Salt")]),
    ("Which titles end with the letter r?", [("ends", "r")]),
])
def test_the_cue_points_at_the_piece(question: str, expected: list[tuple[str, str]]) -> None:
    found = pieces(question, ENGLISH)
    assert [(p.op, p.text) for p in found] == expected
    for p in found:
        assert p.text in question[p.span[0]:p.span[1]] and question[p.at[0]:p.at[1]] == p.text


@pytest.mark.parametrize("question", ["Which books have the most pages?", "Which shelf contains the most books?",
                                      "List the titles of books by Ilse Varga."])
def test_no_piece_without_a_cue_and_a_piece(question: str) -> None:
    assert pieces(question, ENGLISH) == []


def _substring(ranked: list[Graph]) -> list[Graph]:
    return [g for g in ranked if any(c.op in SUBSTRING_OPS and not c.name_filter for c in g.flat_conds())]


@pytest.mark.parametrize("question", ["Which books have a title containing the word 'Harbour'?",
                                      "List the titles that include Harbour."])
def test_a_piece_inside_a_linked_attribute(books: ExploreTranslator, question: str) -> None:
    _a, ranked, _info = books.search(question)
    found = _substring(ranked)
    assert found, [g.key() for g in ranked[:5]]
    g = found[0]
    assert g.features["substring"] == 1.0
    sparql = write(g, books.schema, desq=False)
    assert 'CONTAINS(STR(' in sparql and '"Harbour"' in sparql
    rows = books.store.query(sparql).rows
    assert len(rows) == 2  # the two Harbour titles, never a title the word is not in


def test_the_piece_keeps_its_case(books: ExploreTranslator) -> None:
    # STRSTARTS with the question's characters: "The Copper Kettle" starts with The, "the quiet moon" does not
    _a, ranked, _info = books.search("Show the titles of books whose title starts with 'The'.")
    starts = [g for g in _substring(ranked) if any(c.op == "starts" for c in g.flat_conds())]
    assert starts
    sparql = write(starts[0], books.schema, desq=False)
    assert "STRSTARTS(STR(" in sparql
    values = {r[0]["value"] for r in books.store.query(sparql).rows if r and r[0]}
    assert "the quiet moon" not in values
    assert any(v.startswith("The") or v.endswith("/book/2") for v in values)


def test_a_piece_no_value_holds_proposes_nothing_that_runs(books: ExploreTranslator) -> None:
    # no title contains "Zebra": the execution check keeps no such listing (a count or yes/no always stands)
    _a, ranked, _info = books.search("Which books have a title containing the word 'Zebra'?")
    assert ranked
    assert not [g for g in _substring(ranked) if g.form == "select" and not g.aggs]


def test_the_piece_is_escaped_in_the_query(books: ExploreTranslator) -> None:
    # a piece with a quote and a backslash is a literal in the query, never query text
    def graph(piece: str) -> Graph:
        return Graph("class", focus_class=f"{NS}book",
                     conds=[Cond((Step(f"{NS}book#title"),), "contains", Term("literal", piece))])

    assert books.store.query(write(graph('Har"bour\\ } .'), books.schema, desq=False)).rows == []
    assert len(books.store.query(write(graph("Harbour"), books.schema, desq=False)).rows) == 2


def test_a_bare_word_that_links_an_attribute_is_no_piece(books: ExploreTranslator) -> None:
    # "contain pages": *pages* names an attribute of the books, not text inside a title
    assert [p.text for p in pieces("Which books contain pages?", ENGLISH)] == ["pages"]
    _a, ranked, _info = books.search("Which books contain pages?")
    assert ranked
    assert not _substring(ranked)


_WORDS = st.sampled_from(["contains", "containing", "the", "letter", "word", "starts", "with", "ending", "in", "their",
                          "names", "a", "A", "'q'", "\"Ha\"", "\u2018x y\u2019", "'", "?", "titles", "of", "books", ""])


@settings(max_examples=200, deadline=None)
@given(st.lists(_WORDS, max_size=14), st.text(max_size=12))
def test_pieces_of_any_text_lie_where_they_say(words: list[str], noise: str) -> None:
    question = " ".join(words) + noise
    found = pieces(question, ENGLISH)
    assert len(found) <= MAX_PIECES
    assert len({p.text for p in found}) == len(found)
    for p in found:
        assert p.op in SUBSTRING_OPS and p.text
        assert question[p.at[0]:p.at[1]] == p.text
        assert 0 <= p.span[0] <= p.at[0] < p.at[1] <= p.span[1] <= len(question)
