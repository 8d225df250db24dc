"""The `replay` translator: model outputs read from a JSONL (`id`, `output`), so any system is evaluated offline.

Each line: `{"id": "...", "output": "...", "question"?: "...", "frontend"?: "desq", "tokens_in"?: n,
"tokens_out"?: n, "seconds"?: s, "model"?: "..."}`. A question is found by its id; when no id is
given, by its exact question text (lines that carry one). Recorded token counts and timings are
reported as they were measured when the output was made.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from grounding.text import normalize
from kbqa.translators.base import TranslateError, TranslationResult, Translator

if TYPE_CHECKING:
    from kb_dumps.label_memory import LabelMemory
    from kb_dumps.store_types import Store
    from kbqa.settings import TranslatorSettings


class ReplayTranslator(Translator):
    name = "replay"
    frontends = None  # whatever the recorded outputs are written in

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.by_id: dict[str, dict] = {}
        self.by_question: dict[str, dict] = {}
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            raise TranslateError(f"replay file not found: {self.path}", file=str(self.path)) from None
        except (OSError, UnicodeDecodeError) as e:
            raise TranslateError(f"cannot read the replay file: {e}", file=str(self.path)) from None
        for lineno, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as e:
                raise TranslateError(f"not valid JSON: {e.msg}", file=str(self.path), line=lineno) from None
            if not isinstance(item, dict) or "id" not in item or not isinstance(item.get("output"), str):
                raise TranslateError('each line needs "id" and a string "output"', file=str(self.path), line=lineno)
            self.by_id[str(item["id"])] = item
            if isinstance(item.get("question"), str):
                self.by_question[normalize(item["question"])] = item

    def __len__(self) -> int:
        return len(self.by_id)

    def translate(self, question: str, frontend: str = "desq", *, qid: str | None = None) -> TranslationResult:
        self.check_frontend(frontend)
        item = self.by_id.get(str(qid)) if qid is not None else self.by_question.get(normalize(question or ""))
        if item is None:
            what = f"id {qid!r}" if qid is not None else f"question {question!r}"
            raise TranslateError(f"no recorded output for {what} in {self.path} ({len(self.by_id)} outputs); "
                                 "record one or give the id of a recorded question", qid=qid, file=str(self.path))
        recorded = item.get("frontend")
        if recorded and recorded != frontend:
            raise TranslateError(f"the output recorded for {item['id']!r} is {recorded}, not {frontend}", qid=qid,
                                 file=str(self.path))
        return TranslationResult(item["output"], frontend, self.name, str(item.get("model", "")),
                                 int(item.get("tokens_in", 0)), int(item.get("tokens_out", 0)),
                                 float(item.get("seconds", 0.0)), {"replay": str(self.path), "id": item["id"]})


def write_replay_line(f: TextIO, qid: str, question: str, result: TranslationResult) -> None:
    """Append one translation to an open replay JSONL (what `bench/` records for later re-scoring)."""
    f.write(json.dumps({"id": qid, "question": question, "output": result.text, "frontend": result.frontend,
                        "model": result.model, "backend": result.backend, "tokens_in": result.tokens_in,
                        "tokens_out": result.tokens_out, "seconds": round(result.seconds, 4)},
                       ensure_ascii=False) + "\n")


def make(settings: TranslatorSettings, store_dir: str | Path | None, *, store: Store | None = None,
         memory: LabelMemory | None = None) -> ReplayTranslator:
    """The `replay` entry of `kbqa.translators.TRANSLATORS` (it needs no store)."""
    if settings.replay_path is None:
        raise TranslateError("the replay translator needs a file: --replay FILE (or KBQA_REPLAY_PATH)", stage="usage")
    return ReplayTranslator(settings.replay_path)
