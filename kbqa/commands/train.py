"""`kbqa train`: LoRA fine-tuning of a small causal LM on the case bank's (question, DeSQ) pairs, on the CPU;
`kbqa train --ranker`: the explore translator's tree ranker (plain JSON) from train questions with gold answers."""

from __future__ import annotations

import argparse
from pathlib import Path

from kb_dumps.stage_errors import EXIT_OK, KBQAError
from kbqa.commands.common import (
    add_format_flag,
    add_store_flag,
    integer,
    positive_float,
    print_json,
    resolve_store,
    subparser,
)


def _weight(text: str) -> tuple[str, float]:
    """`--weight NAME=W`: a KG's or set's name and what each of its questions weighs (W > 0)."""
    name, eq, w = text.rpartition("=")
    try:
        value = float(w)
    except ValueError:
        value = -1.0
    if not (eq and name) or not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: write NAME=W with W a number above 0, e.g. "
                                         "simplequestions-train=5")
    return name, value


EXAMPLE = """kbqa models fetch smollm2-135m && kbqa cases build
  kbqa train --base smollm2-135m --out adapters/smol --max-steps 60
  kbqa train --base smollm2-135m --out adapters/smol --max-steps 120   (resumes at step 60)
  kbqa ask "..." --backend hf --model smollm2-135m --adapter adapters/smol
  kbqa train --ranker --train-kgs ../shared/data/spider4sparql/train_kgs --per-kg 20 --folds 5 --out ranker.json
      (fits the tree ranker on train KGs; KBQA_EXPLORE_WEIGHTS=ranker.json makes every store use it)
  kbqa train --ranker --set simplequestions-train@.kbqa/stores/wikidata-mini --questions 500
      (a ranker fitted on a store's own solved questions, into that store: there it wins over the shipped one)"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparser(subparsers, "train", "LoRA fine-tuning of a small model on case-bank pairs (question -> DeSQ)",
                  EXAMPLE)
    p.add_argument("--base", help="base model: a registered name (`kbqa models list`) or a checkpoint (LoRA)")
    p.add_argument("--out", type=Path, metavar="PATH", help="adapter folder (LoRA; resumed when it has a "
                   "checkpoint), or the ranker's weights file (--ranker; default: the store's ranker.json)")
    p.add_argument("--ranker", action="store_true",
                   help="fit the explore translator's ranker instead: gradient-boosted trees (LightGBM LambdaRank, "
                        "saved as plain JSON), from each train question's candidates labelled by their answers "
                        "against the gold answers")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="BENCHMARK@STORE",
                   help="--ranker: a benchmark (`kbqa eval --list`) and the store its questions are asked on; "
                        "repeatable. Never a set you will score on")
    p.add_argument("--questions", type=integer(1, None, "a number of questions"), default=None, metavar="N",
                   help="--ranker: at most N questions per --set")
    p.add_argument("--per-kg", type=integer(1, None, "a number of questions"), default=20, metavar="N",
                   help="--ranker --train-kgs: at most N questions per train KG (default 20)")
    p.add_argument("--budget", type=positive_float(60.0, "a time budget in seconds"), default=3.0, metavar="S",
                   help="--ranker: the explore search budget per train question while generating candidates "
                        "(default 3 s: a little more than at query time, so that a busy machine labels the same)")
    p.add_argument("--train-kgs", type=Path, default=None, metavar="DIR",
                   help="--ranker: a train-KG folder (<kg>.nt.gz dumps, train_answers.jsonl.gz, train.json in it or "
                        "beside it), e.g. Spider4SPARQL's 146 train KGs; each KG is ingested once under --work")
    p.add_argument("--work", type=Path, default=Path(".kbqa") / "train-kgs", metavar="DIR",
                   help="--ranker: where the train KGs' stores and the candidates file are kept (default "
                        ".kbqa/train-kgs); a rerun reuses them")
    p.add_argument("--candidates", type=Path, action="append", default=[], metavar="FILE",
                   help="--ranker: a candidates file (JSONL, kbqa/training/ranker_data.py) to fit on; written first "
                        "when missing or incomplete (default WORK/candidates.jsonl); repeatable to fit on several")
    p.add_argument("--folds", type=integer(0, 100, "a number of folds"), default=0, metavar="K",
                   help="--ranker: also report K-fold accuracy by KG (fit on the other folds' KGs) before fitting "
                        "on all (0: no report)")
    p.add_argument("--rounds", type=integer(1, 100_000, "a number of boosting rounds"), default=None,
                   help="--ranker: boosting rounds of the tree ranker (default: the fit's own, 500, chosen by 5-fold "
                        "by KG)")
    p.add_argument("--seeds", type=integer(1, 20, "a number of seeds"), default=None, metavar="N",
                   help="--ranker: fit N boosters that differ only in LightGBM's seed and average their scores "
                        "(default 1; 3 measured +0.3 points on the train KGs' 5-fold, BENCHMARKS.md)")
    p.add_argument("--prior-train", type=Path, default=None, metavar="FILE",
                   help="--ranker: the structure prior's train pairs (Spider4SPARQL train.json[.gz]; default the "
                        "bundled copy); the trees read the prior set out of fold by KG from them")
    p.add_argument("--kg-cap", type=integer(1, None, "a number of questions"), default=None, metavar="N",
                   help="--ranker: a KG's questions beyond N weigh together as N in the fit, so a few large KGs do "
                        "not decide what the trees learn (default: every question weighs 1)")
    p.add_argument("--weight", action="append", default=[], metavar="NAME=W", type=_weight,
                   help="--ranker: each question of the train KG or --set NAME weighs W in the fit (repeatable; "
                        "default 1). The shipped trees weigh simplequestions-train 5, chosen on SimpleQuestions train "
                        "questions no fit saw")
    p.add_argument("--no-prior", action="store_true",
                   help="--ranker: leave the structure prior out of the trees' features")
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
    """Candidates for train questions (train KGs and/or BENCHMARK@STORE sets), then LightGBM trees as JSON."""
    from kb_dumps.layout import StoreLayout
    from kbqa.training.ranker_data import collect, collect_sets, read_candidates
    from kbqa.training.ranker_fit import DEFAULT_ROUNDS, DEFAULT_SEEDS, fit, kfold_by_kg, top1
    from kbqa.training.ranker_prior import train_examples

    if not (args.sets or args.train_kgs or args.candidates):
        raise KBQAError("--ranker needs train questions with gold answers: --train-kgs DIR, --set BENCHMARK@STORE "
                        "(repeatable) or --candidates FILE", stage="usage")
    progress = args.format != "json"
    args.rounds = args.rounds or DEFAULT_ROUNDS  # one default, kept beside the fit (ranker_fit.py)
    files = list(args.candidates)
    if args.train_kgs:
        files.append(collect(args.train_kgs, args.work, args.work / "candidates.jsonl", limit=args.per_kg,
                             budget_s=args.budget, progress=progress))
    if args.sets:
        specs = []
        for spec in args.sets:
            name, _, store = spec.partition("@")
            if not (store or args.store):
                raise KBQAError(f"--set {spec!r}: say the store, BENCHMARK@STORE (or give --store)", stage="usage")
            specs.append((name, resolve_store(store or args.store)))
        files.append(collect_sets(specs, args.work / "candidates-sets.jsonl", limit=args.questions,
                                  budget_s=args.budget, progress=progress))
    rows = [r for f in dict.fromkeys(files) for r in read_candidates(f)]
    prior_examples = None if args.no_prior else train_examples(args.prior_train)
    report: dict[str, object] = {"questions": len(rows), "kgs": len({r["kg"] for r in rows}),
                                 "candidates": [str(f) for f in dict.fromkeys(files)]}
    seeds = args.seeds or DEFAULT_SEEDS
    if args.folds > 1:
        report["kfold"] = kfold_by_kg(rows, folds=args.folds, rounds=args.rounds, prior_examples=prior_examples,
                                      kg_cap=args.kg_cap, weights=dict(args.weight) or None, seeds=seeds)
        report["kfold"].pop("picks")
    command = "kbqa train --ranker " + " ".join(
        [f"--train-kgs {args.train_kgs} --per-kg {args.per_kg}"] * bool(args.train_kgs) +
        [f"--set {s}" for s in args.sets] + [f"--questions {args.questions}"] * bool(args.questions and args.sets) +
        [f"--candidates {c}" for c in args.candidates] +
        [f"--budget {args.budget:g} --rounds {args.rounds} --seeds {seeds}"] +
        [f"--kg-cap {args.kg_cap}"] * bool(args.kg_cap) + [f"--weight {k}={w:g}" for k, w in args.weight] +
        ["--no-prior"] * args.no_prior + [f"--prior-train {args.prior_train}"] * bool(args.prior_train))
    ranker = fit(rows, rounds=args.rounds, meta={"command": command}, prior_examples=prior_examples,
                 kg_cap=args.kg_cap, weights=dict(args.weight) or None, seeds=seeds)
    if args.out:
        out = args.out
    elif args.sets and not args.train_kgs:
        out = StoreLayout.of(resolve_store(args.sets[0].partition("@")[2] or args.store)).current / "ranker.json"
    else:
        raise KBQAError("--ranker --train-kgs: say where the ranker goes with --out FILE (KBQA_EXPLORE_WEIGHTS=FILE "
                        "then uses it)", stage="usage")
    out.parent.mkdir(parents=True, exist_ok=True)
    ranker.save(out)
    report["ranker"] = str(out)
    report["struct_prior"] = ranker.meta["struct_prior"]
    report["on_train"] = top1(ranker, rows)
    if args.format == "json":
        print_json(report)
    else:
        kf = report.get("kfold")
        if isinstance(kf, dict):
            print(f"{kf['folds']}-fold by KG over {kf['kgs']} KGs: accuracy {kf['accuracy']:.3f} (oracle "
                  f"{kf['oracle']:.3f}, {kf['mean_candidates']:.1f} candidates per question)")
        print(f"ranker {out}: {len(ranker.trees)} trees over {len(ranker.names)} features, fitted on "
              f"{len(rows)} questions of {report['kgs']} KGs; structure prior: {ranker.meta['struct_prior']}")
    return EXIT_OK
