"""The training questions of the structure models: every Wikidata train set bundled under eval/benchmarks/.

LC-QuAD 2.0 train, WikiWebQuestions train, QALD-7 train, QALD-9-plus train, SimpleQuestions train (a sample: its two
one-triple skeletons need no more) and RuBQ 1.0/2.0 dev (English; bank data). A measurement on one of them leaves it
out (`exclude_sets`) or leaves out the questions of its fold (`exclude_ids`, `exclude_questions`); dev sets
(LC-QuAD 2.0 dev, WikiWebQuestions dev) are never read here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from eval.loaders import BENCHMARK_DIR, load_benchmark
from eval.skeleton import Skeleton, SkeletonError, skeleton
from grounding.text import normalize

# name -> benchmark name or file under eval/benchmarks (LC-QuAD 2.0 train has no registry name)
TRAIN_SETS: dict[str, str] = {
    "lcquad2-train": str(BENCHMARK_DIR / "lcquad2" / "train.json.gz"),
    "wwq-train": "wwq-train",
    "qald7-train": "qald7-train",
    "qald9plus-train": "qald9plus-train",
    "simplequestions-train": "simplequestions-train",
    "rubq1-dev": "rubq1-dev",
    "rubq2-dev": "rubq2-dev",
}
SIMPLEQUESTIONS_SAMPLE = 3000  # every 6th of ~19,500: two skeletons, and their properties


@dataclass
class Example:
    """One solved training question: its text, gold query and skeleton."""

    id: str  # "<set>:<record id>"
    dataset: str
    question: str
    sparql: str
    skeleton: Skeleton


def question_key(q: str) -> str:
    return " ".join(normalize(q).split())


def load_examples(exclude_sets: set[str] | None = None, exclude_ids: set[str] | None = None,
                  exclude_questions: set[str] | None = None, sets: dict[str, str] | None = None) -> list[Example]:
    """The training examples whose gold query has a skeleton, minus the excluded sets, ids and question texts."""
    exclude_sets = exclude_sets or set()
    exclude_ids = exclude_ids or set()
    banned = {question_key(q) for q in exclude_questions or ()}
    out: list[Example] = []
    for name, source in (sets or TRAIN_SETS).items():
        if name in exclude_sets:
            continue
        records = [r for r in load_benchmark(source, check_syntax=False) if r.sparql and r.question]
        if name == "simplequestions-train":
            step = max(1, len(records) // SIMPLEQUESTIONS_SAMPLE)
            records = records[::step]
        seen: set[str] = set()
        for r in records:
            eid = f"{name}:{r.id}"
            key = question_key(r.question)
            if eid in exclude_ids or key in banned or key in seen:
                continue
            try:
                sk = skeleton(r.sparql)
            except SkeletonError:
                continue
            seen.add(key)
            out.append(Example(eid, name, r.question, r.sparql, sk))
    return out


def benchmark_path(name: str) -> Path | str:
    return TRAIN_SETS.get(name, name)
