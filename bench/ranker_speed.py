"""Scoring speed of explore's tree ranker: all trees walked at once (`TreeRanker.score_dicts`) against one tree at a
time (the earlier walk, kept here as the baseline), on the candidate lists of a candidates file, in the same run.

  python -m bench.ranker_speed --candidates WORK/candidates.jsonl [--ranker FILE] [--n 300] [--repeat 3]

Prints, per question (one call scores its whole candidate list, as the rank stage does), the median and p99
milliseconds of each walk, the ratio of the medians, and the largest score difference (must be ~0).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from kbqa.training.ranker_data import iter_groups, read_candidates
from kbqa.translators.explore.rank.rankers import load_ranker
from kbqa.translators.explore.rank.trees import Tree, TreeRanker


def _walk_one(t: Tree, x: np.ndarray) -> np.ndarray:
    node = np.zeros(len(x), dtype=np.int64)
    rows = np.arange(len(x))
    while True:
        feat = t.split[node]
        inner = feat >= 0
        if not inner.any():
            return t.value[node]
        go_left = x[rows, np.where(inner, feat, 0)] <= t.threshold[node]
        node = np.where(inner, np.where(go_left, t.left[node], t.right[node]), node)


def per_tree(ranker: TreeRanker, feats: list[dict[str, float]]) -> np.ndarray:
    x = ranker.matrix(feats)
    total = np.full(len(feats), ranker.base)
    for t in ranker.trees:
        total += _walk_one(t, x)
    return total


def _p99(values: list[float]) -> float:
    return sorted(values)[max(0, int(len(values) * 0.99) - 1)]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--candidates", type=Path, required=True, help="a candidates file (kbqa/training/ranker_data.py)")
    p.add_argument("--ranker", default=None, help="a tree ranker file (default: the shipped one)")
    p.add_argument("--n", type=int, default=300, help="questions (default 300)")
    p.add_argument("--repeat", type=int, default=3, help="timed passes over the questions, interleaved (default 3)")
    args = p.parse_args()
    ranker = load_ranker(args.ranker)
    if not isinstance(ranker, TreeRanker):
        p.error("--ranker: not a tree ranker")
    groups = [f for _r, f, _f1 in iter_groups(read_candidates(args.candidates)[:args.n]) if f]
    packed_ms: list[float] = []
    single_ms: list[float] = []
    diff = 0.0
    for _ in range(args.repeat):
        for feats in groups:
            t0 = time.perf_counter()
            a = ranker.score_dicts(feats)
            t1 = time.perf_counter()
            b = per_tree(ranker, feats)
            t2 = time.perf_counter()
            packed_ms.append(1000 * (t1 - t0))
            single_ms.append(1000 * (t2 - t1))
            diff = max(diff, float(np.abs(a - b).max()))
    cands = statistics.fmean(len(f) for f in groups)
    print(f"{len(ranker.trees)} trees, {len(groups)} questions x {args.repeat}, {cands:.1f} candidates per question")
    print(f"all trees at once: median {statistics.median(packed_ms):.2f} ms, p99 {_p99(packed_ms):.2f} ms")
    print(f"one tree at a time: median {statistics.median(single_ms):.2f} ms, p99 {_p99(single_ms):.2f} ms")
    print(f"speed-up at the median: {statistics.median(single_ms) / statistics.median(packed_ms):.1f}x; "
          f"largest score difference {diff:.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
