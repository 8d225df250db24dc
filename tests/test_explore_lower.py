"""`explore` lowers every candidate to one Plan (kbqa/translators/explore/lower/): the DeSQ the engine compiles and
the SPARQL the search's execution check runs are written from it by the engine's own writers, so the DeSQ reads
back into that Plan and the check is the query the engine would write with the confirmed URIs. The zoo KG of
tests/fixtures/explore; questions written for these tests."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from assembler.writer import write_sparql
from kb_dumps.profiles import KBProfile
from kbqa.frontends.desq import parse_desq
from kbqa.pipeline import Engine
from kbqa.translators.explore import ExploreTranslator
from kbqa.translators.explore.lower.text import lower, verbalise, write

ROOT = Path(__file__).resolve().parents[1]
ZOO = ROOT / "tests" / "fixtures" / "explore" / "zoo.ttl"
QUESTIONS = [
    "How many penguins does Omar Haddad keep?",  # a count over a class with an item constraint
    "Which animals weigh more than 100?",  # a comparison
    "What is the average weight of the animals in each enclosure?",  # group-by with an aggregate
    "Which animals are not kept by Omar Haddad?",  # negation
    "What percentage of the animals are penguins?",  # two sub-queries combined
]


@pytest.fixture(scope="module")
def explore(ingest_dumps):
    tr = ExploreTranslator(ingest_dumps([ZOO], "zoo"))
    yield tr
    tr.close()


def _without_ac(d: object) -> object:
    if isinstance(d, dict):
        return {k: _without_ac(v) for k, v in d.items() if k != "ac"}
    if isinstance(d, list):
        return [_without_ac(v) for v in d]
    return d


def test_the_desq_reads_back_into_the_plan_and_the_check_is_its_sparql(explore: ExploreTranslator) -> None:
    families = set()
    for question in QUESTIONS:
        _a, ranked, _info = explore.search(question)
        assert ranked, question
        for g in ranked[:15]:
            low = lower(g, explore.schema)
            parsed = parse_desq(write(g, explore.schema, desq=True))
            assert parsed.ok, parsed.errors
            assert _without_ac(parsed.plan.to_dict()) == _without_ac(low.plan.to_dict())
            # the grounding block names the URI the search confirmed for each placeholder
            assert {line.name: line.uri for line in parsed.grounding} == low.mapping
            check = write_sparql(parsed.plan, KBProfile(), low.mapping, rename_vars=False).sparql
            assert check == write(g, explore.schema, desq=False)
            assert verbalise(g, explore.schema) == "; ".join(c.text for c in parsed.constraints)
            families.add(g.family)
    assert {"class", "percent"} <= families


def test_the_translation_names_the_confirmed_uris(explore: ExploreTranslator) -> None:
    res = explore.translate("How many penguins does Omar Haddad keep?")
    confirmed = res.details["confirmed"]
    assert confirmed and all(uri.startswith("http://") for uri in confirmed.values())
    assert {g.name: g.uri for g in parse_desq(res.text).grounding} == confirmed
    assert res.confirmed == confirmed  # handed to the engine, not only shown in the report


def test_the_engine_runs_the_confirmed_uris_without_grounding_them_again(explore: ExploreTranslator) -> None:
    with Engine(store=explore.ctx.store_dir) as engine:
        engine.translator = ExploreTranslator(explore.ctx.store_dir, store=engine.store)
        asked = engine.ask("Which animals weigh more than 100?")
        assert asked.status == "ok", asked.errors
        confirmed = asked.translation["confirmed"]
        assert confirmed and {g.name for g in asked.grounding} == set(confirmed)
        for g in asked.grounding:
            # one candidate, the search's own IRI, marked as confirmed: no label search ran for it
            assert [(c.id, c.sources) for c in g.candidates] == [(confirmed[g.name], ["confirmed"])]
            assert g.chosen == confirmed[g.name]
        # the same text compiled on its own (a user's DeSQ) is ground from its labels, to the same answers
        compiled = engine.compile(asked.translation["text"])
        assert compiled.status == "ok", compiled.errors
        assert all(c.sources != ["confirmed"] for g in compiled.grounding for c in g.candidates)
        assert compiled.answers.to_dict() == asked.answers.to_dict()


def test_explore_writes_no_sparql_text_itself() -> None:
    """Every query explore runs is a Plan written by the assembler's writer: no query text in its source."""
    package = ROOT / "kbqa" / "translators" / "explore"
    written = [f"{p.relative_to(package)}: {m.group(0)}" for p in package.rglob("*.py")
               for m in re.finditer(r"""f["'](SELECT|ASK)\b|WHERE \{\{""", p.read_text(encoding="utf-8"))]
    assert not written, written
