"""The schema memory on a KG too large for one answer (grounding/schema_queries.py): when a whole-KG aggregate would
pass its row cap, it is read in key pages or per predicate with a cap per predicate, and gives the same classes,
predicates and values as the whole-KG queries (a real pyoxigraph store; the cap lowered so the small KG is "large")."""

from __future__ import annotations

from pathlib import Path

import pytest

from grounding import schema, schema_queries
from grounding.schema import build_schema
from kb_dumps.ingest import ingest
from kb_dumps.label_memory import LabelMemory
from kb_dumps.layout import StoreLayout
from kb_dumps.profiles import get_profile
from kb_dumps.store import open_store

CONCERT = Path(__file__).resolve().parents[1] / "eval" / "benchmarks" / "spider4sparql" / "kgs" / "concert_singer.ttl.gz"


@pytest.fixture(scope="module")
def concert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("schema_bounded") / "concert_singer"
    ingest([CONCERT], store, profile="generic", progress=False)
    return store


def _build(store: Path) -> schema.SchemaMemory:
    memory = LabelMemory(StoreLayout.of(store).labels, readonly=True)
    try:
        with open_store(store) as kb:
            return build_schema(kb, get_profile("generic"), memory)
    finally:
        memory.close()


def _value_sets(s: schema.SchemaMemory) -> dict[str, list[tuple]]:
    return {k: sorted(tuple(h) for h in hits) for k, hits in s.values.items()}


def test_paged_and_per_predicate_equal_the_whole_kg_queries(concert: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = _build(concert)
    assert whole.meta["per_predicate"] == [] and whole.meta["queries"] == 6
    monkeypatch.setattr(schema_queries, "WHOLE_KG_ROWS", 2)
    monkeypatch.setattr(schema, "WHOLE_KG_ROWS", 2)
    bounded = _build(concert)
    assert set(bounded.meta["per_predicate"]) == {"pages", "datatypes", "domains", "ranges", "values"}
    assert bounded.meta["queries"] > len(bounded.predicates)  # one query per predicate (and aggregate)
    assert bounded.classes == whole.classes
    assert {p: i.to_dict() for p, i in bounded.predicates.items()} == {p: i.to_dict() for p, i in
                                                                       whole.predicates.items()}
    assert _value_sets(bounded) == _value_sets(whole)


def test_values_are_capped_per_predicate(concert: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schema_queries, "WHOLE_KG_ROWS", 2)
    monkeypatch.setattr(schema, "WHOLE_KG_ROWS", 2)
    monkeypatch.setattr(schema_queries, "MAX_VALUES_PER_PREDICATE", 3)
    capped = _build(concert)
    per_pred: dict[str, int] = {}
    for hits in capped.values.values():
        for p, *_ in hits:
            per_pred[p] = per_pred.get(p, 0) + 1
    assert per_pred and max(per_pred.values()) <= 3
    # the most frequent value of a predicate survives the cap: "France" is the country of four singers
    assert any(h.predicate.endswith("singer#country") and h.count == 4 for h in capped.value_hits("france"))
