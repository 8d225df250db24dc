"""`ask`: question -> translator -> front-end text -> `Engine.compile`, with the translation step in the report."""

from __future__ import annotations

import time
from typing import Any

from assembler.report import Step
from kb_dumps.errors import KBQAError
from kbqa.models.base import TranslationResult, Translator


def translation_detail(tr: TranslationResult) -> str:
    """One line for the step report: who translated, tokens, and what the translator based it on."""
    who = tr.backend + (f" ({tr.model})" if tr.model else "")
    parts = [who, f"{tr.tokens_in} tokens in, {tr.tokens_out} out"]
    if tr.details.get("case"):
        parts.append(f"case {tr.details['case']} (similarity {tr.details.get('similarity', 0):.2f}): "
                     f"{tr.details.get('case_question', '')!r}")
    fills = tr.details.get("fills") or {}
    for slot, f in fills.items():
        parts.append(f"[{slot}] <- {f.get('mention')!r} = {f.get('uri')}" + ("" if f.get("kb") in (None, True)
                                                                               else " (not confirmed by the KB)"))
    return "; ".join(parts)


def ask(engine: Any, question: str, translator: Translator, frontend: str = "desq", *, qid: str | None = None
        ) -> Any:
    """Translate `question`, then compile and run the text on the engine's store. Never raises for a failed
    translation: the Result's first step is `translate`, failed with the reason (stage translate)."""
    from kbqa.pipeline import Result

    t0 = time.perf_counter()
    try:
        tr = translator.translate(question, frontend, qid=qid)
    except KBQAError as e:
        result = Result(frontend=frontend, question=question, status="error", failed_stage="translate")
        errors = [err if err.stage == "translate" else _as_translate(err) for err in e.errors]
        result.steps.append(Step("translate", False, time.perf_counter() - t0, translator.name, errors))
        result.errors = errors
        result.seconds = time.perf_counter() - t0
        return result
    if getattr(engine, "translator", None) is None:
        engine.translator = translator  # QCompiler leaves and PyRAG sub-questions use it too
    from kbqa.repair import compile_with_repair

    result = compile_with_repair(engine, question, tr, translator, frontend,
                                 rounds=getattr(engine, "repair_rounds", 2), qid=qid)
    result.question = question
    result.steps.insert(0, Step("translate", True, tr.seconds, translation_detail(tr)))
    result.seconds = time.perf_counter() - t0  # translation included
    if hasattr(result, "translation"):
        result.translation = tr.to_dict()
    return result


def _as_translate(err: Any) -> Any:
    from kb_dumps.errors import ErrorInfo

    return ErrorInfo("translate", err.message, err.file, err.line, err.column, err.qid, err.ac)
