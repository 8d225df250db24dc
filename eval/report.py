"""The reports written beside a run: summary.json, report.md (here) and report.html (`report_html.py`), and the
comparison of several finished runs. The figures come from `eval.summary`."""

from __future__ import annotations

import json
from pathlib import Path

from eval.attribution import STAGE_ORDER
from eval.report_html import html_report
from eval.summary import Summary, failure_rows, kind_cell, summary_rows, ties_sentence
from kb_dumps.json_types import JsonObject, JsonValue


def _md_table(head: list[str], rows: list[list[str]]) -> list[str]:
    esc = [[c.replace("|", "\\|").replace("\n", " ") for c in r] for r in [head, *rows]]
    return ["| " + " | ".join(esc[0]) + " |", "|" + "---|" * len(head), *("| " + " | ".join(r) + " |" for r in esc[1:])]


def markdown_report(summaries: list[Summary], results: list[JsonObject] | None = None) -> str:
    head, rows = summary_rows(summaries)
    lines = ["# kbqa evaluation report", "",
             "Figures in percent. *QALD F1*: mean per-question F1; *macro-F1 (P,R)*: F1 of macro precision and "
             "recall (GERBIL). *Strict*: a question whose gold and predicted answers are both empty counts only "
             "if the queries match. Definitions: eval/README.md.", "", "## Summary", "", *_md_table(head, rows), ""]
    lines += [f"{t}\n" for t in map(ties_sentence, summaries) if t]
    lines += ["## Failures per stage", "", *_md_table(["system", *STAGE_ORDER],
                                                     [[s.system, *(str(s.stages.get(k, 0)) for k in STAGE_ORDER)]
                                                      for s in summaries]), ""]
    g = [s for s in summaries if s.grounding]
    if g:
        kinds = sorted({k for s in g for k in (s.grounding or {})["by_kind"]})
        grows = [[s.system, *(kind_cell(s, k) for k in kinds), kind_cell(s, None)] for s in g]
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


def write_reports(out_dir: str | Path, summaries: list[Summary], results: list[JsonObject] | None = None) -> None:
    """Write summary.json (the first summary, or a list for a comparison), report.md and report.html."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    payload: JsonValue = summaries[0].to_dict() if len(summaries) == 1 else [s.to_dict() for s in summaries]
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
