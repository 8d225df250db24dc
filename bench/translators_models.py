"""Model translators on SimpleQuestions-Wikidata valid @ wikidata-mini: parse rate, query F1, answer F1, s/question,
tokens in/out. Every model output is appended to a replay JSONL (committed under bench/replays/), so a run
resumes where it stopped and later changes to parsing/grounding/assembly are re-scored without the model.

  python -m bench.translators_models --backend llama-cpp --model qwen2.5-coder-0.5b --n 30
  python -m bench.translators_models --backend llama-cpp --model qwen2.5-coder-1.5b --n 10
  python -m bench.translators_models --backend hf --model smollm2-135m --adapter adapters/smol --n 20 --few-shot 0
  python -m bench.translators_models --replay bench/replays/sq-valid.qwen2.5-coder-0.5b.jsonl   (re-score only)

Few-shot examples come from the store's case bank, built from the training sets only (never
SimpleQuestions valid), and the scored question is excluded from retrieval by its text as well.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.outputs import report_run
from bench.translators import answer_scores, ensure_store, guessed_sparql
from eval.loaders import load_benchmark
from eval.loaders_sparql import prepare_gold_sparql
from eval.query_metrics import score_query
from kb_dumps.stage_errors import KBQAError
from kbqa.frontends.desq import parse_desq
from kbqa.translators.casebank import CaseBank, bank_dir, question_key
from kbqa.translators.model import ModelTranslator
from kbqa.translators.replay import ReplayTranslator

ROOT = Path(__file__).resolve().parents[1]
SCORED_SET = "simplequestions-valid"


class HeldOutTranslator(ModelTranslator):
    """A ModelTranslator whose few-shot retrieval never returns the question being scored."""

    def examples(self, question: str, frontend: str) -> list[tuple[str, str]]:
        if self.bank is None or not len(self.bank) or self.few_shot_k <= 0:
            return []
        hits = self.bank.search(question, self.few_shot_k, exclude_questions={question_key(question)})
        return [(h.case.question, h.case.targets[frontend]) for h in hits if frontend in h.case.targets]


def make_model_translator(args: argparse.Namespace, bank: CaseBank | None) -> ModelTranslator:
    if args.backend == "llama-cpp":
        from kbqa.backends.llama_cpp import LlamaCppBackend

        backend: Any = LlamaCppBackend(args.model, n_ctx=args.n_ctx, n_threads=args.threads)
    else:
        from kbqa.backends.hf import HFBackend
        from kbqa.training.train import TRAIN_SYSTEM

        # --train-layout: a base model gets the adapter's prompt (short system text, zero-shot) for a fair comparison
        backend = HFBackend(args.model, adapter=args.adapter, threads=args.threads,
                            system=TRAIN_SYSTEM if args.train_layout else None)
    return HeldOutTranslator(backend, bank=bank, few_shot_k=args.few_shot, max_tokens=args.max_tokens,
                             use_grammar=not args.no_grammar)


def score_row(rec: Any, item: dict, engine: Any, store: Any, kb: str) -> dict:
    """One question scored from its recorded output (parse, query F1 guessed and assembled, answer F1)."""
    text = item["output"]
    row: dict[str, Any] = {"id": rec.id, "question": rec.question, "seconds": item.get("seconds", 0.0),
                           "tokens_in": item.get("tokens_in", 0), "tokens_out": item.get("tokens_out", 0),
                           "finish_reason": item.get("finish_reason")}
    if item.get("error"):
        row.update(error=item["error"], parsed=False, query_f1=0.0, query_f1_assembled=0.0, answer_f1=0.0,
                   stage="translate")
        return row
    parsed = parse_desq(text)
    row["parsed"] = parsed.ok
    row["parse_stage_errors"] = sum(e.stage == "parse" for e in parsed.errors)
    gold = prepare_gold_sparql(rec.sparql, kb=kb, check_syntax=False).sparql or rec.sparql or ""
    qs = score_query(guessed_sparql(text, kb), gold, kb)
    row["query_f1"] = qs.triples.f1 if qs.error is None else 0.0
    res = engine.compile(text, execute=True)
    qa = score_query(res.sparql, gold, kb) if res.sparql else None
    row["query_f1_assembled"] = qa.triples.f1 if qa is not None and qa.error is None else 0.0
    row.update(answer_scores(rec, res, gold, store, kb))
    return row


def summarize(label: str, rows: list[dict]) -> dict:
    n = len(rows)
    mean = (lambda key: sum(r.get(key, 0) or 0 for r in rows) / n) if n else (lambda key: 0.0)
    secs = [r["seconds"] for r in rows] or [0.0]
    return {"run": label, "questions": n, "parse_rate": mean("parsed"),
            "query_f1_guessed_uris": mean("query_f1"), "query_f1_assembled": mean("query_f1_assembled"),
            "answer_f1": mean("answer_f1"), "answer_f1_strict": mean("answer_f1_strict"),
            "s_per_question_mean": statistics.mean(secs), "s_per_question_median": statistics.median(secs),
            "tokens_in_mean": mean("tokens_in"), "tokens_out_mean": mean("tokens_out"),
            "finish": dict(Counter(str(r.get("finish_reason")) for r in rows)),
            "failed_stage": dict(Counter(str(r.get("stage")) for r in rows))}


def load_replay(path: Path) -> dict[str, dict]:
    if not path.is_file():
        return {}
    return ReplayTranslator(path).by_id if path.stat().st_size else {}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=["llama-cpp", "hf"], default="llama-cpp")
    p.add_argument("--model", default="qwen2.5-coder-0.5b", help="registered name, GGUF path or checkpoint")
    p.add_argument("--adapter", default=None, help="hf: a LoRA adapter folder (kbqa train)")
    p.add_argument("--n", type=int, default=30, help="questions (the first N usable of SimpleQuestions valid)")
    p.add_argument("--offset", type=int, default=0, help="skip the first K usable questions")
    p.add_argument("--few-shot", type=int, default=4, help="few-shot cases from the bank (default 4)")
    p.add_argument("--max-tokens", type=int, default=400)
    p.add_argument("--n-ctx", type=int, default=4096)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--no-grammar", action="store_true", help="ablation: unconstrained decoding")
    p.add_argument("--train-layout", action="store_true",
                   help="hf: prompt a base model the way `kbqa train` prompts (to compare base vs adapter)")
    p.add_argument("--wd-store", type=Path, default=ROOT / ".kbqa" / "stores" / "wikidata-mini")
    p.add_argument("--replay", type=Path, default=None,
                   help="replay JSONL (default bench/replays/sq-valid.<model>[.<adapter>].jsonl); with no "
                        "--model given explicitly and an existing file, only re-scores")
    p.add_argument("--rescore", action="store_true", help="score what the replay holds; never run the model")
    p.add_argument("--out", type=Path, default=None, help="write the summary and rows as JSON")
    args = p.parse_args()

    label = Path(args.model).name + (f".{Path(args.adapter).name}" if args.adapter else "")
    label += f".k{args.few_shot}" + (".nogrammar" if args.no_grammar else "") + (".trainlayout" if args.train_layout
                                                                                else "")
    replay = args.replay or ROOT / "bench" / "replays" / f"sq-valid.{label}.jsonl"
    store_dir = ensure_store(args.wd_store, "wikidata-mini")
    records = [r for r in load_benchmark(SCORED_SET, check_syntax=False) if r.usable][args.offset:args.offset + args.n]
    done = load_replay(replay)
    todo = [r for r in records if r.id not in done]
    if todo and not args.rescore:
        folder = bank_dir(store_dir)
        bank = CaseBank.load(folder) if args.few_shot and CaseBank.exists(folder) else None
        if bank is not None:
            assert SCORED_SET not in bank.datasets(), "the case bank holds the scored set"
        translator = make_model_translator(args, bank)
        replay.parent.mkdir(parents=True, exist_ok=True)
        with open(replay, "a", encoding="utf-8") as f:
            for i, rec in enumerate(todo, 1):
                t0 = time.perf_counter()
                try:
                    tr = translator.translate(rec.question, qid=rec.id)
                except KBQAError as e:
                    item = {"id": rec.id, "question": rec.question, "output": "", "error": str(e),
                            "seconds": time.perf_counter() - t0}
                    f.write(json.dumps(item, ensure_ascii=False) + "\n")
                else:
                    # the replay reader's fields, plus how generation ended and which cases were shown
                    f.write(json.dumps({"id": rec.id, "question": rec.question, "output": tr.text,
                                        "frontend": tr.frontend, "model": tr.model, "backend": tr.backend,
                                        "tokens_in": tr.tokens_in, "tokens_out": tr.tokens_out,
                                        "seconds": round(tr.seconds, 3),
                                        "finish_reason": tr.details.get("finish_reason"),
                                        "examples": tr.details.get("examples", [])}, ensure_ascii=False) + "\n")
                f.flush()
                print(f"[{i}/{len(todo)}] {rec.id} {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        translator.close()
        done = load_replay(replay)

    from kb_dumps.layout import StoreLayout
    from kb_dumps.store import LocalStore
    from kbqa.pipeline import Engine

    kb = StoreLayout.of(store_dir).profile_name
    rows = []
    with LocalStore(store_dir) as store, Engine(store=store_dir) as engine:
        for rec in records:
            if rec.id in done:
                rows.append(score_row(rec, done[rec.id], engine, store, kb))
    summary = summarize(f"{args.backend}:{label} @ {SCORED_SET}/wikidata-mini", rows)
    summary["replay"] = str(replay.relative_to(ROOT) if replay.is_relative_to(ROOT) else replay)
    report_run("bench.translators_models", summary, rows, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
