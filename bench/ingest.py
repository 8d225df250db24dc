"""Ingest throughput vs raw pyoxigraph bulk loading, and peak memory at two file sizes.

    .venv/bin/python bench/ingest.py [--triples 1000000] [--repeats 3]

Generates a Wikidata-like N-Triples file (10% label triples), then loads it alternately with
raw `pyoxigraph.Store.bulk_load` and with `kb_dumps.ingest.ingest` (which also writes the
label memory), each run in a fresh subprocess so peak RSS is its own. Prints medians and the
ratio; then loads a file of half the size with `ingest` to show peak memory does not grow
with the file.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WD, WDT = "http://www.wikidata.org/entity/", "http://www.wikidata.org/prop/direct/"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"


def generate(path: Path, n: int, seed: int = 0) -> None:
    rnd = random.Random(seed)
    entities = max(n // 10, 1000)
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            s = rnd.randrange(entities)
            if i % 10 == 0:
                f.write(f'<{WD}Q{s}> <{LABEL}> "entity number {s}"@en .\n')
            else:
                f.write(f"<{WD}Q{s}> <{WDT}P{rnd.randrange(300)}> <{WD}Q{rnd.randrange(entities)}> .\n")


def one(mode: str, src: str, target: str) -> None:
    """Run inside a subprocess: load once, print seconds and peak RSS as JSON."""
    t0 = time.perf_counter()
    if mode == "raw":
        import pyoxigraph as ox

        store = ox.Store(target)
        store.bulk_load(path=src, format=ox.RdfFormat.N_TRIPLES)
        store.flush()
        del store
    else:
        from kb_dumps.ingest import ingest

        ingest([src], target, profile="wikidata", progress=False)
    seconds = time.perf_counter() - t0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "peak_mb": peak_mb}))


def run(mode: str, src: Path, work: Path) -> dict:
    target = work / f"{mode}-store"
    shutil.rmtree(target, ignore_errors=True)
    out = subprocess.run([sys.executable, __file__, "--one", mode, str(src), str(target)],
                         capture_output=True, text=True, check=True)
    shutil.rmtree(target, ignore_errors=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--triples", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--one", nargs=3, metavar=("MODE", "SRC", "TARGET"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        one(*args.one)
        return
    with tempfile.TemporaryDirectory(prefix="kbqa-bench-") as tmp:
        work = Path(tmp)
        big, half = work / "big.nt", work / "half.nt"
        generate(big, args.triples)
        generate(half, args.triples // 2, seed=1)
        print(f"file: {args.triples:,} triples, {big.stat().st_size / 1e6:.0f} MB")
        raw, ing = [], []
        for i in range(args.repeats):  # alternate so drift on a noisy machine hits both alike
            raw.append(run("raw", big, work))
            ing.append(run("ingest", big, work))
            print(f"  repeat {i + 1}: raw {args.triples / raw[-1]['seconds']:,.0f} t/s, "
                  f"ingest {args.triples / ing[-1]['seconds']:,.0f} t/s")
        raw_s = statistics.median(r["seconds"] for r in raw)
        ing_s = statistics.median(r["seconds"] for r in ing)
        half_run = run("ingest", half, work)
        print(f"raw bulk_load : median {raw_s:.2f} s = {args.triples / raw_s:,.0f} triples/s, "
              f"peak {statistics.median(r['peak_mb'] for r in raw):.0f} MB")
        print(f"kbqa ingest   : median {ing_s:.2f} s = {args.triples / ing_s:,.0f} triples/s, "
              f"peak {statistics.median(r['peak_mb'] for r in ing):.0f} MB (store + label memory)")
        print(f"ratio ingest/raw throughput: {raw_s / ing_s:.2f} (target >= 0.80)")
        print(f"peak memory, ingest: {args.triples // 2:,} triples {half_run['peak_mb']:.0f} MB vs "
              f"{args.triples:,} triples {statistics.median(r['peak_mb'] for r in ing):.0f} MB")


if __name__ == "__main__":
    main()
