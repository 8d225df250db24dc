"""The self-contained HTML report: inline CSS, matplotlib plots embedded as base64 PNG (opens from disk, no network)."""

from __future__ import annotations

import base64
import html
import io
from typing import TYPE_CHECKING

from eval.attribution import STAGE_ORDER
from eval.summary import Summary, failure_rows, kind_cell, summary_rows, ties_sentence
from kb_dumps.json_types import JsonObject

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1200px; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .5em 0; font-size: .9em; }
th, td { border: 1px solid #ccc; padding: .3em .6em; text-align: right; }
th { background: #f2f2f2; } td:first-child, td:nth-child(2) { text-align: left; }
table.failures td { text-align: left; vertical-align: top; }
.note { color: #555; font-size: .9em; } img { max-width: 100%; margin: .5em 1em .5em 0; }
"""


def _png(fig: Figure) -> str:
    """A matplotlib Figure as a data: URI (object API + Agg canvas: no pyplot global state, thread-safe)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _figure(width: float = 6.0, height: float = 3.2) -> tuple[Figure, Axes]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    return fig, fig.add_subplot(1, 1, 1)


def _grouped_bars(ax: Axes, labels: list[str], series: list[tuple[str, list[float]]]) -> None:
    n = max(len(series), 1)
    width = 0.8 / n
    for i, (name, values) in enumerate(series):
        ax.bar([x + (i - (n - 1) / 2) * width for x in range(len(labels))], values, width, label=name)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
    if len(series) > 1:
        ax.legend(fontsize=8)


def _bar_chart(labels: list[str], series: list[tuple[str, list[float]]], title: str, *, ylabel: str | None = None,
               xlabel: str | None = None, percent: bool = False, legend: bool = False,
               size: tuple[float, float] = (6.0, 3.2)) -> str:
    """One grouped bar chart as a data: URI: a bar per series at each label (`percent`: the y axis 0-100)."""
    fig, ax = _figure(*size)
    _grouped_bars(ax, labels, series)
    if legend:
        ax.legend(fontsize=8)
    if percent:
        ax.set_ylim(0, 100)
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    ax.set_title(title)
    return _png(fig)


def stage_plot(summaries: list[Summary]) -> str:
    return _bar_chart(list(STAGE_ORDER), [(s.system, [float(s.stages.get(k, 0)) for k in STAGE_ORDER])
                                          for s in summaries],
                      "Failures per stage (first stage that failed)", ylabel="questions")


def f1_plot(summaries: list[Summary]) -> str | None:
    hs = [s for s in summaries if s.f1_histogram]
    if not hs:
        return None
    edges = hs[0].f1_histogram["edges"]  # type: ignore[index]
    labels = [f"{edges[i]:.1f}–{edges[i + 1]:.1f}" for i in range(len(edges) - 1)]
    series = []
    for s in hs:
        h = s.f1_histogram or {}
        tag = f"{s.system} " if len(hs) > 1 else ""
        series += [(tag + "QALD", [float(x) for x in h["qald"]]), (tag + "strict", [float(x) for x in h["strict"]])]
    return _bar_chart(labels, series, "Answer-F1 histogram", xlabel="answer F1 per question", ylabel="questions",
                      legend=True)


def grounding_plot(summaries: list[Summary]) -> str | None:
    gs = [s for s in summaries if s.grounding]
    if not gs:
        return None
    kinds = sorted({k for s in gs for k in (s.grounding or {})["by_kind"]})
    return _bar_chart([*kinds, "overall"],
                      [(s.system, [100 * ((s.grounding or {})["by_kind"].get(k) or {"accuracy": 0})["accuracy"]
                                   for k in kinds] + [100 * (s.grounding or {})["overall"]["accuracy"]]) for s in gs],
                      "Grounding accuracy by kind", ylabel="% correct", percent=True, size=(5, 3))


def metric_plot(summaries: list[Summary]) -> str | None:
    """F1 per dataset × system, when several runs are compared."""
    if len(summaries) < 2:
        return None
    labels = [f"{s.dataset} / {s.system}" for s in summaries]
    return _bar_chart(labels, [
        ("QALD F1", [100 * ((s.answer or {}).get("qald") or {}).get("f1", 0.0) for s in summaries]),
        ("strict F1", [100 * ((s.answer or {}).get("strict") or {}).get("f1", 0.0) for s in summaries]),
        ("exact match", [100 * (s.query or {}).get("exact_match", 0.0) for s in summaries])],
        "Metrics per dataset and system (%)", percent=True)


def _table(head: list[str], rows: list[list[str]], cls: str = "") -> str:
    e = html.escape
    out = [f'<table class="{cls}">' if cls else "<table>",
           "<tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr>"]
    out += ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in rows]
    out.append("</table>")
    return "\n".join(out)


def html_report(summaries: list[Summary], results: list[JsonObject] | None = None) -> str:
    """The whole report as one HTML page; every image is inline, nothing is fetched."""
    e = html.escape
    head, rows = summary_rows(summaries)
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             "<title>kbqa evaluation report</title>", f"<style>{_CSS}</style></head><body>",
             "<h1>kbqa evaluation report</h1>",
             '<p class="note">Figures in percent. <b>QALD F1</b>: mean per-question answer F1; <b>macro-F1 (P,R)</b>: '
             "F1 of macro precision and recall (GERBIL). <b>Strict</b>: a question whose gold and predicted answers "
             "are both empty counts only if the queries match. Definitions in eval/README.md.</p>",
             "<h2>Summary</h2>", _table(head, rows, "summary")]
    parts += [f'<p class="note">{e(t)}</p>' for t in map(ties_sentence, summaries) if t]
    for s in summaries:
        parts.append(f'<p class="note">{e(s.dataset)} / {e(s.system)}: code {e(s.code_version)}; '
                     f'settings {e(str(s.settings))}</p>')
    plots = [p for p in (metric_plot(summaries), stage_plot(summaries), f1_plot(summaries),
                         grounding_plot(summaries)) if p]
    parts.append("<h2>Failures per stage</h2>")
    parts.append(_table(["system", *STAGE_ORDER], [[s.system, *(str(s.stages.get(k, 0)) for k in STAGE_ORDER)]
                                                    for s in summaries]))
    g = [s for s in summaries if s.grounding]
    if g:
        kinds = sorted({k for s in g for k in (s.grounding or {})["by_kind"]})
        parts += ["<h2>Grounding accuracy by kind</h2>",
                  _table(["system", *kinds, "overall"],
                         [[s.system, *(kind_cell(s, k) for k in kinds), kind_cell(s, None)] for s in g])]
    parts.append("<h2>Plots</h2><div>")
    parts += [f'<img alt="plot" src="{p}">' for p in plots]
    parts.append("</div>")
    for s in summaries:
        if s.unusable_reasons:
            parts.append(f"<h2>Unusable records ({e(s.dataset)})</h2><ul>")
            parts += [f"<li>{n} × {e(reason)}</li>" for reason, n in
                      sorted(s.unusable_reasons.items(), key=lambda x: -x[1])]
            parts.append("</ul>")
    if results:
        fr = failure_rows(results, cap=200)
        if fr:
            parts += ["<h2>Wrong questions (first 200)</h2>",
                      _table(["id", "stage", "evidence", "question"], fr, "failures")]
    parts.append("</body></html>")
    return "\n".join(parts)
