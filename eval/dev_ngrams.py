"""Five-word runs of development questions typed into the project's own code: dev questions are for measuring,
never for growing rules or writing unit tests (issue 22). The dev sets are read from the bundled copies in
`eval/benchmarks/`.

A dev run is a run of five words of a dev question that no train question of the same family contains (a run
train questions share is common phrasing, not the dev question's own words). Families, dev / train:
Spider4SPARQL's six dev KGs and BESTIARY / Spider4SPARQL train; SimpleQuestions valid / train; LC-QuAD 2.0 dev /
train; WikiWebQuestions dev / its train, QALD-7 and QALD-9-plus train. Counted files: tracked `*.py` outside
`bench/` and `tests/fixtures/`, and package data files (`*.json`, `*.toml`, `*.yaml`) of the packages outside
bundled benchmarks and samples; the README's example questions do not count.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
from collections.abc import Iterable
from pathlib import Path

from kb_dumps.json_types import JsonObject, JsonValue

RUN = 5
BENCHMARKS = Path(__file__).resolve().parent / "benchmarks"
SPIDER_DEV_KGS = ("battle_death", "car_1", "concert_singer", "employee_hire_evaluation", "pets_1", "poker_player")
PACKAGES = ("kbqa/", "grounding/", "assembler/", "kb_dumps/", "eval/")
DATA_SUFFIXES = (".json", ".toml", ".yaml", ".yml")
_WORDS = re.compile(r"[a-z0-9']+")


def runs(texts: Iterable[str | None], n: int = RUN) -> set[str]:
    """Every run of `n` consecutive words (lower-cased letters, digits, apostrophes) of the texts."""
    out: set[str] = set()
    for text in texts:
        words = _WORDS.findall((text or "").lower())
        out.update(" ".join(words[i:i + n]) for i in range(len(words) - n + 1))
    return out


def _read(path: Path) -> str:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return f.read()


def _json(rel: str, root: Path) -> JsonValue:
    return json.loads(_read(root / rel))


def _qald(data: JsonObject) -> list[str]:
    return [s["string"] for q in data["questions"] for s in q["question"] if s.get("language", "en") == "en"]


def _simplequestions(rel: str, root: Path) -> list[str]:
    return [line.split("\t")[3] for line in _read(root / rel).split("\n") if line.count("\t") >= 3]


def _lcquad(rel: str, root: Path) -> list[str | None]:
    return [x.get(k) for x in _json(rel, root) for k in ("question", "paraphrased_question")]


def families(root: Path = BENCHMARKS) -> list[tuple[list[str | None], list[str | None]]]:
    """(dev questions, train questions) per family, from the bundled benchmark copies."""
    spider_dev = [q for kg in SPIDER_DEV_KGS for q in _qald(_json(f"spider4sparql/{kg}.json.gz", root))]
    bestiary = _qald(_json("bestiary/beastiary_with_qald_format.json.gz", root))
    spider_train = [p["question"] for p in _json("spider4sparql/train.json.gz", root)]
    qald_train = _qald(_json("qald/qald-7-train-en-wikidata.json.gz", root)) + \
        [x["question"] for x in _json("qald/qald-9-plus-train-en.json.gz", root)]
    wwq_dev = [x["utterance"] for x in _json("wikiwebquestions/dev.json.gz", root)]
    wwq_train = [x["utterance"] for x in _json("wikiwebquestions/train.json.gz", root)]
    return [
        (spider_dev + bestiary, spider_train),
        (_simplequestions("simplequestions-wikidata/valid.txt.gz", root),
         _simplequestions("simplequestions-wikidata/train.txt.gz", root)),
        (_lcquad("lcquad2/dev.json.gz", root), _lcquad("lcquad2/train.json.gz", root)),
        (wwq_dev, wwq_train + qald_train),
    ]


def dev_runs(root: Path = BENCHMARKS) -> set[str]:
    """The five-word runs that are a dev question's own words."""
    out: set[str] = set()
    for dev, train in families(root):
        out |= runs(dev) - runs(train)
    return out


def counted_files(project: Path) -> list[str]:
    """The project files the check reads, relative to `project`: git's tracked files, or (no git) every file
    under it outside hidden folders and virtual environments."""
    try:
        listed = subprocess.run(["git", "-C", str(project), "ls-files"], capture_output=True, text=True,
                                check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        listed = []
        for folder, dirs, names in os.walk(project):
            dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("venv", "node_modules", "__pycache__")]
            listed += [str((Path(folder) / n).relative_to(project)) for n in names]
    return sorted(f for f in listed if _counted(f.replace(os.sep, "/")))


def _counted(rel: str) -> bool:
    if rel.endswith(".py"):
        return not rel.startswith(("bench/", "tests/fixtures/"))
    return rel.endswith(DATA_SUFFIXES) and rel.startswith(PACKAGES) and "/benchmarks/" not in rel \
        and "/samples/" not in rel


def typed_dev_runs(project: Path, root: Path = BENCHMARKS) -> dict[str, list[str]]:
    """file -> the dev runs typed into it (sorted), for every counted file that holds one."""
    dev = dev_runs(root)
    readme = project / "README.md"
    if readme.is_file():
        dev -= runs([readme.read_text(encoding="utf-8", errors="replace")])
    out: dict[str, list[str]] = {}
    for rel in counted_files(project):
        try:
            text = (project / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        hits = sorted(runs([text]) & dev)
        if hits:
            out[rel] = hits
    return out


if __name__ == "__main__":
    import sys

    found = typed_dev_runs(Path(sys.argv[1] if len(sys.argv) > 1 else "."))
    for rel, hits in found.items():
        print(f"{rel}: {hits}")
    print(f"dev-question five-word runs typed into tracked files: {sum(len(h) for h in found.values())}")
    sys.exit(1 if found else 0)
