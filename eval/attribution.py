"""Stage attribution: charge each question that is not fully correct to the first pipeline stage that failed."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from kb_dumps.json_types import JsonObject
from kb_dumps.profiles import KBProfile, get_profile
from kb_dumps.stage_errors import PIPELINE_ORDER, Stage

# Pipeline order (DESIGN "Assembly, checking, execution"); then `internal`, a bug of ours charged to no stage of
# the model's (it ranks after them: a question's first failure of the pipeline proper is charged first);
# then the answer-level verdict.
STAGE_ORDER = (*PIPELINE_ORDER, Stage.INTERNAL, "wrong-answer")
# Stages a predictor may report that are not in the order above, mapped onto it.
_STAGE_ALIASES = {"store": "execute", "usage": "translate", "ingest": "execute"}


@dataclass
class Attribution:
    """The stage a wrong question is charged to, a one-line message, and the evidence behind it."""

    stage: str
    message: str
    evidence: JsonObject = field(default_factory=dict)

    def to_dict(self) -> JsonObject:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: JsonObject) -> Attribution:
        return cls(d["stage"], d["message"], dict(d.get("evidence") or {}))


def stage_rank(stage: str) -> int:
    """Position of a stage in the pipeline order (unknown stages sort after `execute`)."""
    stage = _STAGE_ALIASES.get(stage, stage)
    return STAGE_ORDER.index(stage) if stage in STAGE_ORDER else STAGE_ORDER.index("execute")


def _first_error(errors: list[JsonObject]) -> JsonObject:
    # Stable: among errors of the same stage the one reported first wins.
    return min(errors, key=lambda e: stage_rank(str(e.get("stage", "execute"))))


def wrong_placeholders(grounding: dict[str, JsonObject] | None, placeholder_score: JsonObject | None,
                       kb: str = "wikidata") -> list[JsonObject]:
    """Wrongly grounded placeholders with their candidate lists (and whether the gold IRI was among them)."""
    if not placeholder_score:
        return []
    profile = get_profile(kb)
    out = []
    for w in placeholder_score.get("wrong", []):
        entry = dict(w)
        info = (grounding or {}).get(w["placeholder"]) or {}
        cands = info.get("candidates")
        if cands is not None:
            iris = [_full(profile, c.get("uri") or c.get("id") if isinstance(c, dict) else c) for c in cands]
            entry["candidates"] = list(cands)[:10]
            entry["gold_in_candidates"] = _full(profile, w.get("gold")) in iris
        out.append(entry)
    return out


def _full(profile: KBProfile, iri: str | None) -> str | None:
    if not iri:
        return None
    try:
        return profile.expand(str(iri))
    except ValueError:
        return str(iri)


def attribute(*, correct: bool, stage_errors: list[JsonObject] | None = None, pred_sparql: str | None = None,
              assembled: bool = False, query_score: JsonObject | None = None,
              wrong_grounding: list[JsonObject] | None = None, refused: JsonObject | None = None,
              exec_error: JsonObject | None = None, answer: JsonObject | None = None,
              answer_diff: JsonObject | None = None) -> Attribution | None:
    """The first failed stage of one question, or None when it is fully correct.

    In order: an error the predictor reported (earliest stage first); no query (`translate`); a wrong
    placeholder grounding (`ground`); a predicted query that does not parse (`assemble` when the query
    came out of the assembler — `assembled` — else `parse`); a query the store refuses before running
    it, SERVICE or an update (`validate`); a query that failed or timed out (`execute`); an empty
    result (`empty`); anything else (`wrong-answer`: answers differ, or, with no answers to compare,
    the query differs from the gold one).
    """
    if correct:
        return None
    if stage_errors:
        err = _first_error(stage_errors)
        raw = str(err.get("stage", "execute"))
        stage = _STAGE_ALIASES.get(raw, raw) if raw not in STAGE_ORDER else raw
        if stage not in STAGE_ORDER:
            stage = "execute"
        return Attribution(stage, str(err.get("message", "")), {"error": err, "errors": len(stage_errors)})
    if not pred_sparql or not pred_sparql.strip():
        return Attribution("translate", "no predicted query", {})
    if wrong_grounding:
        w = wrong_grounding[0]
        return Attribution("ground", f"placeholder [{w['placeholder']}] ({w.get('kind')}) grounded to "
                                     f"{w.get('predicted')}, gold {w.get('gold')}", {"wrong": wrong_grounding})
    qerr = (query_score or {}).get("error")
    if qerr and qerr.get("stage") == "parse" and not str(qerr.get("message", "")).startswith("gold "):
        return Attribution("assemble" if assembled else "parse", str(qerr.get("message", "")), {"error": qerr})
    if refused:
        return Attribution("validate", str(refused.get("message", "")), {"error": refused})
    if exec_error:
        return Attribution("execute", str(exec_error.get("message", "")), {"error": exec_error})
    if answer is not None:
        if answer.get("pred_empty"):
            why = ("both results are empty, but the query does not match the gold one" if answer.get("both_empty")
                   else "the predicted query returned no answer")
            return Attribution("empty", why, {"query": pred_sparql})
        q = answer.get("strict", {})
        msg = f"answers differ (P {q.get('precision', 0):.2f}, R {q.get('recall', 0):.2f}, F1 {q.get('f1', 0):.2f})"
        diff = answer_diff or {}
        for key in ("missing", "extra"):
            if diff.get(key):
                msg += f"; {key} {', '.join(diff[key][:3])}" + (" …" if len(diff[key]) > 3 else "")
        return Attribution("wrong-answer", msg, dict(answer_diff or {}))
    score = query_score or {}
    return Attribution("wrong-answer", "the predicted query differs from the gold one (query level; no answers "
                                       "to compare)", {"triples": score.get("triples"),
                                                       "entities": score.get("entities"),
                                                       "properties": score.get("properties")})
