"""The `kbqa` command: verbs from `kbqa.commands`, shared conventions, no traceback reaches a user."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

from kb_dumps.stage_errors import EXIT_BACKEND, EXIT_USAGE, KBQAError, internal_error
from kbqa.commands import VERBS

EPILOG = """examples:
  kbqa ingest --sample wikidata-mini           build the bundled sample KB (kbqa index, kbqa cases build next)
  kbqa ask "where was sasha vujačić born"      question -> checked SPARQL -> answers + step report
  kbqa compile plan.desq --explain             a DeSQ / QCompiler / PyRAG text -> SPARQL -> answers
  kbqa sparql "SELECT * WHERE { ?s ?p ?o } LIMIT 5"
  kbqa eval simplequestions-valid --predictions preds.jsonl --out runs/x
  kbqa ingest dump.nt.gz --store kb/           load your own dump

exit codes: 0 success, 1 no answer, 2 usage error, 3 bad input, 4 backend or store failure"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kbqa",
        description="Offline-first knowledge-graph question answering with checked SPARQL.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (repeat for debug)")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    for verb in VERBS:
        module = importlib.import_module(f"kbqa.commands.{verb}")
        p = module.add_parser(sub)
        p.set_defaults(_run=module.run)
    return parser


def _not_utf8(argv: list[str]) -> str | None:
    """Why an argument is not text: bytes that are not UTF-8 reach Python as lone surrogates (surrogateescape)."""
    for i, arg in enumerate(argv, 1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError as e:
            shown = arg.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")[:80]
            return (f"argument {i} ({shown!r}) is not valid UTF-8 text (at character {e.start}); "
                    "check the terminal's encoding")
    return None


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # models load from disk; never from a hub at run time
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    # The model's own weight-loading bars are noise next to ours (tqdm on real work only).
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    bad = _not_utf8(sys.argv[1:] if argv is None else argv)
    if bad is not None:  # before any verb: an embedder or a store must never see a lone surrogate
        print(f"error: [usage] {bad}", file=sys.stderr)
        return EXIT_USAGE
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING - 10 * min(args.verbose, 2), format="%(levelname)s %(message)s")
    if not getattr(args, "_run", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args._run(args) or 0)
    except KBQAError as e:
        for info in e.errors:
            print(f"error: {info}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (OSError, MemoryError) as e:
        if args.verbose:
            raise
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_BACKEND
    except Exception as exc:  # anything else escaping a verb is our bug: one line with the report hint, exit 4
        print(f"error: {internal_error(exc, f'in kbqa {args.verb}')}", file=sys.stderr)  # traceback: logged, -v
        return EXIT_BACKEND


if __name__ == "__main__":
    sys.exit(main())
