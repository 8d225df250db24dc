"""The generic profile's default case bank: Spider4SPARQL train questions (never a dev set), usable on any KG."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from eval.loaders import BENCHMARKS, SPIDER4SPARQL_DBS, load_benchmark
from kbqa.translators.casebank import CaseBank, bank_dir
from kbqa.translators.casebank_build import DEFAULT_SETS

# The sets only `kbqa eval` may score: none of them may feed a default bank of the generic profile.
GENERIC_DEV_SETS = {"bestiary", *(f"spider4sparql-{db}" for db in SPIDER4SPARQL_DBS)}


def test_generic_default_names_only_train_sets():
    sets = DEFAULT_SETS["generic"]
    assert sets == ("spider4sparql-train",)
    assert not GENERIC_DEV_SETS & set(sets)
    assert all(s in BENCHMARKS and s.endswith("-train") for s in sets)


def test_spider4sparql_train_loader_reads_the_bundled_file():
    records = load_benchmark("spider4sparql-train", check_syntax=False)
    assert len(records) > 5000
    assert len({r.id for r in records}) == len(records)
    assert all(r.question and r.sparql for r in records[:500])
    first = records[0]
    assert first.meta["kb"] == "generic" and first.meta["kg_name"]
    # `:pets\#weight` written as the KGs' own IRI: no escaped `#` is left in a query
    assert "<http://valuenet/ontop/" in first.sparql and not any("\\#" in (r.sparql or "") for r in records)
    assert not {r.meta["kg_name"] for r in records} & set(SPIDER4SPARQL_DBS)


@pytest.fixture(scope="module")
def generic_copy(bestiary_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private copy of a generic-profile store: `kbqa cases build` writes its bank next to the store."""
    dest = tmp_path_factory.mktemp("generic-copy") / "store"
    shutil.copytree(bestiary_store, dest, symlinks=True)
    return dest


def test_cases_build_on_a_generic_store_uses_the_train_set(run_cli, generic_copy):
    code, out, err = run_cli("cases", "build", "--store", generic_copy, "--limit", "150", "--no-progress",
                             "--format", "json")
    assert code == 0, err
    stats = json.loads(out)
    assert stats["sets"] == ["spider4sparql-train"] and stats["records"] == 150
    assert stats["cases"] > 100 and stats["cases"] + sum(stats["skipped"].values()) == 150
    bank = CaseBank.load(bank_dir(generic_copy))
    assert bank.datasets() == {"spider4sparql-train": stats["cases"]}
    # a case keeps its structure with labels read from the IRIs' local names, which ground on any store's labels
    desq = next(c.desq for c in bank.cases if "http://valuenet/ontop/" in c.desq)
    assert "\\#" not in desq and "GROUNDING" in desq
    code, out, _ = run_cli("cases", "search", "how many pets weigh more than ten kilograms", "--store", generic_copy,
                           "--format", "json")
    hits = json.loads(out)
    assert code == 0 and hits and all(h["id"].startswith("spider4sparql-train:") for h in hits)
