"""Training knowledge graphs for the `explore` ranker: Spider4SPARQL's train databases as KGs with gold answers.

A train-KG folder holds one N-Triples dump per KG (`<kg>.nt.gz`), the gold answers of each train pair
(`train_answers.jsonl.gz`, one JSON object per line: `id`, `kg_name`, `status`, `vars`, `rows` in SPARQL JSON terms,
`result`) and the pairs themselves (`train.json` in the folder or beside it: `id`, `kg_name`, `question`,
`query`). `../shared/data/spider4sparql/train_kgs/` is one; `tests/fixtures/train_kgs/` holds a few small ones.

Only questions whose gold query ran and returned a non-trivial answer are used: a lone `0` or unbound row says
nothing about which candidate is right (a wrong COUNT over nothing gives the same). Each KG is ingested once into
`WORK/stores/<kg>` (kept between runs).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kb_dumps.json_types import JsonObject
from kb_dumps.stage_errors import KBQAError

ANSWERS_FILE = "train_answers.jsonl.gz"
PAIRS_FILE = "train.json"


@dataclass
class TrainQuestion:
    """One train pair with its gold answers (a SPARQL JSON result) over the KG it belongs to."""

    id: str
    kg: str
    question: str
    sparql: str
    gold: JsonObject | None

    @property
    def trivial(self) -> bool:
        return is_trivial(self.gold)


def is_trivial(result: JsonObject | None) -> bool:
    """A result that any wrong count or empty aggregate also gives: no rows, or one row of `0` / unbound."""
    if result is None:
        return True
    if "boolean" in result:
        return False
    rows = result.get("results", {}).get("bindings", [])
    if not rows:
        return True
    if len(rows) > 1:
        return False
    values = [t.get("value") for t in rows[0].values()]
    return not values or all(v in (None, "0", "0.0") for v in values)


def _pairs_file(folder: Path) -> Path:
    for p in (folder / PAIRS_FILE, folder.parent / PAIRS_FILE):
        if p.is_file():
            return p
    raise KBQAError(f"{folder}: no {PAIRS_FILE} in the folder or beside it (the train pairs: id, kg_name, question, "
                    "query)", stage="usage")


def list_kgs(folder: str | Path) -> list[str]:
    """The KGs of a train-KG folder that hold data (an empty dump teaches nothing)."""
    root = Path(folder)
    if not (root / ANSWERS_FILE).is_file():
        raise KBQAError(f"{root}: not a train-KG folder (no {ANSWERS_FILE}; see `kbqa train --help`)", stage="usage")
    return sorted(p.name[:-len(".nt.gz")] for p in root.glob("*.nt.gz") if p.stat().st_size > 64)


def read_questions(folder: str | Path, kgs: list[str] | None = None, *, keep_trivial: bool = False
                   ) -> dict[str, list[TrainQuestion]]:
    """Per KG, its train questions whose gold query returned answers, in file order."""
    root = Path(folder)
    wanted = set(kgs if kgs is not None else list_kgs(root))
    pairs_path = _pairs_file(root)
    try:
        pairs = {p["id"]: p for p in json.loads(pairs_path.read_text(encoding="utf-8"))}
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise KBQAError(f"{pairs_path}: cannot read the train pairs: {e}", stage="usage") from None
    out: dict[str, list[TrainQuestion]] = {kg: [] for kg in sorted(wanted)}
    for lineno, ans in _answers(root / ANSWERS_FILE):
        kg = ans.get("kg_name")
        if kg not in wanted or ans.get("status") != "ok" or ans.get("result") != "nonempty":
            continue
        pair = pairs.get(ans.get("id"))
        if pair is None:
            raise KBQAError(f"{root / ANSWERS_FILE}:{lineno}: id {ans.get('id')!r} is not in {pairs_path}",
                            stage="usage")
        gold = {"head": {"vars": list(ans.get("vars") or [])}, "results": {"bindings": list(ans.get("rows") or [])}}
        q = TrainQuestion(str(ans["id"]), kg, str(pair["question"]), str(pair.get("query") or ""), gold)
        if keep_trivial or not q.trivial:
            out[kg].append(q)
    return out


def _answers(path: Path) -> Iterator[tuple[int, JsonObject]]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield lineno, json.loads(line)
            except ValueError as e:
                raise KBQAError(f"{path}:{lineno}: not JSON: {e}", stage="usage") from None


def ensure_store(folder: str | Path, kg: str, work: str | Path) -> Path:
    """The store of one train KG under `work/stores/`, ingested from its dump the first time."""
    from kb_dumps.ingest import ingest
    from kb_dumps.layout import StoreLayout

    store_dir = Path(work) / "stores" / kg
    if not StoreLayout.of(store_dir).exists():
        ingest([Path(folder) / f"{kg}.nt.gz"], store_dir, profile="generic", progress=False)
    return store_dir
