"""A run in figures: `Summary` (one dataset × one system) from its results lines, and the rows every report shows
(the summary table, the wrong questions, grounding accuracy per kind) — public, shared by the Markdown and HTML
reports."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field

from eval.answer_metrics import AnswerScore, macro_average
from eval.attribution import STAGE_ORDER
from kb_dumps.json_types import JsonObject

SUMMARY_SCHEMA = "kbqa-eval-summary/1"
F1_BINS = [i / 10 for i in range(11)]  # histogram edges; the last bin holds F1 = 1


@dataclass
class Summary:
    """One run (one dataset, one system) in figures; JSON round-trip through to_dict / from_dict."""

    dataset: str
    system: str
    n_records: int
    n_usable: int
    correct: int
    accuracy: float  # fully correct / usable
    # a gold `ORDER BY … LIMIT 1` answer whose first place is shared: how many questions, and accuracy when any of
    # the tied rows counts (eval/ties.py; `accuracy` itself takes the file's row only)
    gold_tied: int = 0
    accuracy_ties_accepted: float | None = None
    unusable_reasons: dict[str, int] = field(default_factory=dict)
    query: JsonObject | None = None  # n, exact_match, triples_f1, entities_f1, properties_f1, parse_errors
    answer: JsonObject | None = None  # AnswerSummary (qald + strict) + gold sources + gold errors
    stages: dict[str, int] = field(default_factory=dict)  # failures charged to each stage
    grounding: JsonObject | None = None  # by_kind {kind: {correct, total, accuracy}}, overall
    f1_histogram: JsonObject | None = None  # {"edges", "qald": counts, "strict": counts}
    settings: JsonObject = field(default_factory=dict)
    code_version: str = ""
    out_dir: str = ""
    n_new: int = 0  # questions computed by this invocation (the rest were resumed)
    schema: str = SUMMARY_SCHEMA

    def to_dict(self) -> JsonObject:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: JsonObject) -> Summary:
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def _histogram(values: list[float]) -> list[int]:
    counts = [0] * (len(F1_BINS) - 1)
    for v in values:
        i = min(int(v * 10 + 1e-9), len(counts) - 1)
        counts[max(i, 0)] += 1
    return counts


def summarise(results: list[JsonObject], *, dataset: str, system: str, settings: JsonObject | None = None,
              code: str = "", out_dir: str = "", n_new: int = 0) -> Summary:
    """Aggregate results lines (see eval/README.md, "Runner"): usable counts, query- and answer-level
    macro averages, failures per stage, grounding accuracy per kind, the F1 histogram."""
    usable = [r for r in results if r.get("usable")]
    correct = sum(bool(r.get("correct")) for r in usable)
    s = Summary(dataset=dataset, system=system, n_records=len(results), n_usable=len(usable), correct=correct,
                accuracy=correct / len(usable) if usable else 0.0,
                unusable_reasons=dict(Counter(str(r.get("reason")) for r in results if not r.get("usable"))),
                settings=dict(settings or {}), code_version=code, out_dir=out_dir, n_new=n_new,
                gold_tied=sum(1 for r in usable if r.get("gold_tied")))
    if usable:
        s.accuracy_ties_accepted = sum(bool(r.get("correct_ties_accepted", r.get("correct"))) for r in usable) / \
            len(usable)
    qs = [r["query"] for r in usable if r.get("query")]
    if qs:
        s.query = {"n": len(qs), "exact_match": _mean([float(q["exact_match"]) for q in qs]),
                   "triples_f1": _mean([q["triples"]["f1"] for q in qs]),
                   "entities_f1": _mean([q["entities"]["f1"] for q in qs]),
                   "properties_f1": _mean([q["properties"]["f1"] for q in qs]),
                   "parse_errors": sum(1 for q in qs if (q.get("error") or {}).get("stage") == "parse")}
    scored = [r for r in usable if r.get("answer")]
    if scored:
        answers = [AnswerScore.from_dict(r["answer"]) for r in scored]
        s.answer = macro_average(answers).to_dict()
        s.answer["gold_from_file"] = sum(r.get("gold_source") == "file" for r in scored)
        s.answer["gold_from_store"] = sum(r.get("gold_source") == "store" for r in scored)
        s.f1_histogram = {"edges": F1_BINS, "qald": _histogram([a.qald.f1 for a in answers]),
                          "strict": _histogram([a.strict.f1 for a in answers])}
    gold_errors = sum(1 for r in usable if r.get("gold_error"))
    if gold_errors:
        s.answer = {**(s.answer or {}), "gold_errors": gold_errors}
    s.stages = {st: 0 for st in STAGE_ORDER}
    for r in usable:
        if r.get("stage"):
            s.stages[r["stage"]] = s.stages.get(r["stage"], 0) + 1
    kinds: dict[str, list[int]] = {}
    for r in usable:
        for kind, c in ((r.get("placeholders") or {}).get("by_kind") or {}).items():
            acc = kinds.setdefault(kind, [0, 0])
            acc[0] += int(c["correct"])
            acc[1] += int(c["total"])
    if kinds:
        tc, tt = sum(c for c, _ in kinds.values()), sum(t for _, t in kinds.values())
        s.grounding = {"by_kind": {k: {"correct": c, "total": t, "accuracy": c / t if t else 0.0}
                                   for k, (c, t) in sorted(kinds.items())},
                       "overall": {"correct": tc, "total": tt, "accuracy": tc / tt if tt else 0.0}}
    return s


def pct(x: float | None) -> str:
    """A fraction as a percentage with one decimal, or – when unknown."""
    return "–" if x is None else f"{100 * x:.1f}"


def summary_rows(summaries: list[Summary]) -> tuple[list[str], list[list[str]]]:
    """The summary table (one row per dataset × system), shared by the Markdown and HTML reports."""
    head = ["dataset", "system", "questions", "usable", "correct %", "QALD F1", "QALD macro-F1 (P,R)",
            "strict F1", "strict macro-F1 (P,R)", "both empty (unmatched)", "exact match %", "triple F1",
            "entity F1", "property F1"]
    rows = []
    for s in summaries:
        a, q = s.answer or {}, s.query or {}
        qa, st = a.get("qald") or {}, a.get("strict") or {}
        rows.append([s.dataset, s.system, str(s.n_records), str(s.n_usable), pct(s.accuracy),
                     pct(qa.get("f1")), pct(qa.get("f1_qald")), pct(st.get("f1")), pct(st.get("f1_qald")),
                     f"{a['both_empty']} ({a['both_empty_unmatched']})" if "both_empty" in a else "–",
                     pct(q.get("exact_match")), pct(q.get("triples_f1")), pct(q.get("entities_f1")),
                     pct(q.get("properties_f1"))])
    return head, rows


def ties_sentence(s: Summary) -> str | None:
    """What the tied golds of a run say (eval/ties.py), for the reports; None when no gold is tied."""
    if not s.gold_tied:
        return None
    return (f"{s.dataset} / {s.system}: {s.gold_tied} gold answers are one row of several tied on an "
            f"`ORDER BY … LIMIT 1` (the file keeps whichever its engine put first); counting any tied row as right, "
            f"correct % is {100 * (s.accuracy_ties_accepted or 0.0):.1f}.")


def failure_rows(results: list[JsonObject], cap: int = 50) -> list[list[str]]:
    """The first `cap` wrong questions: id, stage, message, question."""
    rows = []
    for r in results:
        if r.get("usable") and r.get("stage"):
            rows.append([str(r["id"]), r["stage"], str(r.get("stage_message") or "")[:200],
                         str(r.get("question") or "")[:120]])
    return rows[:cap]


def kind_cell(s: Summary, kind: str | None) -> str:
    """Grounding accuracy of one kind (None: overall) as `pct (correct/total)`, or – when not measured."""
    g = s.grounding or {}
    c = g.get("overall") if kind is None else g["by_kind"].get(kind)
    return f"{pct(c['accuracy'])} ({c['correct']}/{c['total']})" if c else "–"
