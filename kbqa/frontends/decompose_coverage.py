"""Coverage of decompose on a benchmark: per shape, how many gold queries decompose AND round-trip.

Round trip: the Plan written back with the gold URIs (`write_sparql(plan, profile, mapping)`) must be
structurally identical to the gold (`eval.query_metrics.queries_match`: prefixes expanded, variables
renamed canonically, triple order ignored).
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field

from assembler.writer import write_sparql
from eval.loaders import load_benchmark
from eval.query_metrics import queries_match
from kb_dumps.label_memory import LabelMemory
from kbqa.frontends.decompose import DecomposeResult, decompose

# The KB profile of each bundled benchmark with gold SPARQL (decompose needs the profile's roles).
DATASET_PROFILES: dict[str, str] = {
    "lcquad2-dev": "wikidata", "wwq-dev": "wikidata", "wwq-train": "wikidata", "qald7-train": "wikidata",
    "qald9plus-train": "wikidata", "rubq1-dev": "wikidata", "rubq2-dev": "wikidata", "bestiary": "generic",
    "grailqa-sample": "freebase",
}
COVERAGE_DATASETS = tuple(DATASET_PROFILES)


def round_trip_problem(result: DecomposeResult) -> str | None:
    """None when the Plan, written with the gold URIs, matches the gold; else what went wrong."""
    if not result.ok or result.plan is None or result.gold_sparql is None:
        return result.error or "not decomposed"
    written = write_sparql(result.plan, result.profile, result.mapping)
    if not written.ok:
        return "cannot write the Plan back: " + "; ".join(e.message for e in written.errors[:3])
    if not queries_match(written.sparql, result.gold_sparql, kb=result.profile):
        return "round trip differs from the gold query"
    return None


@dataclass
class ShapeRow:
    shape: str
    count: int = 0
    covered: int = 0

    @property
    def percent(self) -> float:
        return 100.0 * self.covered / self.count if self.count else 0.0

    def to_dict(self) -> dict:
        return {**asdict(self), "percent": round(self.percent, 1)}


@dataclass
class CoverageReport:
    """Per-shape coverage of one dataset and the reason of each query not covered."""

    dataset: str
    profile: str
    rows: list[ShapeRow] = field(default_factory=list)
    failures: list[dict] = field(default_factory=list)  # {id, shape, reason}
    sampled_from: int | None = None  # queries with gold SPARQL before sampling

    @property
    def count(self) -> int:
        return sum(r.count for r in self.rows)

    @property
    def covered(self) -> int:
        return sum(r.covered for r in self.rows)

    @property
    def percent(self) -> float:
        return 100.0 * self.covered / self.count if self.count else 0.0

    def to_dict(self) -> dict:
        return {"dataset": self.dataset, "profile": self.profile, "count": self.count, "covered": self.covered,
                "percent": round(self.percent, 1), "sampled_from": self.sampled_from,
                "rows": [r.to_dict() for r in self.rows], "failures": list(self.failures)}

    @classmethod
    def from_dict(cls, d: dict) -> CoverageReport:
        rows = [ShapeRow(r["shape"], r["count"], r["covered"]) for r in d.get("rows") or []]
        return cls(d["dataset"], d["profile"], rows, list(d.get("failures") or []), d.get("sampled_from"))

    def table(self) -> str:
        """The per-shape table as text (shape, count, covered, %)."""
        lines = [f"{self.dataset} ({self.profile} profile)"
                 + (f", deterministic sample of {self.count} of {self.sampled_from}" if self.sampled_from else ""),
                 f"{'shape':<14}{'count':>7}{'covered':>9}{'%':>8}"]
        for r in sorted(self.rows, key=lambda r: (-r.count, r.shape)):
            lines.append(f"{r.shape:<14}{r.count:>7}{r.covered:>9}{r.percent:>7.1f}%")
        lines.append(f"{'total':<14}{self.count:>7}{self.covered:>9}{self.percent:>7.1f}%")
        return "\n".join(lines)


def gold_queries(dataset: str) -> list[tuple[str, str]]:
    """(record id, original gold SPARQL) of every record with a gold query, in file order."""
    out = []
    for r in load_benchmark(dataset, check_syntax=False):
        original = r.meta.get("original_sparql") or r.sparql
        if original:
            out.append((r.id, original))
    return out


def coverage(dataset: str, profile: str | None = None, *, sample: int | None = None,
             labels: LabelMemory | None = None) -> CoverageReport:
    """Decompose and round-trip every gold query of `dataset` (or a deterministic sample of `sample`)."""
    prof = profile or DATASET_PROFILES.get(dataset, "wikidata")
    queries = gold_queries(dataset)
    report = CoverageReport(dataset, prof)
    if sample is not None and sample < len(queries):
        report.sampled_from = len(queries)
        keep = sorted(random.Random(0).sample(range(len(queries)), sample))
        queries = [queries[i] for i in keep]
    rows: dict[str, ShapeRow] = {}
    for qid, sparql in queries:
        result = decompose(sparql, prof, labels)
        problem = round_trip_problem(result)
        row = rows.setdefault(result.shape, ShapeRow(result.shape))
        row.count += 1
        if problem is None:
            row.covered += 1
        else:
            report.failures.append({"id": qid, "shape": result.shape, "reason": problem})
    report.rows = list(rows.values())
    return report
