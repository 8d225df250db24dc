"""Copy a few small Spider4SPARQL train KGs, with their train pairs and gold answers, into tests/fixtures/train_kgs/.

Run from the repository root: `python scripts/copy_train_kg_fixtures.py [--shared ../shared/data]`. The tests of
`kbqa train --ranker --train-kgs` read this copy (a train-KG folder in the same layout as the full one), so the
suite never reads the shared folder.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
from pathlib import Path

KGS = ("small_bank_1", "network_2", "loan_1", "soccer_2")
ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    p.add_argument("--out", type=Path, default=ROOT / "tests" / "fixtures" / "train_kgs")
    args = p.parse_args()
    src = args.shared / "spider4sparql" / "train_kgs"
    args.out.mkdir(parents=True, exist_ok=True)
    for kg in KGS:
        shutil.copyfile(src / f"{kg}.nt.gz", args.out / f"{kg}.nt.gz")
    pairs = [q for q in json.loads((src.parent / "train.json").read_text(encoding="utf-8")) if q["kg_name"] in KGS]
    (args.out / "train.json").write_text(json.dumps(pairs, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    with gzip.open(src / "train_answers.jsonl.gz", "rt", encoding="utf-8") as f, \
            gzip.open(args.out / "train_answers.jsonl.gz", "wt", encoding="utf-8") as out:
        for line in f:
            if json.loads(line).get("kg_name") in KGS:
                out.write(line)
    shutil.copyfile(src / "SOURCE.md", args.out / "SOURCE.md")
    (args.out / "README.md").write_text(
        f"# A few Spider4SPARQL train KGs for the tests\n\n{', '.join(KGS)}: dumps, train pairs and gold answers, "
        "copied by `scripts/copy_train_kg_fixtures.py` from the train-KG folder described in SOURCE.md "
        "(Apache-2.0 mapping; the databases and questions come from Spider, CC BY-SA 4.0).\n", encoding="utf-8")
    print(f"copied {len(KGS)} KGs and {len(pairs)} pairs to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
