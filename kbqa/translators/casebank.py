"""The case bank: solved training questions (question, DeSQ target, entity slots), embedded and searched with hnswlib.

Stored next to the store in `<store>/current/cases/` as plain data, never pickle:
  cases.jsonl        one Case per line
  vectors.hnsw       hnswlib cosine index over the *masked* questions (entity mentions replaced by a
                     neutral word, so neighbours share structure, not entities); label = line number
  mention_prior.json the mention prior learned from the same questions (kbqa/translators/mentions.py)
  meta.json          model, sets, exclusions, counts (written last: a half-built bank is not used)
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import hnswlib
import numpy as np

from grounding.embedder import DEFAULT_MODEL, Embedder, get_embedder
from grounding.text import normalize
from kb_dumps.dict_records import DictRecord
from kb_dumps.json_types import JsonObject
from kb_dumps.layout import StoreLayout
from kbqa.translators.base import TranslateError
from kbqa.translators.mentions import MentionPrior

BANK_FORMAT = 1
NEUTRAL = "something"
_M, _EF_CONSTRUCTION, _EF_SEARCH = 16, 200, 128


@dataclass
class Slot(DictRecord):
    """An entity or class placeholder of a case: its gold id, and where the question mentions it."""

    name: str
    kind: str
    uri: str | None
    label: str = ""
    span: list[int] | None = None  # [start, end) in the question; None when the question does not name it
    # Re-filled from the new question's mentions: slots the question names, and entities with no label in
    # the store (the question surely names them, we cannot see where). Others (`male` in "brother") are
    # part of the structure and kept.
    refill: bool = False

    @property
    def refillable(self) -> bool:
        return self.refill

    @property
    def position(self) -> int:
        return self.span[0] if self.span else 1 << 30


@dataclass
class Check(DictRecord):
    """A triple the KB must have for a slot's entity: `slot` in `position` (subject|object) of `property`."""

    slot: str
    property: str
    position: str


@dataclass
class Case(DictRecord):
    """One solved question: its text, the targets per front-end, its slots, and its structure signature."""

    id: str
    dataset: str
    qid: str
    question: str
    lang: str
    masked: str
    targets: dict[str, str]  # front-end -> text ("desq" always; "qcompiler", "pyrag" when derivable)
    slots: list[Slot] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    signature: str = ""

    @property
    def desq(self) -> str:
        return self.targets["desq"]

    @classmethod
    def from_dict(cls, d: dict) -> Case:
        d = dict(d)
        d["slots"] = [Slot(**s) for s in d.get("slots", [])]
        d["checks"] = [Check(**c) for c in d.get("checks", [])]
        return cls(**d)


def bank_dir(store_dir: str | Path) -> Path:
    return StoreLayout.of(store_dir).current / "cases"


def question_key(text: str) -> str:
    """What "the same question" means for exclusion: normalised text."""
    return normalize(text)


@dataclass
class Hit:
    case: Case
    similarity: float


class CaseBank:
    """Cases plus their vector index. Load with `CaseBank.load(dir)`; build with `casebank_build.build_case_bank`."""

    def __init__(self, cases: list[Case], index: hnswlib.Index | None, meta: JsonObject,
                 prior: MentionPrior | None = None, folder: Path | None = None):
        self.cases = cases
        self.index = index
        self.meta = meta
        self.prior = prior or MentionPrior()
        self.folder = folder
        self._embedder: Embedder | None = None

    def __len__(self) -> int:
        return len(self.cases)

    @property
    def model(self) -> str:
        return str(self.meta.get("model", DEFAULT_MODEL))

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            emb = get_embedder(self.model)  # the process-wide copy grounding uses too
            built = self.meta.get("fingerprint")
            if built and built != emb.fingerprint:  # vectors of another model version are not comparable
                raise TranslateError(f"the case bank in {self.folder} was built with another version of {emb.name} "
                                     f"({built}, this one is {emb.fingerprint}); run `kbqa cases build`")
            self._embedder = emb
        return self._embedder

    # ---- persistence ---------------------------------------------------------------------
    @staticmethod
    def exists(folder: Path) -> bool:
        return (folder / "meta.json").is_file()

    @classmethod
    def load(cls, folder: str | Path) -> CaseBank:
        folder = Path(folder)
        if not cls.exists(folder):
            raise TranslateError(f"no case bank in {folder}; build one with `kbqa cases build --store STORE`",
                                 file=str(folder))
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        if meta.get("format") != BANK_FORMAT:
            raise TranslateError(f"the case bank in {folder} has format {meta.get('format')}, this version reads "
                                 f"{BANK_FORMAT}; rebuild it with `kbqa cases build`", file=str(folder))
        cases = []
        with open(folder / "cases.jsonl", encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    cases.append(Case.from_dict(json.loads(line)))
        index = None
        if cases:
            index = hnswlib.Index(space="cosine", dim=int(meta["dim"]))
            index.load_index(str(folder / "vectors.hnsw"), max_elements=len(cases))
            index.set_ef(_EF_SEARCH)
        return cls(cases, index, meta, MentionPrior.load(folder / "mention_prior.json"), folder)

    def save(self, folder: Path, vectors: np.ndarray) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        meta_path = folder / "meta.json"
        if meta_path.exists():
            meta_path.unlink()  # the bank is invalid until meta.json is written again
        with open(folder / "cases.jsonl", "w", encoding="utf-8") as f:
            for c in self.cases:
                f.write(json.dumps(c.to_dict(), ensure_ascii=False) + "\n")
        if len(self.cases):
            index = hnswlib.Index(space="cosine", dim=vectors.shape[1])
            index.init_index(max_elements=len(self.cases), ef_construction=_EF_CONSTRUCTION, M=_M)
            index.add_items(vectors, np.arange(len(self.cases), dtype=np.int64))
            index.set_ef(_EF_SEARCH)
            index.save_index(str(folder / "vectors.hnsw"))
            self.index = index
        self.prior.save(folder / "mention_prior.json")
        tmp = folder / "meta.json.tmp"
        tmp.write_text(json.dumps(self.meta, indent=1, ensure_ascii=False), encoding="utf-8")
        tmp.replace(meta_path)
        self.folder = folder

    # ---- search ---------------------------------------------------------------------------
    def encode(self, texts: list[str]) -> np.ndarray:
        return self.embedder.encode(texts, progress=False)

    def search_vector(self, vector: np.ndarray, k: int = 20, exclude_ids: set[str] | None = None,
                      exclude_questions: set[str] | None = None) -> list[Hit]:
        """Nearest cases to a unit vector, best first; excluded ids / question keys are skipped."""
        if self.index is None or not self.cases:
            return []
        skip = bool(exclude_ids or exclude_questions)
        n = min(len(self.cases), k * 2 if skip else k)
        while True:  # a whole excluded set (the one being scored) may crowd the nearest cases: widen until k
            labels, dists = self.index.knn_query(vector.reshape(1, -1), k=n)
            hits = []
            for lab, dist in zip(labels[0].tolist(), dists[0].tolist(), strict=True):
                case = self.cases[lab]
                if exclude_ids and (case.id in exclude_ids or f"{case.dataset}:{case.qid}" in exclude_ids):
                    continue
                if exclude_questions and question_key(case.question) in exclude_questions:
                    continue
                hits.append(Hit(case, 1.0 - float(dist)))
            if len(hits) >= k or n >= len(self.cases):
                return hits[:k]
            n = min(len(self.cases), n * 4)

    def search(self, question: str, k: int = 20, **kw: set[str] | None) -> list[Hit]:
        """Nearest cases to a (masked or plain) question text."""
        return self.search_vector(self.encode([question])[0], k, **kw)

    def datasets(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.cases:
            out[c.dataset] = out.get(c.dataset, 0) + 1
        return out


def slot_pattern(label: str) -> re.Pattern[str]:
    """A case-insensitive whole-word pattern for a label inside an AC sentence (to re-label it)."""
    return re.compile(r"(?<!\w)" + re.escape(label) + r"(?!\w)", re.I)


