"""Grounding on a tiny Wikidata-like store: lexical, vector, kind, description, context, threshold, correction."""

from __future__ import annotations

import json
from pathlib import Path

import pyoxigraph as ox
import pytest

from grounding.build import build_index
from grounding.candidates import Candidate, Correction, GroundingResult
from grounding.embedder import get_embedder
from grounding.ground import Grounder
from kb_dumps.label_memory import LabelMemory
from kb_dumps.profiles import get_profile
from kb_dumps.stage_errors import KBQAError

FIXTURES = Path(__file__).parent / "fixtures" / "grounding"
WD = "http://www.wikidata.org/entity/"


def _term(profile, value):  # noqa: ANN001 - a fixture term: compact IRI or {"literal", "datatype"}
    if isinstance(value, dict):
        return ox.Literal(value["literal"], datatype=ox.NamedNode(profile.expand(value["datatype"])))
    return ox.NamedNode(profile.expand(value))


def make_store(root: Path, fixture: str, extra_rows: list[dict] | None = None) -> Path:
    """A store dir like `kbqa ingest` makes: labels.sqlite, oxigraph/, manifest.json, from a JSON fixture."""
    data = json.loads((FIXTURES / fixture).read_text(encoding="utf-8"))
    profile = get_profile(data["profile"])
    if data.get("prefixes"):
        profile.prefixes = {**profile.prefixes, **data["prefixes"]}
    root.mkdir(parents=True, exist_ok=True)
    add_rows(root, [{**r, "id": profile.expand(r["id"])} for r in data["rows"] + (extra_rows or [])])
    store = ox.Store(str(root / "oxigraph"))
    store.extend([ox.Quad(*(_term(profile, t) for t in triple)) for triple in data["triples"]])
    store.flush()
    del store
    (root / "manifest.json").write_text(json.dumps({"profile": data["profile"]}), encoding="utf-8")
    return root


def add_rows(root: Path, rows: list[dict]) -> int:
    """Write rows into the store's label memory as one new generation (what `ingest --append` does)."""
    mem = LabelMemory(root / "labels.sqlite")
    gen = mem.begin_generation()
    mem.merge_texts({r["id"]: {"label": r["label"], "aliases": r.get("aliases", []),
                               "description": r.get("description", ""), "kind": r["kind"]} for r in rows}, gen)
    mem.add_popularity({r["id"]: r.get("popularity", 0) for r in rows}, gen)
    mem.commit()
    mem.close()
    return gen


@pytest.fixture(scope="module")
def embedder():
    return get_embedder()  # the default (static) embedder, the one build_index uses


@pytest.fixture(scope="module")
def wd_store(tmp_path_factory, embedder) -> Path:
    root = make_store(tmp_path_factory.mktemp("wd") / "store", "wikidata_tiny.json")
    build_index(root, progress=False)
    return root


@pytest.fixture(scope="module")
def grounder(wd_store, embedder):
    g = Grounder(wd_store, embedder=embedder)
    yield g
    g.close()


def top(cands: list[Candidate]) -> str:
    assert cands, "expected at least one candidate"
    return cands[0].id


def test_exact_label(grounder):
    cands = grounder.ground("Albert Einstein")
    assert top(cands) == WD + "Q937"
    assert cands[0].signals["lexical"] == 1.0
    assert 0.0 <= cands[-1].score <= cands[0].score <= 1.0
    assert set(cands[0].signals) >= {"lexical", "vector", "popularity"}


def test_alias(grounder):
    assert top(grounder.ground("City of Light")) == WD + "Q90"
    assert top(grounder.ground("nationality", kind="property")) == WD + "P27"
    assert top(grounder.ground("USA")) == WD + "Q30"


@pytest.mark.parametrize("query", ["saša vujačić", "SASA VUJACIC", "Sasa Vujacic", "  Saša   Vujačić! "])
def test_accent_and_case_variants(grounder, query):
    cands = grounder.ground(query)
    assert top(cands) == WD + "Q318926"
    assert cands[0].signals["lexical"] == 1.0


@pytest.mark.parametrize("query,expected", [("Albert Einstien", "Q937"), ("Berlim", "Q64"),
                                            ("Justin Beiber", "Q34086"), ("place of brith", "P19")])
def test_typo_one_edit(grounder, query, expected):
    cands = grounder.ground(query)
    assert top(cands) == WD + expected
    assert cands[0].signals["lexical"] < 1.0


def test_kind_filter(grounder):
    assert top(grounder.ground("country", kind="property")) == WD + "P17"
    assert top(grounder.ground("country", kind="class")) == WD + "Q6256"
    entities = grounder.ground("country", kind="entity")
    assert all(c.kind == "entity" for c in entities)
    mixed = {c.id for c in grounder.ground("country", k=20)}
    assert {WD + "P17", WD + "Q6256"} <= mixed


def test_property_names_as_a_model_writes_them(grounder):
    assert top(grounder.ground("place_of_birth", kind="property")) == WD + "P19"
    assert top(grounder.ground("date_of_birth", kind="property")) == WD + "P569"
    assert top(grounder.ground("brother", kind="property")) == WD + "P3373"


def test_description_disambiguates_same_label(grounder):
    texas = grounder.ground("Paris", description="city in Texas")
    france = grounder.ground("Paris", description="capital of France")
    assert top(texas) == WD + "Q830149"
    assert top(france) == WD + "Q90"
    planet = grounder.ground("Mercury", description="planet of the solar system")
    element = grounder.ground("mercury", description="chemical element, a liquid metal")
    assert top(planet) == WD + "Q308"
    assert top(element) == WD + "Q925"


def test_description_only_query(grounder):
    cands = grounder.ground("", description="most specific known birth location of a person", kind="property")
    assert top(cands) == WD + "P19"
    assert "lexical" not in cands[0].signals


def test_popularity_prior_breaks_a_tie(grounder):
    cands = grounder.ground("Paris", kind="entity")
    assert [c.id for c in cands[:2]] == [WD + "Q90", WD + "Q830149"]
    assert cands[0].signals["popularity"] > cands[1].signals["popularity"]


def test_context_rerank_prefers_what_the_store_confirms(grounder):
    plain = grounder.ground("Paris", kind="entity")
    assert top(plain) == WD + "Q90"
    ctx = {"property": "wdt:P17", "object": "wd:Q30", "role": "subject"}
    res = grounder.search("Paris", kind="entity", context=ctx)
    assert res.context_used
    assert top(res.candidates) == WD + "Q830149"
    assert res.candidates[0].signals["context"] == 1.0
    # a property placeholder between two known ends: Einstein --?--> Ulm is the place of birth
    born = grounder.search("born", kind="property", context={"subject": WD + "Q937", "object": WD + "Q3012"})
    assert top(born.candidates) == WD + "P19"
    other = [c for c in born.candidates if c.id == WD + "P569"]
    assert not other or other[0].signals["context"] == 0.0
    # an entity as the object of a known subject and property (role inferred: France's capital)
    cap = grounder.ground("Paris", kind="entity", context={"subject": "wd:Q142", "property": "wd:P36"})
    assert top(cap) == WD + "Q90"
    assert {c.id: c.signals["context"] for c in cap}[WD + "Q830149"] == 0.0


def test_no_grounding_below_threshold(grounder):
    res = grounder.search("xqzv blorft", kind="entity")
    assert res.candidates == []
    assert not res.grounded
    assert "below the threshold" in res.reason or "no entity candidate" in res.reason
    assert all(c.score < res.threshold for c in res.below_threshold)
    assert grounder.ground("xqzv blorft", kind="entity") == []


def test_threshold_is_a_setting(wd_store, embedder):
    strict = Grounder(wd_store, embedder=embedder, threshold=0.999)
    try:
        assert strict.ground("Albert Einstien") == []
        assert strict.search("Albert Einstien").reason.startswith("no grounding")
    finally:
        strict.close()


@pytest.mark.parametrize("query", ["", "   ", "\t\n"])
def test_empty_query_is_a_clear_error(grounder, query):
    with pytest.raises(KBQAError) as err:
        grounder.ground(query)
    assert err.value.info.stage == "ground"
    assert "empty" in err.value.info.message


def test_bad_kind_and_context_are_clear_errors(grounder):
    with pytest.raises(KBQAError, match="unknown kind"):
        grounder.ground("Paris", kind="thing")
    with pytest.raises(KBQAError, match="unknown grounding context"):
        grounder.ground("Paris", context={"subjekt": WD + "Q142"})


def test_correction_keeps_a_right_guess(grounder):
    kept = grounder.correct("wdt:P19", "place of birth", kind="property")
    assert kept.action == "kept"
    assert kept.uri == WD + "P19"
    kept = grounder.correct("wd:Q937", "Albert Einstien", "physicist", "entity")
    assert (kept.action, kept.uri) == ("kept", WD + "Q937")
    kept = grounder.correct(WD + "Q90", "city of light")  # an alias matches too
    assert kept.action == "kept"


def test_correction_replaces_a_wrong_guess(grounder):
    wrong_label = grounder.correct("wdt:P20", "place of birth", kind="property")
    assert (wrong_label.action, wrong_label.uri) == ("replaced", WD + "P19")
    assert "does not match" in wrong_label.reason
    unknown = grounder.correct("wd:Q99999999", "Albert Einstein", kind="entity")
    assert (unknown.action, unknown.uri) == ("replaced", WD + "Q937")
    assert "not in the label memory" in unknown.reason
    wrong_kind = grounder.correct("wd:Q6256", "country", kind="property")
    assert (wrong_kind.action, wrong_kind.uri) == ("replaced", WD + "P17")
    nothing = grounder.correct("wd:Q5", "xqzv blorft", kind="entity")
    assert nothing.action == "none" and nothing.uri is None


def test_results_round_trip_as_json(grounder):
    res = grounder.search("Paris", description="capital of France", k=3)
    again = GroundingResult.from_dict(json.loads(json.dumps(res.to_dict())))
    assert again == res
    corr = grounder.correct("wdt:P20", "place of birth", kind="property")
    assert Correction.from_dict(json.loads(json.dumps(corr.to_dict()))) == corr
