"""A copy of a store whose label memory also holds N generated entity labels: does grounding still find the real ones?

  python -m bench.label_mix --rows 1000000 --out /tmp/mix1m
  python -m bench.wikidata_structure --sets lcquad2-dev --store /tmp/mix1m     # entity F1 among 1M more names

The bundled wikidata-mini label memory holds the label of every LC-QuAD 2.0 entity and little else, so a structure
that finds its entities there has an easy time: every exact name match is the right item. Real Wikidata has ~100M
names, many of them the same words. This copies the store (data, schema, case bank and all), adds `--rows` entity rows
made as `bench.grounding speed` makes them (real words from the real labels, real label lengths; IRIs
`wd:S<i>`, popularity 0) in a new label-memory generation, and re-indexes it with `kbqa index`'s code (`build_index`,
the compact vector store: the same setup as a full-Wikidata label memory). The store's triples are untouched, so
anything that reads facts sees the same KG; only the names a mention can match grow. Not a test: reads
../shared/data for the words.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import time
from pathlib import Path

from bench.grounding import WD, generated_rows, real_rows
from grounding.build import build_index
from kb_dumps.label_memory import LabelMemory
from kb_dumps.layout import StoreLayout

ROOT = Path(__file__).resolve().parents[1]
CHUNK = 50_000


def mix(source: Path, out: Path, rows: int, seed: int = 7) -> dict:
    if out.exists():
        raise SystemExit(f"error: {out} exists; give a new folder")
    t0 = time.perf_counter()
    shutil.copytree(source, out, symlinks=True)
    layout = StoreLayout.of(out)
    memory = LabelMemory(layout.labels)
    before = len(memory)
    real = real_rows()
    gen = memory.begin_generation()
    chunk: dict[str, dict] = {}
    added = 0
    # generated_rows yields the real rows first, then synthetic ones up to `n`: skip the real ones (the store has its
    # own), keep `rows` synthetic ones.
    for r in generated_rows(real, len(real) + rows, random.Random(seed)):
        if not r[0].startswith("S"):
            continue
        chunk[WD + r[0]] = {"label": r[2], "description": r[3], "kind": r[1]}
        added += 1
        if len(chunk) >= CHUNK:
            memory.merge_texts(chunk, gen)
            chunk = {}
    if chunk:
        memory.merge_texts(chunk, gen)
    memory.commit()
    total = len(memory)
    memory.close()
    written = time.perf_counter() - t0
    stats = build_index(out, vector_store="compact", progress=sys.stderr.isatty())
    fig = {"source": str(source), "store": str(out), "labels_before": before, "generated": added,
           "labels_after": total, "copy_and_write_s": round(written, 1), "index_s": round(stats.seconds, 1),
           "index_peak_rss_mb": round(stats.peak_rss_mb, 1), "vector_store": "compact"}
    (out / "label_mix.json").write_text(json.dumps(fig, indent=2), encoding="utf-8")
    return fig


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", type=Path, default=ROOT / ".kbqa" / "stores" / "wikidata-mini", help="store to copy")
    p.add_argument("--rows", type=int, default=1_000_000, help="generated entity labels to add")
    p.add_argument("--out", type=Path, required=True, help="new folder for the mixed store")
    args = p.parse_args(argv)
    fig = mix(args.store, args.out, args.rows)
    print(json.dumps(fig, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
