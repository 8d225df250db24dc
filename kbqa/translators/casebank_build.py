"""`kbqa cases build`: training questions with gold SPARQL -> decompose -> cases, slots, mention prior, vectors."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rapidfuzz import fuzz

from assembler.plan import IRI, Node, Placeholder, Triple, walk
from grounding.embedder import DEFAULT_MODEL, get_embedder
from grounding.text import normalize
from kb_dumps.label_memory import LabelMemory
from kb_dumps.layout import StoreLayout
from kb_dumps.profiles import KBProfile, get_profile
from kb_dumps.stage_errors import KBQAError
from kbqa.frontends.desq import ParseResult, parse_desq
from kbqa.translators.casebank import (
    BANK_FORMAT,
    NEUTRAL,
    Case,
    CaseBank,
    Check,
    Slot,
    bank_dir,
    question_key,
)
from kbqa.translators.mentions import MentionDetector, MentionPrior, mask, open_lexicon, tokenize

if TYPE_CHECKING:
    from eval.records import Record

log = logging.getLogger(__name__)

# Sets used by default, per KB profile. Wikidata: every set with questions and gold queries (LC-QuAD 2.0 has only
# its dev set here). Generic (any other KG): the Spider4SPARQL train questions, over 146 databases that are neither
# a dev KG nor BESTIARY; their classes and predicates become placeholders labelled from the IRIs' local names, which
# ground on the store's own label memory. A dev set (BESTIARY, the six Spider dev KGs) is never a generic default;
# `--sets bestiary` still builds from it. A set being scored never answers itself: `kbqa eval` excludes its
# questions (by id and text) at retrieval, and benchmarks build banks with --exclude-set or 5-fold exclusions.
DEFAULT_SETS = {
    "wikidata": ("simplequestions-train", "wwq-train", "qald7-train", "qald9plus-train", "rubq2-dev", "lcquad2-dev",
                 "wwq-dev"),
    "generic": ("spider4sparql-train",),
}
# A gold entity counts as named by the question when one of its names matches a span this well.
SPAN_MATCH = 0.85

# gold SPARQL -> DeSQ text (or a KBQAError / ValueError saying why not); the default is decompose.
Decomposer = Callable[[str], str]


@dataclass
class BuildStats:
    """What one build did, as plain data."""

    store: str
    folder: str
    sets: list[str]
    excluded_sets: list[str]
    records: int = 0
    cases: int = 0
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> count
    excluded: int = 0  # records left out by id / question text
    slots_named: int = 0  # entity slots whose mention was found in the question
    slots: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> BuildStats:
        return cls(**d)


def default_sets(store_dir: str | Path) -> tuple[str, ...]:
    profile = StoreLayout.of(store_dir).profile_name
    return DEFAULT_SETS.get(profile, ())


def _decomposer(profile: KBProfile, memory: LabelMemory) -> Decomposer:
    from kbqa.frontends.decompose import decompose

    def run(sparql: str) -> str:
        res = decompose(sparql, profile, memory)
        if res.error or not res.desq_text:
            raise ValueError(res.error or "decompose gave no text")
        return res.desq_text

    return run


def _span_of(question: str, names: list[str]) -> list[int] | None:
    """The question span that best matches one of an entity's names (exact first, then fuzzy)."""
    toks = tokenize(question)
    wanted = {normalize(n) for n in names if n}
    wanted.discard("")
    if not wanted or not toks:
        return None
    best: tuple[float, int, int] | None = None
    for i in range(len(toks)):
        for j in range(i + 1, min(len(toks), i + 10) + 1):
            norm = " ".join(t[2] for t in toks[i:j])
            if norm in wanted:
                score = 1.0 + 0.01 * (j - i)
            else:
                score = max(fuzz.ratio(norm, w) for w in wanted) / 100.0
            if score >= SPAN_MATCH and (best is None or score > best[0]):
                best = (score, toks[i][0], toks[j - 1][1])
    return [best[1], best[2]] if best else None


def _slots_and_checks(parsed: ParseResult, question: str, memory: LabelMemory,
                      profile: KBProfile) -> tuple[list[Slot], list[Check]]:
    names_by_uri: dict[str, list[str]] = {}
    uris = [g.uri for g in parsed.grounding if g.uri and g.kind in ("entity", "class")]
    for iri, row in memory.get_many(uris).items():
        names_by_uri[iri] = [n for n in (row.label, *row.aliases) if n]
    slots = []
    for g in parsed.grounding:
        if g.kind not in ("entity", "class"):
            continue
        names = names_by_uri.get(g.uri or "", [])
        span = _span_of(question, names + [g.label])
        slots.append(Slot(g.name, g.kind, g.uri, g.label, span, span is not None or (g.kind == "entity" and not names)))
    props = {g.name: g.uri for g in parsed.grounding if g.kind == "property" and g.uri}
    checks: list[Check] = []
    slot_names = {s.name for s in slots}
    for node in walk(parsed.plan):
        if not isinstance(node, Triple):
            continue
        prop = _property_iri(node.p, props, profile)
        if prop is None:
            continue
        for term, position in ((node.s, "subject"), (node.o, "object")):
            if isinstance(term, Placeholder) and term.name in slot_names:
                chk = Check(term.name, prop, position)
                if chk not in checks:
                    checks.append(chk)
    return slots, checks


def _property_iri(p: Node, props: dict[str, str], profile: KBProfile) -> str | None:
    """The predicate IRI of a simple (non-path) triple, in its statement role."""
    if isinstance(p, IRI):
        return p.value
    if isinstance(p, Placeholder) and p.name in props:
        try:
            return profile.role_iri(profile.direct_property(props[p.name]), p.role)
        except (ValueError, KeyError):
            return None
    return None


def signature(parsed: ParseResult, slots: list[Slot]) -> str:
    """The structure of a case: fragments plus the fixed grounding (URIs of everything not re-filled)."""
    refill = {s.name for s in slots if s.refillable}
    frags = " ".join(" ".join(c.fragment.split()) for c in parsed.constraints)
    fixed = sorted(f"{g.name}={g.uri}" for g in parsed.grounding if g.name not in refill)
    return frags + " || " + " ".join(fixed) + " || " + " ".join(sorted(refill))


def make_case(rec_id: str, dataset: str, question: str, lang: str, desq_text: str, memory: LabelMemory,
              profile: KBProfile) -> Case:
    """One case from a question and its DeSQ target. Raises ValueError when the target does not parse."""
    parsed = parse_desq(desq_text)
    if not parsed.ok:
        raise ValueError("target does not parse: " + "; ".join(e.message for e in parsed.errors[:2]))
    slots, checks = _slots_and_checks(parsed, question, memory, profile)
    masked = mask(question, [(s.span[0], s.span[1]) for s in slots if s.span], NEUTRAL)
    return Case(f"{dataset}:{rec_id}:{lang}", dataset, rec_id, question, lang, masked, {"desq": desq_text}, slots,
                checks, signature(parsed, slots))


def _observe_prior(prior: MentionPrior, detector: MentionDetector, case: Case, memory: LabelMemory) -> None:
    """Which spans matched a name, and whether each was the gold entity's mention."""
    gold_spans = [(s.span[0], s.span[1]) for s in case.slots if s.span]
    toks = tokenize(case.question)
    inside = {i for i, t in enumerate(toks) if any(a <= t[0] and t[1] <= b for a, b in gold_spans)}
    matched: dict[str, bool] = {}
    for _i, _j, start, end, norm, _hits in detector.exact_spans(case.question):
        matched[norm] = matched.get(norm, False) or (start, end) in gold_spans
    prior.observe(matched, [t[2] for t in toks], inside)


def _record_cases(name: str, rec: Record, decompose_fn: Decomposer, memory: LabelMemory, profile: KBProfile,
                  languages: tuple[str, ...], stats: BuildStats) -> list[Case]:
    """The cases of one benchmark record, one per question language; `stats` counts what was skipped and why."""
    if not rec.usable or not rec.sparql:
        stats.skipped["unusable record"] = stats.skipped.get("unusable record", 0) + 1
        return []
    try:
        target = decompose_fn(rec.sparql)
    except (KBQAError, ValueError) as e:
        reason = "decompose: " + str(e).split(":")[0][:60]
        stats.skipped[reason] = stats.skipped.get(reason, 0) + 1
        return []
    cases = []
    for lang, text in rec.questions.items():
        if languages and lang not in languages or not text.strip():
            continue
        try:
            case = make_case(rec.id, name, text.strip(), lang, target, memory, profile)
        except ValueError:
            stats.skipped["target does not parse"] = stats.skipped.get("target does not parse", 0) + 1
            continue
        stats.slots += sum(1 for s in case.slots if s.kind == "entity")
        stats.slots_named += sum(1 for s in case.slots if s.kind == "entity" and s.span)
        cases.append(case)
    return cases


def build_case_bank(store_dir: str | Path, sets: Iterable[str] | None = None, *,
                    exclude_sets: Iterable[str] = (), exclude_ids: Iterable[str] = (),
                    exclude_questions: Iterable[str] = (), limit_per_set: int | None = None,
                    model: str | None = None, folder: Path | None = None, progress: bool | None = None,
                    decomposer: Decomposer | None = None, languages: tuple[str, ...] = ("en",)) -> BuildStats:
    """Build `<store>/current/cases/` from benchmark training sets (eval loaders), excluding what is scored.

    `exclude_ids` holds `dataset:id` (or bare ids); `exclude_questions` question texts. Both are
    matched before anything is embedded, so an excluded question can never be retrieved.
    """
    from tqdm import tqdm

    from eval.loaders import load_benchmark

    t0 = time.perf_counter()
    store_dir = Path(store_dir)
    layout = StoreLayout.of(store_dir)
    profile = get_profile(layout.profile_name)
    chosen = [s for s in (list(sets) if sets is not None else list(default_sets(store_dir)))
              if s not in set(exclude_sets)]
    folder = folder or bank_dir(store_dir)
    stats = BuildStats(str(store_dir), str(folder), chosen, sorted(set(exclude_sets)))
    skip_ids = set(exclude_ids)
    skip_q = {question_key(q) for q in exclude_questions}
    memory = LabelMemory(layout.labels, readonly=True)
    try:
        decompose_fn = decomposer or _decomposer(profile, memory)
        detector = MentionDetector(open_lexicon(store_dir), memory)
        prior = MentionPrior()
        cases: list[Case] = []
        records = []
        for name in chosen:
            # decompose parses every gold query anyway: no syntax check at load time
            records.extend((name, r) for r in load_benchmark(name, check_syntax=False, limit=limit_per_set))
        stats.records = len(records)
        show = sys.stderr.isatty() if progress is None else progress
        for name, rec in tqdm(records, desc="cases", unit=" rows", unit_scale=True, disable=not show):
            if rec.id in skip_ids or f"{name}:{rec.id}" in skip_ids or (
                    skip_q and any(question_key(q) in skip_q for q in rec.questions.values())):
                stats.excluded += 1
                continue
            for case in _record_cases(name, rec, decompose_fn, memory, profile, languages, stats):
                _observe_prior(prior, detector, case, memory)
                cases.append(case)
        embedder = get_embedder(model or DEFAULT_MODEL)
        vectors = embedder.encode([c.masked for c in cases], progress=show)
        meta = {"format": BANK_FORMAT, "model": embedder.name, "fingerprint": embedder.fingerprint,
                "dim": embedder.dim, "count": len(cases),
                "sets": chosen, "excluded_sets": stats.excluded_sets, "excluded_records": stats.excluded,
                "profile": profile.name, "neutral_word": NEUTRAL, "built_at": time.time()}
        bank = CaseBank(cases, None, meta, prior)
        bank.save(folder, vectors)
    finally:
        memory.close()
    stats.cases = len(cases)
    stats.seconds = time.perf_counter() - t0
    return stats
