"""`kbqa ask`: a question -> translator (explore by default) -> checked SPARQL, answers with labels, step report."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from kbqa.commands.common import (
    add_chooser_flag,
    add_endpoint_flags,
    add_format_flag,
    add_store_flag,
    add_translator_flags,
    http_url,
    question_text,
    repair_rounds,
    seconds,
    store_target,
    subparser,
    translator_choice,
)
from kbqa.frontends import FRONTENDS

if TYPE_CHECKING:
    from kb_dumps.profiles import KBProfile
    from kbqa.result import Result

EXAMPLE = """kbqa ask "where was sasha vujačić born"
  kbqa ask "who directed Titanic?" --format json
  kbqa ask "..." --translator cases                 the nearest solved questions of the store's case bank
  kbqa ask "..." --backend openai --model-url http://127.0.0.1:8080/v1 --model qwen2.5-coder-1.5b
  kbqa ask "..." --explore-chooser llama-cpp --model smollm2-135m   a model picks among explore's top 5
  kbqa ask "..." --translator replay --replay outputs.jsonl --id q17
  kbqa ask "..." --server http://127.0.0.1:8000     ask a running `kbqa serve` (no model loading here)"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparser(subparsers, "ask", "answer a question: translate, compile, run", EXAMPLE)
    p.add_argument("question", type=question_text, help="the question, in words")
    add_store_flag(p)
    add_endpoint_flags(p)
    add_translator_flags(p, "the question")
    p.add_argument("--frontend", choices=FRONTENDS.names(), default="desq", help="the language the translator writes")
    add_chooser_flag(p)
    p.add_argument("--id", default=None, help="question id to look up in the replay file")
    p.add_argument("--timeout", type=seconds, default=None, metavar="S", help="time budget per query in seconds")
    p.add_argument("--repair-rounds", type=repair_rounds, default=None, metavar="N",
                   help="times a failed model output goes back to the model with its errors (default: setting "
                        "KBQA_REPAIR_ROUNDS, else 2)")
    p.add_argument("--server", type=http_url, default=None, metavar="URL",
                   help="ask a running `kbqa serve` at URL instead of loading the store and models in this process "
                        "(its store and translator answer; --store/--translator/--backend/--model do not apply)")
    p.add_argument("--explain", action="store_true", help="also print the ranked candidates (explore), the "
                   "front-end's parts and the Plan")
    p.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS,
                   help="also print the translator's text and what it was based on")
    add_format_flag(p)
    return p


def run(args: argparse.Namespace) -> int:
    if args.server:
        return run_remote(args)
    from kb_dumps.stage_errors import KBQAError
    from kbqa.pipeline import Engine

    translator, backend = translator_choice(args)
    store, sparql_endpoint = store_target(args)
    engine = Engine.from_settings(store, sparql_endpoint=sparql_endpoint, endpoint_dialect=args.endpoint_dialect,
                                  query_timeout_s=args.timeout, repair_rounds=args.repair_rounds,
                                  translator=translator, backend=backend, model=args.model, endpoint=args.model_url,
                                  replay_path=args.replay, explore_chooser=args.explore_chooser)
    with engine:
        chosen = engine.settings.translator if engine.settings is not None else ""
        if store is None and chosen in ("cases", "explore"):
            # The case bank, label memory, schema memory and index live in a store directory; an endpoint has none.
            raise KBQAError(f"--endpoint without --store: the {chosen} translator needs a store directory "
                            f"(labels, schema{', case bank' if chosen == 'cases' else ''}); build one from the "
                            f"endpoint with `kbqa ingest --endpoint {sparql_endpoint} --store DIR` (then `kbqa "
                            "index`) and pass --store DIR, or choose --translator model", stage="usage")
        result = engine.ask(args.question, frontend=args.frontend, qid=args.id)
        return _report(result, args, engine.profile)


def _report(result: Result, args: argparse.Namespace, profile: KBProfile) -> int:
    from kbqa.commands.result_output import print_result

    return print_result(result, fmt=args.format, profile=profile, explain=args.explain,
                        verbose=bool(getattr(args, "verbose", 0)))


def run_remote(args: argparse.Namespace) -> int:
    """`--server URL`: POST the question to a running `kbqa serve` and print its Result as a local run would.
    A fresh `kbqa ask` process spends seconds importing torch and loading the embedding model and index; a
    server has them loaded, so this answers in a fraction of a second."""
    from kb_dumps.profiles import get_profile
    from kb_dumps.stage_errors import KBQAError
    from kbqa.result import Result
    from kbqa.server.client import ServerClient

    local_only = [flag for flag, value in (("--store", args.store), ("--translator", args.translator),
                                           ("--backend", args.backend),
                                           ("--model", args.model), ("--model-url", args.model_url),
                                           ("--replay", args.replay), ("--endpoint", args.sparql_endpoint),
                                           ("--explore-chooser", args.explore_chooser))
                  if value is not None]
    if local_only:
        raise KBQAError(f"{', '.join(local_only)} cannot be combined with --server: the server's own store and "
                        "translator answer (set them when starting `kbqa serve`)", stage="usage")
    client = ServerClient(args.server, timeout_s=300.0)  # the server enforces its own request deadline
    health = client.health()
    try:
        result = Result.from_dict(client.ask(args.question, args.frontend))
    except KBQAError as e:
        if e.info.stage == "usage":  # no server, or not a kbqa server: nothing was asked
            raise
        # the server refused or failed the question (e.g. 502 at translate): the same Result a local run gives
        result = Result(question=args.question, frontend=args.frontend, status="error", failed_stage=e.info.stage,
                        errors=[e.info])
    try:
        profile = get_profile(health.get("profile") or "generic")
    except KBQAError:  # a JSON profile of the server's machine: IRIs are printed in full
        profile = get_profile("generic")
    return _report(result, args, profile)
