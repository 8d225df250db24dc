"""The lower stage's last step: the chosen graph as DeSQ text with the URIs the search confirmed, in the
translation result the Engine compiles, with what the search did, what it linked and the top candidates (their
scores and largest feature contributions: `kbqa ask --explain`)."""

from __future__ import annotations

from collections.abc import Callable

from kb_dumps.json_types import JsonObject
from kbqa.translators.base import TranslateError, TranslationResult
from kbqa.translators.explore.context import ExploreContext
from kbqa.translators.explore.link.anchors import Anchors
from kbqa.translators.explore.lower.text import lower, verbalise, write
from kbqa.translators.explore.query import Graph

SHOW_CANDIDATES = 5


def translation(ctx: ExploreContext, best: Graph, a: Anchors, ranked: list[Graph], info: JsonObject, *,
                ranker: JsonObject, contributions: Callable[[Graph], dict[str, float]],
                chosen: JsonObject | None, seconds: float) -> TranslationResult:
    """`best` written as DeSQ; `ranker` says which ranker chose, `contributions` why (a candidate's largest
    feature contributions)."""
    text = write(best, ctx.schema, desq=True)
    confirmed = {name: iri for name, iri in lower(best, ctx.schema).mapping.items() if iri}
    details: JsonObject = {"search": info, "cues": a.cues.to_dict(),
               "confirmed": confirmed,  # placeholder -> the IRI the search's check ran with
               "linked": [lk.to_dict() for lk in (a.classes + a.predicates + a.values + a.entities)[:12]],
               "ranker": ranker,
               "candidates": [{"score": round(g.score, 4), "family": g.family, "rows": g.rows,
                               "contributions": contributions(g),
                               "verbalised": verbalise(g, ctx.schema)} for g in ranked[:SHOW_CANDIDATES]]}
    if chosen is not None:
        details["chooser"] = chosen
    # The Engine takes the confirmed IRIs as they are: what it runs is what the search checked, not a second grounding.
    return TranslationResult(text, "desq", backend="explore", seconds=seconds, details=details, confirmed=confirmed)


def no_graph_error(a: Anchors, qid: str | None) -> TranslateError:
    """The search found nothing with answers: say what it linked, so the reader sees where it went wrong."""
    linked = [f"{lk.kind} {lk.label or lk.text!r}" for lk in (a.classes + a.predicates + a.values + a.entities)[:8]]
    return TranslateError(f"explore found no query graph with answers for this question; linked: "
                          f"{', '.join(linked) or 'nothing'} (cues: {a.cues.to_dict() or 'none'})", qid=qid)
