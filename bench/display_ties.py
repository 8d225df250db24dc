"""Which attribute a class's display column should be when several name its items equally apart, read off the
Spider4SPARQL train KGs (never a dev KG): for each class whose candidate display columns tie (explore/propose/
display.py), how often the KG's train gold queries project each tied attribute, and how often each tie-break rule
picks the most projected one. Not a test: prints the table (JSON with --out).

  python -m bench.display_ties --train-kgs ../shared/data/spider4sparql/train_kgs --work WORK

Rules: `row order` (the engine's first row: what explore did before), `shortest name`, `letters, shortest` (values
mostly letters, then the shortest name), `shipped` (DisplayColumns._tie_key: a naming word of the language profile,
the class's own word, letters, the shortest name). The stores under --work are those `kbqa train --ranker` builds.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from kbqa.training.train_kgs import ensure_store, list_kgs, read_questions
from kbqa.translators.explore import ExploreTranslator
from kbqa.translators.explore.propose.display import LETTERS, DisplayColumns, local_name

TRIPLE = re.compile(r"\?(\w+)\s+:(\w+)\\?#([\w-]+)\s+\?(\w+)")
ONTOP = "http://valuenet/ontop/"


def projected(sparql: str) -> Counter[str]:
    """The attribute predicates whose values a gold query returns."""
    selected = set(re.findall(r"\?(\w+)", sparql.split("WHERE")[0]))
    return Counter(f"{ONTOP}{c}#{p}" for _s, c, p, o in TRIPLE.findall(sparql)
                   if o in selected and not p.startswith("ref-"))


def tied_classes(tr: ExploreTranslator) -> list[dict]:
    """Each class whose display-column candidates tie: the tied attributes in the engine's row order."""
    cols = DisplayColumns(tr.schema, tr.store, tr.ctx.language)
    out = []
    for cls in tr.schema.classes:
        tied = cols.tied(cls, timeout_s=30)
        if len(tied) > 1:
            out.append({"class": cls, "tied": tied, "shipped": cols.of(cls),
                        "letters": {p: cols.letter_share(p) for p in tied}})
    return out


RULES: dict[str, Callable[[dict], str]] = {
    "row order": lambda c: c["tied"][0],
    "shortest name": lambda c: min(c["tied"], key=lambda p: (len(local_name(p)), p)),
    "letters, shortest": lambda c: min(c["tied"], key=lambda p: (c["letters"][p] < LETTERS, len(local_name(p)), p)),
    "shipped": lambda c: c["shipped"],
}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--train-kgs", type=Path, required=True, help="a train-KG folder")
    p.add_argument("--work", type=Path, default=Path(".kbqa") / "train-kgs", help="the train KGs' stores")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    kgs = list_kgs(args.train_kgs)
    questions = read_questions(args.train_kgs, kgs)
    classes: list[dict] = []
    for kg in kgs:
        if not questions.get(kg):
            continue
        tr = ExploreTranslator(ensure_store(args.train_kgs, kg, args.work), fallback="never")
        try:
            gold: Counter[str] = Counter()
            for q in questions[kg]:
                gold.update(projected(q.sparql))
            for c in tied_classes(tr):
                c["projected"] = {p: gold[p] for p in c["tied"]}
                classes.append(c)
        finally:
            tr.close()
    scored = [c for c in classes if sum(c["projected"].values())]
    table = {"tied_classes": len(classes), "with_gold_projections": len(scored)}
    for name, rule in RULES.items():
        table[name] = {"most_projected": sum(c["projected"][rule(c)] == max(c["projected"].values()) for c in scored),
                       "share": round(sum(c["projected"][rule(c)] for c in scored)
                                      / max(1, sum(max(c["projected"].values()) for c in scored)), 3)}
    print(json.dumps(table, indent=1))
    if args.out:
        args.out.write_text(json.dumps({"table": table, "classes": classes}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
