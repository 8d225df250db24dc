"""Run summaries from results lines, and the reports written beside them: summary.json and report.md."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from eval.answer_metrics import AnswerScore, macro_average
from eval.attribution import STAGE_ORDER

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
    unusable_reasons: dict[str, int] = field(default_factory=dict)
    query: dict[str, Any] | None = None  # n, exact_match, triples_f1, entities_f1, properties_f1, parse_errors
    answer: dict[str, Any] | None = None  # AnswerSummary (qald + strict) + gold sources + gold errors
    stages: dict[str, int] = field(default_factory=dict)  # failures charged to each stage
    grounding: dict[str, Any] | None = None  # by_kind {kind: {correct, total, accuracy}}, overall
    f1_histogram: dict[str, Any] | None = None  # {"edges", "qald": counts, "strict": counts}
    settings: dict[str, Any] = field(default_factory=dict)
    code_version: str = ""
    out_dir: str = ""
    n_new: int = 0  # questions computed by this invocation (the rest were resumed)
    schema: str = SUMMARY_SCHEMA

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Summary:
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def _histogram(values: list[float]) -> list[int]:
    counts = [0] * (len(F1_BINS) - 1)
    for v in values:
        i = min(int(v * 10 + 1e-9), len(counts) - 1)
        counts[max(i, 0)] += 1
    return counts


def summarise(results: list[dict[str, Any]], *, dataset: str, system: str, settings: dict[str, Any] | None = None,
              code: str = "", out_dir: str = "", n_new: int = 0) -> Summary:
    """Aggregate results lines (see eval/README.md, "Runner"): usable counts, query- and answer-level
    macro averages, failures per stage, grounding accuracy per kind, the F1 histogram."""
    usable = [r for r in results if r.get("usable")]
    correct = sum(bool(r.get("correct")) for r in usable)
    s = Summary(dataset=dataset, system=system, n_records=len(results), n_usable=len(usable), correct=correct,
                accuracy=correct / len(usable) if usable else 0.0,
                unusable_reasons=dict(Counter(str(r.get("reason")) for r in results if not r.get("usable"))),
                settings=dict(settings or {}), code_version=code, out_dir=out_dir, n_new=n_new)
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


# ---- Markdown -------------------------------------------------------------------------------------
def _pct(x: float | None) -> str:
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
        rows.append([s.dataset, s.system, str(s.n_records), str(s.n_usable), _pct(s.accuracy),
                     _pct(qa.get("f1")), _pct(qa.get("f1_qald")), _pct(st.get("f1")), _pct(st.get("f1_qald")),
                     f"{a['both_empty']} ({a['both_empty_unmatched']})" if "both_empty" in a else "–",
                     _pct(q.get("exact_match")), _pct(q.get("triples_f1")), _pct(q.get("entities_f1")),
                     _pct(q.get("properties_f1"))])
    return head, rows


def _md_table(head: list[str], rows: list[list[str]]) -> list[str]:
    esc = [[c.replace("|", "\\|").replace("\n", " ") for c in r] for r in [head, *rows]]
    return ["| " + " | ".join(esc[0]) + " |", "|" + "---|" * len(head), *("| " + " | ".join(r) + " |" for r in esc[1:])]


def failure_rows(results: list[dict[str, Any]], cap: int = 50) -> list[list[str]]:
    """The first `cap` wrong questions: id, stage, message, question."""
    rows = []
    for r in results:
        if r.get("usable") and r.get("stage"):
            rows.append([str(r["id"]), r["stage"], str(r.get("stage_message") or "")[:200],
                         str(r.get("question") or "")[:120]])
    return rows[:cap]


def markdown_report(summaries: list[Summary], results: list[dict[str, Any]] | None = None) -> str:
    head, rows = summary_rows(summaries)
    lines = ["# kbqa evaluation report", "",
             "Figures in percent. *QALD F1*: mean per-question F1; *macro-F1 (P,R)*: F1 of macro precision and "
             "recall (GERBIL). *Strict*: a question whose gold and predicted answers are both empty counts only "
             "if the queries match. Definitions: eval/README.md.", "", "## Summary", "", *_md_table(head, rows), ""]
    lines += ["## Failures per stage", "", *_md_table(["system", *STAGE_ORDER],
                                                     [[s.system, *(str(s.stages.get(k, 0)) for k in STAGE_ORDER)]
                                                      for s in summaries]), ""]
    g = [s for s in summaries if s.grounding]
    if g:
        kinds = sorted({k for s in g for k in (s.grounding or {})["by_kind"]})
        grows = [[s.system, *(_kind_cell(s, k) for k in kinds), _kind_cell(s, None)] for s in g]
        lines += ["## Grounding accuracy by kind", "", *_md_table(["system", *kinds, "overall"], grows), ""]
    for s in summaries:
        if s.unusable_reasons:
            lines += [f"## Unusable records ({s.dataset})", ""]
            lines += [f"- {n} × {reason}" for reason, n in sorted(s.unusable_reasons.items(), key=lambda x: -x[1])]
            lines.append("")
    if results:
        fr = failure_rows(results)
        if fr:
            lines += ["## Wrong questions (first 50)", "", *_md_table(["id", "stage", "evidence", "question"], fr), ""]
    return "\n".join(lines)


def _kind_cell(s: Summary, kind: str | None) -> str:
    g = s.grounding or {}
    c = g.get("overall") if kind is None else g["by_kind"].get(kind)
    return f"{_pct(c['accuracy'])} ({c['correct']}/{c['total']})" if c else "–"


def write_reports(out_dir: str | Path, summaries: list[Summary], results: list[dict[str, Any]] | None = None) -> None:
    """Write summary.json (the first summary, or a list for a comparison), report.md and report.html."""
    from eval.report_html import html_report

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    payload: Any = summaries[0].to_dict() if len(summaries) == 1 else [s.to_dict() for s in summaries]
    (out / "summary.json").write_text(json.dumps(payload, indent=2, ensure_ascii=False, default=str) + "\n",
                                      encoding="utf-8")
    (out / "report.md").write_text(markdown_report(summaries, results), encoding="utf-8")
    (out / "report.html").write_text(html_report(summaries, results), encoding="utf-8")


def compare_runs(run_dirs: list[str | Path], out_dir: str | Path) -> list[Summary]:
    """One report over several finished runs (their summary.json): datasets × systems side by side."""
    summaries = []
    for d in run_dirs:
        data = json.loads((Path(d) / "summary.json").read_text(encoding="utf-8"))
        summaries.extend(Summary.from_dict(x) for x in (data if isinstance(data, list) else [data]))
    write_reports(out_dir, summaries)
    return summaries
