"""DeSQ vs QCompiler vs PyRAG with the same model and store, on multi-hop / comparison questions (issue 8).

    python -m bench.frontends --model qwen2.5-coder-0.5b --per-set 4 --store .kbqa/stores/wikidata-mini \\
        --out bench/results/frontends.qwen0.5b.json
    python -m bench.frontends --model qwen2.5-coder-0.5b --rescore      (re-score the recorded outputs, no model)

Questions: the first `--per-set` usable questions of LC-QuAD 2.0 dev, WikiWebQuestions dev and QALD-9-plus
train whose gold SPARQL has two or more hops (a variable other than the answer links two triple patterns)
or a comparison (FILTER with < > <= >=, or ORDER BY). Each question goes through `Engine.ask` once per
front-end with the same model backend and repair rounds; every model call (the expression / program,
each leaf or sub-question, each repair) is counted and recorded in a replay JSONL, so the run resumes
and later changes to parsing/grounding/assembly are re-scored without the model.

Few-shot examples: DeSQ from the store's case bank (the scored question excluded by its text);
QCompiler expressions and PyRAG programs from the hand-written multi-hop fixtures
(tests/fixtures/multihop, questions over wikidata-mini/bestiary, none of them scored here).
Answer F1 is reported only on questions whose gold query returns something on the store
(wikidata-mini holds the facts of few of these questions); query F1 (triple patterns of the assembled
query vs the gold) on all.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.outputs import report_run
from eval.answer_metrics import score_question
from eval.loaders import load_benchmark
from eval.loaders_sparql import prepare_gold_sparql
from eval.query_metrics import normalise_query, score_query
from kb_dumps.stage_errors import KBQAError
from kbqa.translators.base import TranslationResult, Translator
from kbqa.translators.casebank import CaseBank, bank_dir, question_key

ROOT = Path(__file__).resolve().parents[1]
SETS = ("lcquad2-dev", "wwq-dev", "qald9plus-train")
FRONTENDS = ("desq", "qcompiler", "pyrag")
FIXTURES = ROOT / "tests" / "fixtures" / "multihop" / "cases.json"


# ---- question selection ----------------------------------------------------------------------------
def shape(sparql: str, kb: str) -> str | None:
    """'multihop', 'comparison' or None (one hop, or a query that does not normalise)."""
    n = normalise_query(sparql, kb)
    if not hasattr(n, "triples"):
        return None
    if any(op in n.canonical for op in ("op='<'", "op='>'", "op='<='", "op='>='", "OrderBy(")):
        return "comparison"
    uses: dict[str, set[int]] = defaultdict(set)
    for i, (s, _p, o) in enumerate(n.triples):
        for t in (s, o):
            if t.startswith("?") and t != "?v0":
                uses[t].add(i)
    return "multihop" if any(len(v) >= 2 for v in uses.values()) else None


def select(per_set: int, kb: str) -> list[tuple[str, Any, str, str]]:
    """(set, record, gold SPARQL, shape) for the first `per_set` qualifying usable questions of each set."""
    out = []
    for name in SETS:
        k = 0
        for rec in load_benchmark(name, check_syntax=False):
            if k >= per_set:
                break
            if not rec.usable or not rec.sparql:
                continue
            gold = prepare_gold_sparql(rec.sparql, kb=kb, check_syntax=False).sparql or rec.sparql
            kind = shape(gold, kb)
            if kind:
                out.append((name, rec, gold, kind))
                k += 1
    return out


# ---- a translator that counts and records every model call ------------------------------------------
class RecordingTranslator(Translator):
    """Wraps a model translator (or replays recorded outputs): every `translate` call — first output, leaf,
    sub-question, repair — is counted and appended to `calls` in order."""

    def __init__(self, inner: Any = None, recorded: list[dict] | None = None):
        self.inner = inner
        self.name = getattr(inner, "name", "replay")
        self.frontends = FRONTENDS
        self.recorded = list(recorded or [])
        self._used: set[int] = set()
        self.calls: list[dict] = []

    def translate(self, question: str, frontend: str = "desq", *, qid: str | None = None,
                  previous: str | None = None, errors: list[str] | None = None) -> TranslationResult:
        if self.inner is None:
            # replay: the next unused recorded call for the same text, front-end and kind (first output or
            # repair); independent QCompiler leaves are translated concurrently, so calls to different
            # leaves may come in another order than recorded, but each leaf's own calls keep theirs
            repair = previous is not None
            for i, rec in enumerate(self.recorded):
                if (i not in self._used and rec["question"] == question and rec["frontend"] == frontend
                        and bool(rec.get("repair")) == repair):
                    self._used.add(i)
                    break
            else:
                raise KBQAError(f"the replay has no recorded {'repair' if repair else 'call'} for {frontend}:"
                                f"{question!r}", stage="translate")
            self.calls.append(rec)
            if rec.get("error"):
                raise KBQAError(rec["error"], stage="translate")
            return TranslationResult(rec["output"], frontend, "replay", rec.get("model", ""), rec["tokens_in"],
                                     rec["tokens_out"], rec["seconds"], {"repair": previous is not None})
        t0 = time.perf_counter()
        try:
            tr = self.inner.translate(question, frontend, qid=qid, previous=previous, errors=errors)
        except KBQAError as e:
            self.calls.append({"question": question, "frontend": frontend, "repair": previous is not None,
                               "output": "", "error": str(e), "tokens_in": 0, "tokens_out": 0,
                               "seconds": time.perf_counter() - t0})
            raise
        self.calls.append({"question": question, "frontend": frontend, "repair": previous is not None,
                           "output": tr.text, "model": tr.model, "tokens_in": tr.tokens_in,
                           "tokens_out": tr.tokens_out, "seconds": round(tr.seconds, 3)})
        return tr

    def close(self) -> None:
        if self.inner is not None:
            self.inner.close()


def make_model_translator(args: argparse.Namespace, bank: CaseBank | None) -> Any:
    from kbqa.backends.llama_cpp import LlamaCppBackend
    from kbqa.translators.model import ModelTranslator

    fixtures = json.loads(FIXTURES.read_text(encoding="utf-8"))["cases"]
    shots = {"qcompiler": [(c["question"], c["expression"]) for c in fixtures if c.get("expression")],
             "pyrag": [(c["question"], c["program"]) for c in fixtures if c.get("program")
                       and c["program"].strip().splitlines()[-1].startswith("final_answer")]}

    class BenchTranslator(ModelTranslator):
        def examples(self, question: str, frontend: str) -> list[tuple[str, str]]:
            if frontend in shots:  # most similar first: the fixtures nearest by word overlap
                words = set(question.lower().split())
                ranked = sorted(shots[frontend], key=lambda qa: -len(words & set(qa[0].lower().split())))
                return ranked[:args.few_shot]
            if bank is None or not len(bank):
                return []
            hits = bank.search(question, args.few_shot, exclude_questions=self.exclude_questions)
            return [(h.case.question, h.case.targets["desq"]) for h in hits if "desq" in h.case.targets]

    backend = LlamaCppBackend(args.model, n_ctx=args.n_ctx, n_threads=args.threads)
    return BenchTranslator(backend, bank=bank, few_shot_k=args.few_shot, max_tokens=args.max_tokens)


# ---- scoring ---------------------------------------------------------------------------------------------
def score(result: Any, gold: str, gold_answers: dict | None, kb: str) -> dict:
    qs = score_query(result.sparql, gold, kb) if result.sparql else None
    row = {"status": result.status, "failed_stage": result.failed_stage,
           "query_f1": qs.triples.f1 if qs is not None and qs.error is None else 0.0,
           "exact": bool(qs is not None and qs.error is None and qs.exact_match),
           "repair_rounds": max(0, len((result.repairs or {}).get("rounds", [])) - 1) if result.repairs else 0}
    if gold_answers is not None:
        pred = result.answers.to_result_dict() if result.answers is not None else None
        ans = score_question(gold_answers, pred, gold_sparql=gold, pred_sparql=result.sparql, kb=kb)
        row["answer_f1"] = ans.qald.f1
    return row


def summarize(rows: list[dict]) -> dict:
    out = {}
    for fe in FRONTENDS:
        rs = [r for r in rows if r["frontend"] == fe]
        if not rs:
            continue
        ans = [r["answer_f1"] for r in rs if "answer_f1" in r]
        mean = (lambda key, rs=rs: sum(r[key] for r in rs) / len(rs))  # noqa: E731
        out[fe] = {"questions": len(rs), "query_f1": mean("query_f1"), "exact": mean("exact"),
                   "ran": sum(r["status"] in ("ok", "empty") for r in rs) / len(rs),  # a query was run
                   "answer_f1": (sum(ans) / len(ans)) if ans else None, "answerable": len(ans),
                   "calls_mean": mean("calls"), "tokens_in_mean": mean("tokens_in"),
                   "tokens_out_mean": mean("tokens_out"), "repair_rounds_mean": mean("repair_rounds"),
                   "s_per_question_median": statistics.median(r["model_seconds"] for r in rs),
                   "failed_stage": {s: sum(str(r["failed_stage"]) == s for r in rs)
                                    for s in sorted({str(r["failed_stage"]) for r in rs})}}
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="qwen2.5-coder-0.5b", help="registered GGUF name or path (llama-cpp)")
    p.add_argument("--per-set", type=int, default=4, help="questions per set (default 4)")
    p.add_argument("--frontends", nargs="+", default=list(FRONTENDS), choices=FRONTENDS)
    p.add_argument("--few-shot", type=int, default=3)
    p.add_argument("--max-tokens", type=int, default=400)
    p.add_argument("--n-ctx", type=int, default=4096)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repair-rounds", type=int, default=2)
    p.add_argument("--store", type=Path, default=ROOT / ".kbqa" / "stores" / "wikidata-mini")
    p.add_argument("--replay", type=Path, default=None, help="default bench/replays/frontends.<model>.jsonl")
    p.add_argument("--rescore", action="store_true", help="only re-score what the replay holds")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()

    from kb_dumps.layout import StoreLayout
    from kb_dumps.store import LocalStore
    from kbqa.pipeline import Engine

    kb = StoreLayout.of(args.store).profile_name
    replay = args.replay or ROOT / "bench" / "replays" / f"frontends.{Path(args.model).name}.jsonl"
    done: dict[tuple[str, str], list[dict]] = {}
    if replay.is_file():
        for line in replay.read_text(encoding="utf-8").splitlines():
            if line.strip():
                d = json.loads(line)
                done[(d["id"], d["frontend"])] = d["calls"]
    questions = select(args.per_set, kb)
    print(f"{len(questions)} questions: " + ", ".join(f"{s}:{r.id} ({k})" for s, r, _, k in questions),
          file=sys.stderr)
    model_tr = None
    if not args.rescore and any((f"{s}:{r.id}", fe) not in done for s, r, _, _ in questions for fe in args.frontends):
        folder = bank_dir(args.store)
        bank = CaseBank.load(folder) if CaseBank.exists(folder) else None
        model_tr = make_model_translator(args, bank)
    rows = []
    with LocalStore(args.store, timeout_s=30) as store, \
            Engine(store=args.store, repair_rounds=args.repair_rounds) as engine:
        for i, (name, rec, gold, kind) in enumerate(questions, 1):
            try:
                gold_res = store.query(gold).to_dict()
                gold_answers = gold_res if (gold_res.get("rows") or gold_res.get("boolean") is not None) else None
            except KBQAError:
                gold_answers = None
            for fe in args.frontends:
                key = (f"{name}:{rec.id}", fe)
                if key in done:
                    rt = RecordingTranslator(recorded=done[key])
                elif model_tr is not None:
                    model_tr.exclude_questions = {question_key(rec.question)}
                    rt = RecordingTranslator(model_tr)
                else:
                    continue
                t0 = time.perf_counter()
                engine.translator = rt  # QCompiler leaves and PyRAG sub-questions go through it too
                result = engine.ask(rec.question, frontend=fe, qid=rec.id)
                if key not in done:
                    with open(replay, "a", encoding="utf-8") as f:
                        f.write(json.dumps({"id": key[0], "frontend": fe, "question": rec.question,
                                            "calls": rt.calls}, ensure_ascii=False) + "\n")
                row = {"id": key[0], "set": name, "shape": kind, "frontend": fe, "question": rec.question,
                       "calls": len(rt.calls), "tokens_in": sum(c["tokens_in"] for c in rt.calls),
                       "tokens_out": sum(c["tokens_out"] for c in rt.calls),
                       "model_seconds": sum(c["seconds"] for c in rt.calls), "sparql": result.sparql,
                       **score(result, gold, gold_answers, kb)}
                rows.append(row)
                print(f"[{i}/{len(questions)}] {key[0]} {fe}: {row['status']}/{row['failed_stage']} "
                      f"F1 {row['query_f1']:.2f} calls {row['calls']} ({time.perf_counter() - t0:.0f} s)",
                      file=sys.stderr)
    if model_tr is not None:
        model_tr.close()
    summary = summarize(rows)
    report_run("bench.frontends", summary, rows, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
