"""The `structure` translator: the question's own query structure, learned from the Wikidata train sets.

For a question whose facts the store may not hold (a sample store standing in for Wikidata), it writes the query a
Wikidata benchmark expects: the skeleton the fitted chooser picks, its entity slots from the question's mentions
(the store's label memory), its property slots from the fitted scorer, its literals from the question. Output is
DeSQ with concrete Wikidata ids (no placeholder to ground); the step report (`details`) names the skeleton, why, and
each slot's top alternatives. `structured_answer` is the same as a plain function, for other translators' fallbacks.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from kb_dumps.label_memory import LabelMemory
from kb_dumps.layout import StoreLayout
from kbqa.translators.base import TranslateError, TranslationResult, Translator
from kbqa.translators.mentions import MentionDetector, open_lexicon
from kbqa.translators.structure.answer import MODEL_PATH, StructuredAnswer, StructureModel, to_desq

if TYPE_CHECKING:
    from kb_dumps.store_types import Store
    from kbqa.settings import TranslatorSettings

_MODELS: dict[str, StructureModel] = {}
_LOCK = threading.Lock()


def load_model(path: str | Path = MODEL_PATH) -> StructureModel:
    """The fitted model at `path`, loaded once per process."""
    key = str(Path(path).resolve())
    with _LOCK:
        if key not in _MODELS:
            if not Path(path).is_file():
                raise TranslateError(f"no structure model at {path}; fit one with `python -m "
                                     "kbqa.training.structure_fit`")
            _MODELS[key] = StructureModel.load(path)
        return _MODELS[key]


class StructureTranslator(Translator):
    """Question -> DeSQ from the learned skeleton and slots (see the module docstring)."""

    name = "structure"
    frontends = ("desq",)

    def __init__(self, store_dir: str | Path, *, memory: LabelMemory | None = None,
                 model: StructureModel | None = None, model_path: str | Path = MODEL_PATH):
        layout = StoreLayout.of(store_dir)
        self._own_memory = memory is None
        self.memory = memory if memory is not None else LabelMemory(layout.labels, readonly=True)
        self.model = model or load_model(model_path)
        self.detector = MentionDetector(open_lexicon(store_dir), self.memory, self.model.mention_prior,
                                        fuzzy_beside_exact=True)

    def answer(self, question: str) -> StructuredAnswer:
        return self.model.answer(question, self.detector)

    def translate(self, question: str, frontend: str = "desq", *, qid: str | None = None) -> TranslationResult:
        self.check_frontend(frontend)
        t0 = time.perf_counter()
        question = " ".join((question or "").split())
        if not question:
            raise TranslateError("the question is empty", qid=qid)
        ans = self.answer(question)
        if ans.sparql is None:
            missing = [s.name for s in ans.slots if s.value is None]
            raise TranslateError(f"the learned structure {ans.skeleton!r} has slots the question does not fill: "
                                 f"{', '.join(missing)}", qid=qid)
        text = to_desq(ans.sparql, question, ans)
        return TranslationResult(text, frontend, self.name, "structure-model/1", 0, 0, time.perf_counter() - t0,
                                 {"structure": ans.to_dict()})

    def close(self) -> None:
        if self._own_memory:
            self.memory.close()


_TRANSLATORS: dict[str, StructureTranslator] = {}


def structured_answer(question: str, store_dir: str | Path, *, memory: LabelMemory | None = None) -> StructuredAnswer:
    """The learned structure's query for `question` with its confidence (0..1) and evidence; never raises for a
    question it cannot fill (then `sparql` is None and `confidence` 0). One translator per store per process."""
    key = str(Path(store_dir).resolve())
    with _LOCK:
        tr = _TRANSLATORS.get(key)
    if tr is None:
        tr = StructureTranslator(store_dir, memory=memory)
        with _LOCK:
            _TRANSLATORS.setdefault(key, tr)
    return tr.answer(question)


def make(settings: TranslatorSettings, store_dir: str | Path | None, *, store: Store | None = None,
         memory: LabelMemory | None = None) -> StructureTranslator:
    """The `structure` entry of `kbqa.translators.TRANSLATORS`."""
    if store_dir is None:
        raise TranslateError("the structure translator needs a store (its label memory names the entities): "
                             "give --store DIR, or choose another --backend")
    return StructureTranslator(store_dir, memory=memory)
