"""Coverage of decompose on the bundled benchmarks (eval/benchmarks), and the `kbqa decompose` verb.

The coverage test runs a deterministic sample of 300 queries per dataset (all of a smaller set):
the full sets take several minutes of rdflib parsing; `kbqa decompose --coverage all` runs them.
Covered means decomposed AND round-tripping to the gold query, so the round trip is checked for
every covered query of the sample.
"""

from __future__ import annotations

import json
from functools import cache

import pytest

from kbqa.frontends.decompose_coverage import COVERAGE_DATASETS, CoverageReport, coverage

SAMPLE = 300


@cache
def sampled(dataset: str) -> CoverageReport:
    return coverage(dataset, sample=SAMPLE)


@pytest.mark.slow  # decompose over whole benchmark files: CI runs it, `make test-fast` does not
@pytest.mark.parametrize("dataset", COVERAGE_DATASETS)
def test_coverage_at_least_90_percent(dataset: str) -> None:
    report = sampled(dataset)
    assert report.count == min(SAMPLE, report.sampled_from or report.count)
    assert report.count >= 100  # every bundled set has at least 100 gold queries
    assert report.percent >= 90.0, report.table() + "\n" + "\n".join(map(str, report.failures[:20]))
    # every query not covered says why, and is counted under a shape
    assert len(report.failures) == report.count - report.covered
    assert all(f["reason"] and f["shape"] for f in report.failures)
    assert CoverageReport.from_dict(json.loads(json.dumps(report.to_dict()))).to_dict() == report.to_dict()


def test_qualifiers_are_covered() -> None:
    report = sampled("lcquad2-dev")
    rows = {r.shape: r for r in report.rows}
    assert rows["qualifier"].count >= 30 and rows["qualifier"].percent >= 90.0


def test_cli_decompose_text(run_cli, wikidata_mini_store) -> None:  # noqa: ANN001
    code, out, err = run_cli("decompose", "SELECT ?x WHERE { ?x wdt:P19 wd:Q1297 }", "--store", wikidata_mini_store)
    assert code == 0, err
    assert out.startswith("FORMAT desq/1\nATOMIC CONSTRAINTS\n")
    assert "[chicago] entity | Chicago" in out and "AC2 => ?var1 [place_of_birth] [chicago] ." in out
    assert "added prefixes" in err


def test_cli_decompose_json(run_cli) -> None:  # noqa: ANN001
    code, out, _ = run_cli("decompose", "ASK { wd:Q42 wdt:P31 wd:Q5 }", "--format", "json", "--profile", "wikidata")
    assert code == 0
    data = json.loads(out)
    assert data["shape"] == "ask" and data["error"] is None
    assert data["desq"]["format"] == "desq/1"
    assert data["desq"]["constraints"][0] == {"id": "AC1", "text": "we need to know whether the following "
                                              "constraints hold", "fragment": "ASK"}
    assert {g["uri"] for g in data["grounding"]} >= {"http://www.wikidata.org/entity/Q42"}


def test_cli_errors(run_cli) -> None:  # noqa: ANN001
    code, _, err = run_cli("decompose", "SELECT ?x WHERE { GRAPH ?g { ?x ?p ?o } }")
    assert code == 3 and "GRAPH" in err
    code, _, err = run_cli("decompose")
    assert code == 2 and "--coverage" in err
    code, _, err = run_cli("decompose", "--coverage", "no-such-set")
    assert code == 2


def test_cli_coverage_table(run_cli) -> None:  # noqa: ANN001
    code, out, _ = run_cli("decompose", "--coverage", "bestiary", "--sample", "20", "--failures", "3")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "bestiary (generic profile), deterministic sample of 20 of 100"
    assert lines[1].split() == ["shape", "count", "covered", "%"]
    total = next(ln for ln in lines if ln.startswith("total")).split()
    assert total[1] == "20" and float(total[3].rstrip("%")) >= 90.0
    code, out, _ = run_cli("decompose", "--coverage", "qald7-train", "--sample", "10", "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["dataset"] == "qald7-train" and data["count"] == 10 and data["sampled_from"] == 100
