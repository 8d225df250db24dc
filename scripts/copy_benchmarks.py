"""Copy the benchmark files the project evaluates on from the shared data folder into eval/benchmarks/.

Run from the repository root: `python scripts/copy_benchmarks.py [--shared ../shared/data]`.
Each file is gzip-compressed under its original name + `.gz` (sub-folders kept, since several
sets share names such as `dev.json`); upstream license files are copied beside them, and a
README with sources and licenses is written. Nothing at run time reads the shared folder.
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import sys
from pathlib import Path

# (relative path in the shared folder, set folder) — the folder is kept in eval/benchmarks.
FILES = [
    "lcquad2/dev.json",
    "lcquad2/train.json",
    "wikiwebquestions/train.json",
    "wikiwebquestions/dev.json",
    "wikiwebquestions/wikisp_train_alignments.json",
    "qald/qald-7-train-en-wikidata.json",
    "qald/qald-9-plus-train-en.json",
    "rubq/RuBQ_1.0_dev.json",
    "rubq/RuBQ_2.0_dev.json",
    "simplequestions-wikidata/train_answerable.txt",
    "simplequestions-wikidata/train.txt",
    "simplequestions-wikidata/valid_answerable.txt",
    "simplequestions-wikidata/valid.txt",
    "bestiary/beastiary_with_qald_format.json",
    "freebase/grailqa_sample_1000.json",
    # Spider4SPARQL dev: six complete small KGs (Turtle) with their questions, gold SPARQL and answers (QALD JSON)
    *[f"spider4sparql/{db}.json" for db in ("battle_death", "car_1", "concert_singer", "employee_hire_evaluation",
                                            "pets_1", "poker_player")],
    *[f"spider4sparql/kgs/{db}.ttl" for db in ("battle_death", "car_1", "concert_singer", "employee_hire_evaluation",
                                               "pets_1", "poker_player")],
    # Spider4SPARQL train: question/SPARQL pairs over 146 other databases (no KG): explore's structure prior
    "spider4sparql/train.json",
]

# Upstream license texts that sit beside the data; copied as they are (small, plain text).
LICENSES = {
    "qald/LICENSE.qald7": "qald/LICENSE.qald7",
    "rubq/LICENSE.txt": "rubq/LICENSE.txt",
    "simplequestions-wikidata/LICENSE.txt": "simplequestions-wikidata/LICENSE.txt",
    "bestiary/README.upstream.md": "bestiary/README.upstream.md",
    "freebase/schema/LICENSE": "freebase/LICENSE.grailqa-schema",
    "spider4sparql/LICENSE": "spider4sparql/LICENSE",
}

README = """# Benchmarks bundled with the project

Copied from the project's reference data by `scripts/copy_benchmarks.py` (gzip-compressed, original
file names + `.gz`); the loaders in `eval/loaders.py` read them, and the registry there names them
(`lcquad2-dev`, `wwq-dev`, ...). Facts and questions carry their upstream licenses, listed here as
published with the data; license texts that came with a set are copied beside it.

| file | what it holds | source (repo @ commit) | license |
|---|---|---|---|
| `lcquad2/dev.json.gz` | 1,067 LC-QuAD 2.0 questions with gold SPARQL and `intermediate_sparql` skeletons | debayan/sigir2022-sparqlbaselines @ 6aab442 | not stated upstream (LC-QuAD 2.0 itself is CC BY 3.0) |
| `lcquad2/train.json.gz` | LC-QuAD 2.0 train questions in the same form; `eval/dev_ngrams.py` reads them (a five-word run train questions also use is common phrasing, not a dev question's own) | same | same |
| `wikiwebquestions/{train,dev}.json.gz` | WikiWebQuestions (WebQSP on Wikidata): 2,431 train (question, SPARQL), 454 dev (with gold result bindings) | stanford-oval/wikidata-emnlp23 @ acbc1eb | WebQSP CC BY 4.0 |
| `wikiwebquestions/wikisp_train_alignments.json.gz` | the 2,431 train questions with entity label -> QID hints and SPARQL written with property names | same | not stated upstream |
| `qald/qald-7-train-en-wikidata.json.gz` | QALD-7 task 4 train, 100 questions, QALD JSON with gold SPARQL and answers | ag-sc/QALD @ 7a43e2b | MIT (`qald/LICENSE.qald7`) |
| `qald/qald-9-plus-train-en.json.gz` | QALD-9-plus Wikidata train, 371 English questions with SPARQL | stanford-oval/spinach @ 8bb2d9c | Apache-2.0 / CC BY 4.0 |
| `rubq/RuBQ_{1.0,2.0}_dev.json.gz` | Russian questions + English translations, SPARQL, answers with ru/en labels | vladislavneon/RuBQ @ fade3ea | CC BY-SA 4.0 (`rubq/LICENSE.txt`) |
| `simplequestions-wikidata/{train,valid}_answerable.txt.gz`, `{train,valid}.txt.gz` | SimpleQuestions mapped to Wikidata: `subject \\t property \\t object \\t question`; `R123` is the inverse of `P123`; `*_answerable` = the triple exists in Wikidata; `train.txt.gz` (all train questions) is what `eval/dev_ngrams.py` reads | askplatypus/wikidata-simplequestions @ df69267 | CC BY 3.0 (`simplequestions-wikidata/LICENSE.txt`) |
| `bestiary/beastiary_with_qald_format.json.gz` | 100 BESTIARY questions, QALD JSON with gold SPARQL and answers (90 run on the KG) | danrd/sparqlgen @ 1efd5be | not stated upstream (`bestiary/README.upstream.md`) |
| `freebase/grailqa_sample_1000.json.gz` | 1,000 GrailQA questions with Freebase SPARQL, s-expression and answers | IDEA-FinAI/ToG @ 7ccbb92 | not stated upstream (GrailQA schema files: BSD-3-Clause, `freebase/LICENSE.grailqa-schema`) |
| `spider4sparql/<db>.json.gz`, `spider4sparql/kgs/<db>.ttl.gz` | Spider4SPARQL dev: 6 complete small KGs built from relational databases (battle_death, car_1, concert_singer, employee_hire_evaluation, pets_1, poker_player) and their 267 questions with gold SPARQL and answers (QALD JSON) | ckosten/Spider4SPARQL @ 6d6ed8e (dev), f100923 (KGs) | Apache-2.0; questions from Spider, CC BY-SA 4.0 (`spider4sparql/LICENSE`) |
| `spider4sparql/train.json.gz` | Spider4SPARQL train: 8,659 question / SPARQL pairs over 146 databases other than the six above (no KG); `kbqa/training/structure_prior.py` learns `explore`'s structure prior from it; registry name `spider4sparql-train` (loader `spider4sparql`): the generic profile's default case bank (`kbqa cases build`) | ckosten/Spider4SPARQL @ 050749f | as above |

Regenerate with `python scripts/copy_benchmarks.py --shared ../shared/data`.
"""


def copy_benchmarks(shared: Path, dest: Path) -> list[tuple[Path, int, int]]:
    """Compress every benchmark file into `dest`; returns (target, original bytes, compressed bytes)."""
    missing = [f for f in FILES if not (shared / f).is_file()]
    if missing:
        raise FileNotFoundError(f"not found under {shared}: {', '.join(missing)}")
    done = []
    for rel in FILES:
        src, target = shared / rel, dest / (rel + ".gz")
        target.parent.mkdir(parents=True, exist_ok=True)
        # mtime=0 keeps the compressed bytes identical across runs (no spurious diffs).
        with open(src, "rb") as fin, open(target, "wb") as raw, \
                gzip.GzipFile(filename=src.name, mode="wb", fileobj=raw, mtime=0, compresslevel=9) as fout:
            shutil.copyfileobj(fin, fout)
        done.append((target, src.stat().st_size, target.stat().st_size))
    for rel, out in LICENSES.items():
        if (shared / rel).is_file():
            (dest / out).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(shared / rel, dest / out)
    (dest / "README.md").write_text(README, encoding="utf-8")
    return done


def main(argv: list[str] | None = None) -> int:
    root = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=Path, default=root.parent / "shared" / "data",
                    help="the shared reference data folder (default: ../shared/data)")
    ap.add_argument("--dest", type=Path, default=root / "eval" / "benchmarks")
    args = ap.parse_args(argv)
    try:
        done = copy_benchmarks(args.shared, args.dest)
    except FileNotFoundError as e:
        print(f"copy_benchmarks: {e}", file=sys.stderr)
        return 3
    total = 0
    for target, size, packed in done:
        total += packed
        print(f"{target.relative_to(args.dest)}: {size:,} -> {packed:,} bytes")
    print(f"{len(done)} files, {total / 1e6:.1f} MB compressed, in {args.dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
