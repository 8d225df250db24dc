"""`kbqa train`: LoRA fine-tuning of a small causal LM on the case bank's (question, DeSQ) pairs, on the CPU;
`kbqa train --ranker`: the explore translator's ranker weights (plain JSON) from questions with gold answers."""

from __future__ import annotations

import argparse
from pathlib import Path

from kb_dumps.errors import EXIT_OK, KBQAError
from kbqa.commands.common import (
    add_format_flag,
    add_store_flag,
    integer,
    positive_float,
    print_json,
    resolve_store,
    subparser,
)

EXAMPLE = """kbqa models fetch smollm2-135m && kbqa cases build
  kbqa train --base smollm2-135m --out adapters/smol --max-steps 60
  kbqa train --base smollm2-135m --out adapters/smol --max-steps 120   (resumes at step 60)
  kbqa ask "..." --backend hf --model smollm2-135m --adapter adapters/smol
  kbqa train --ranker --set simplequestions-train@.kbqa/stores/wikidata-mini --questions 500
      (weights into the store: `kbqa ask --backend explore` there uses them)
  kbqa train --ranker --set spider4sparql-pets_1@kb/pets --set bestiary@kb/bestiary --out ranker.json
      (KBQA_EXPLORE_WEIGHTS=ranker.json makes every store use them)"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparser(subparsers, "train", "LoRA fine-tuning of a small model on case-bank pairs (question -> DeSQ)",
                  EXAMPLE)
    p.add_argument("--base", help="base model: a registered name (`kbqa models list`) or a checkpoint (LoRA)")
    p.add_argument("--out", type=Path, metavar="PATH", help="adapter folder (LoRA; resumed when it has a "
                   "checkpoint), or the ranker's weights file (--ranker; default: the store's ranker.json)")
    p.add_argument("--ranker", action="store_true",
                   help="fit the explore translator's ranker instead: listwise, from the answers of each question's "
                        "candidates against its gold answers, pulled toward the shipped weights")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="BENCHMARK@STORE",
                   help="--ranker: a benchmark (`kbqa eval --list`) and the store its questions are asked on; "
                        "repeatable. Never a set you will score on")
    p.add_argument("--questions", type=integer(1, None, "a number of questions"), default=None, metavar="N",
                   help="--ranker: at most N questions per set")
    add_store_flag(p)
    p.add_argument("--pairs", type=Path, default=None, metavar="FILE",
                   help="JSONL of {question, target} instead of the store's case bank")
    p.add_argument("--exclude-questions", type=Path, default=None, metavar="FILE",
                   help="questions to leave out (one per line): the dev questions you will score on")
    p.add_argument("--max-pairs", type=integer(1, None, "a number of pairs"), default=None,
                   help="use at most N pairs")
    p.add_argument("--max-steps", type=integer(1, None, "a number of steps"), default=60,
                   help="optimizer steps in all (default 60)")
    p.add_argument("--batch-size", type=integer(1, 65_536, "a batch size"), default=8)
    p.add_argument("--grad-accum", type=integer(1, 65_536, "a number of micro-batches"), default=1,
                   help="micro-batches per step")
    p.add_argument("--lr", type=positive_float(1.0, "a learning rate"), default=2e-4)
    p.add_argument("--lora-r", type=integer(1, 4096, "a LoRA rank"), default=16)
    p.add_argument("--max-len", type=integer(1, 1_000_000, "a length in tokens"), default=256,
                   help="tokens per example; longer ones are left out")
    p.add_argument("--threads", type=integer(1, 4096, "a number of threads"), default=None,
                   help="torch threads (default: all cores)")
    p.add_argument("--no-bf16", action="store_true", help="float32 even where the CPU has bf16")
    p.add_argument("--no-resume", action="store_true", help="start over even when --out has a checkpoint")
    p.add_argument("--save-every", type=integer(1, None, "a number of steps"), default=20,
                   help="checkpoint every N steps (default 20)")
    p.add_argument("--log-every", type=integer(1, None, "a number of steps"), default=5)
    add_format_flag(p)
    return p


def run(args: argparse.Namespace) -> int:
    if args.ranker:
        return _run_ranker(args)
    if not args.base or not args.out:
        raise KBQAError("LoRA training needs --base MODEL and --out DIR (or --ranker for the explore ranker)",
                        stage="usage")
    from kbqa.commands.cases import _lines
    from kbqa.training.train import TrainConfig, train

    store = None if args.pairs else str(resolve_store(args.store))
    cfg = TrainConfig(base=args.base, out=str(args.out), store=store,
                      pairs_file=str(args.pairs) if args.pairs else None, max_pairs=args.max_pairs,
                      exclude_questions=_lines(args.exclude_questions), max_steps=args.max_steps,
                      batch_size=args.batch_size, grad_accum=args.grad_accum, lr=args.lr, lora_r=args.lora_r,
                      lora_alpha=2 * args.lora_r, max_len=args.max_len, threads=args.threads,
                      bf16=False if args.no_bf16 else None, resume=not args.no_resume,
                      save_every=args.save_every, log_every=args.log_every)
    result = train(cfg)
    if args.format == "json":
        print_json(result.to_dict())
    else:
        print(f"adapter {result.adapter}: {result.steps} steps on {result.pairs} pairs ({result.dtype}), loss "
              f"{result.first_loss} -> {result.last_loss}, {result.steps_per_s:.3f} steps/s, "
              f"{result.tokens_per_step:.0f} tokens/step")
    return EXIT_OK


def _run_ranker(args: argparse.Namespace) -> int:
    from eval.loaders import load_benchmark
    from kb_dumps.layout import StoreLayout
    from kbqa.training.ranker import collect, evaluate, fit, save_weights
    from kbqa.translators.explore import ExploreTranslator
    from kbqa.translators.explore_rank import Ranker

    if not args.sets:
        raise KBQAError("--ranker needs at least one --set BENCHMARK@STORE (questions with gold answers, and the "
                        "store they are asked on)", stage="usage")
    questions = []
    stores = []
    for spec in args.sets:
        name, _, store = spec.partition("@")
        if not (store or args.store):
            raise KBQAError(f"--set {spec!r}: say the store, BENCHMARK@STORE (or give --store)", stage="usage")
        store_dir = resolve_store(store or args.store)
        records = [r for r in load_benchmark(name, check_syntax=False) if r.usable][:args.questions]
        tr = ExploreTranslator(store_dir)
        try:
            questions += collect(tr, records, name, progress=args.format != "json")
        finally:
            tr.close()
        stores.append(store_dir)
    ranker = fit(questions, meta={"sets": args.sets})
    out = args.out or (StoreLayout.of(stores[0]).current / "ranker.json")
    save_weights(ranker, out)
    before, after = evaluate(Ranker.load(), questions), evaluate(ranker, questions)
    report = {"weights": str(out), "questions": len(questions), "shipped": before, "fitted": after}
    if args.format == "json":
        print_json(report)
    else:
        print(f"ranker weights {out}: {len(questions)} questions; top-candidate answer F1 on them "
              f"{before['f1']:.3f} (shipped weights) -> {after['f1']:.3f} (fitted; best reachable {after['oracle']:.3f})")
    return EXIT_OK
